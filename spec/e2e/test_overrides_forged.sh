#!/usr/bin/env bash
# test_overrides_forged.sh — records produced straight to the audit topic
# with a plain producer (no token, no admin endpoint) are checked before
# they are applied (issue 28): an override until the year 9999 (above the
# TTL cap), a pause of the whole source with such a TTL, a rung delay of
# ~3 million years, an `at` an hour in the future, a key that is not
# GROUP/NAME of the record, a record of another group under this group's
# key, and bytes that are not a record are each refused, logged and counted
# (errgate_control_records_refused_total{topic,reason}), never applied: the
# gateway keeps deciding by its policy. 300 forged overrides that pass those
# checks cannot keep the operator's own `ctl override set` out (no 409: an
# unsigned override is evicted for it); the operator's path still works.
# The audit reader's out-of-range reset goes to the earliest offset; what it
# reads again is counted, changes nothing and is not refused twice.
# (Embedded broker only: Fetch errors are injected.)
source "$(dirname "$0")/lib.sh"

start_broker --topic src:1 --topic src.dlq:1
start_handler
echo "forge-token" >"$T/token"
write_config "$T/gw.lua" fgd partition "admin = { listen = \"127.0.0.1:0\", token_file = \"$T/token\" },"
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin endpoint: $(tail -3 "$T/gw.err")"
wait_for 40 grep -q '"event":"assign".*src\[' "$T/gw.err" || die "no assignment"
ctl() { "$EG" ctl --admin "http://$ADDR" --token-file "$T/token" "$@"; }
dlq_count() { kcat -C -b "$BOOTSTRAP" -t src.dlq -e -q 2>/dev/null | wc -l; }
refused() { metric "$ADDR" errgate_control_records_refused_total "reason=\"$1\""; }
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
NOW=$(date +%s)
AT=$(iso "$NOW"); IN1H=$(iso $((NOW + 3600))); IN2H=$(iso $((NOW + 7200)))
rec() { # rec GROUP NAME SPEC AT EXPIRES: one audit record value
  printf '{"group":"%s","name":"%s","spec":"%s","reason":"forged","by":"mallory","at":"%s","expires_at":"%s","cleared_at":null}' \
    "$1" "$2" "$3" "$4" "$5"
}
{
  printf 'fgd/forever\t%s\n' "$(rec fgd forever 'class=permanent&action=ignore' "$AT" 9999-12-31T00:00:00Z)"
  printf 'fgd/stopall\t%s\n' "$(rec fgd stopall 'pause=src' "$AT" 9999-12-31T00:00:00Z)"
  printf 'fgd/slow\t%s\n' "$(rec fgd slow 'rung=30s&delay=1095000000d' "$AT" "$IN1H")"
  printf 'fgd/ahead\t%s\n' "$(rec fgd ahead 'class=permanent&action=ignore' "$IN1H" "$IN2H")"
  printf 'fgd/innocent\t%s\n' "$(rec fgd sneaky 'class=permanent&action=ignore' "$AT" "$IN1H")"
  printf 'fgd/other\t%s\n' "$(rec other other 'class=permanent&action=ignore' "$AT" "$IN1H")"
  printf 'fgd/junk\tnot a record\n'
} | produce errgate.audit
wait_for 10 bash -c "[ \"\$(curl -s http://$ADDR/metrics | awk '/^errgate_control_records_refused_total/{s+=\$2} END{print s+0}')\" -ge 7 ]"
check "a gateway without control_key_file says once that its control topics are unauthenticated" \
  bash -c "[ \$(grep -c '\"event\":\"control_unauthenticated\"' $T/gw.err) = 1 ]"
check "an expiry in the year 9999 and a pause of the whole source: refused for the TTL cap ($(refused ttl_cap))" \
  [ "$(refused ttl_cap)" = 2 ]
check "a rung delay of ~3 million years: refused ($(refused delay_cap))" [ "$(refused delay_cap)" = 1 ]
check "an at an hour ahead: refused ($(refused future))" [ "$(refused future)" = 1 ]
check "a key that is not GROUP/NAME, a group that is not its key's: refused ($(refused key_mismatch))" \
  [ "$(refused key_mismatch)" = 2 ]
check "bytes that are not a record: refused ($(refused malformed))" [ "$(refused malformed)" = 1 ]
check "each refusal is logged with its reason" \
  grep -q '"event":"control_record_refused".*"topic":"errgate.audit".*"reason":"ttl_cap"' "$T/gw.err"
out=$(ctl override list 2>&1)
check "none of them is in force ($out)" grep -q "no overrides in force" <<<"$out"
check "none was logged as set" bash -c "! grep -q '\"event\":\"override_\(set\|restored\)\"' $T/gw.err"
{ for i in 1 2 3; do printf 'k%d\t{"id":"p%d","mode":"permanent"}\n' "$i" "$i"; done; } | produce src
wait_drained fgd src 30 || not_ok "src not drained (paused by a forged record?)"
check "the policy still decides: 3 permanent failures in the DLQ, none ignored ($(dlq_count))" [ "$(dlq_count)" = 3 ]

# 300 forged overrides that pass the checks fill the table (no key: nothing is signed)
for i in $(seq 1 300); do
  printf 'fgd/f%d\t%s\n' "$i" "$(rec fgd "f$i" 'code=nothing_real&action=hold' "$AT" "$IN1H")"
done | produce errgate.audit
wait_for 10 bash -c "[ \"\$(curl -s http://$ADDR/metrics | awk '/^errgate_overrides_active /{print \$2}')\" = 256 ]"
check "the table holds at most 256 ($(metric "$ADDR" errgate_overrides_active))" \
  [ "$(metric "$ADDR" errgate_overrides_active)" = 256 ]
out=$(ctl override set mine --class permanent --action hold --ttl 10m --reason "real incident" --by ana 2>&1); rc=$?
check "the operator's own set is not refused for a table full of forged entries ($rc: $out)" \
  exits_with "$rc" 0 "override mine set: hold until" "$out"
check "it is in force" bash -c "$EG ctl --admin http://$ADDR override list | grep -q '^mine '"
check "an unsigned override was evicted for it, logged" grep -q '"event":"override_evicted"' "$T/gw.err"
# an out-of-range position of the audit reader re-reads the topic from its
# earliest offset (auto.offset.reset): nothing written meanwhile is skipped,
# and what is read again changes nothing (no log line per record: the ~310
# records of this topic would exceed the log's rate limit and hide the rest)
reread() { grep -q '"event":"control_reread","msg":"errgate.audit\[' "$T/gw.err"; }
nref=$(curl -s "http://$ADDR/metrics" | awk '/^errgate_control_records_refused_total/{s+=$2} END{print s+0}')
nmine=$(grep -c '"event":"override_[a-z]*".*"name":"mine"' "$T/gw.err")
# the injected errors go to whichever client fetches next (the gateway's
# consumers share the broker): inject again until the audit reader met one
for round in 1 2 3 4 5 6; do
  broker_ctl request-errors Fetch 3 OFFSET_OUT_OF_RANGE >/dev/null || die "request-errors refused"
  wait_for 8 reread && break
done
check "after an out-of-range fetch the audit topic is re-read from its start, said once per partition" reread
wait_for 20 bash -c "[ \"\$(curl -s http://$ADDR/metrics | awk '/^errgate_control_records_reread_total/{print \$2}')\" -ge 300 ]"
check "the records read again are counted ($(metric "$ADDR" errgate_control_records_reread_total) >= 300)" \
  [ "$(metric "$ADDR" errgate_control_records_reread_total)" -ge 300 ]
check "mine is still in force" bash -c "$EG ctl --admin http://$ADDR override list | grep -q '^mine '"
check "and was not set, replaced or restored again: read again, it is no change" \
  [ "$(grep -c '"event":"override_[a-z]*".*"name":"mine"' "$T/gw.err")" = "$nmine" ]
check "the forged records read again are not counted as refused twice" \
  [ "$(curl -s "http://$ADDR/metrics" | awk '/^errgate_control_records_refused_total/{s+=$2} END{print s+0}')" = "$nref" ]
out=$(ctl override clear mine 2>&1); rc=$?
check "and cleared by the operator ($rc: $out)" exits_with "$rc" 0 "override mine cleared" "$out"
stop_gateway "$GW_PID"
check "the gateway exits 0 ($RC)" [ "$RC" = 0 ]
exit $FAILED
