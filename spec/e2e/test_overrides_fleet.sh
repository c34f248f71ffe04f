#!/usr/bin/env bash
# test_overrides_fleet.sh — overrides are the whole group's: two gateway
# instances in one group (one partition of src each). An override set
# through instance A's admin endpoint is written to the audit topic and is
# in force on B within a few seconds (B's /overrides, and records B decides
# get its action and the errgate.override lane header); it survives a
# restart of B (re-read from the audit topic before B consumes); an override
# with a short TTL expires on its own on both, each logging it; a clear sent
# to B removes the override from A; a dlq-guard reset sent to B reaches A.
# The audit topic holds every change.
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"

start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2
start_handler
echo "fleet-token" >"$T/token"
ADMIN="admin = { listen = \"127.0.0.1:0\", token_file = \"$T/token\" },"
LANES='lanes = { dlq = "{topic}.dlq", quarantine = "{topic}.quarantine" },'
write_config "$T/gw.lua" flt none "$ADMIN $LANES"
start_gateway gwa "$T/gw.lua"; A_PID=$GW_PID
start_gateway gwb "$T/gw.lua"; B_PID=$GW_PID
A=$(admin_addr gwa) || die "no admin endpoint on A: $(tail -3 "$T/gwa.err")"
B=$(admin_addr gwb) || die "no admin endpoint on B: $(tail -3 "$T/gwb.err")"
ctl() { local addr=$1; shift; "$EG" ctl --admin "http://$addr" --token-file "$T/token" "$@"; }
assigned() { grep -q '"event":"assign".*src\[' "$T/$1.err"; }
wait_for 40 assigned gwa && wait_for 40 assigned gwb || die "both instances did not get a partition of src"

out=$(ctl "$A" override set q-perm --class permanent --action quarantine --ttl 10m \
  --reason "provider misreports 400" --by ana 2>&1); rc=$?
check "override set through A: exit 0 ($rc: $out)" exits_with "$rc" 0 "override q-perm set: quarantine until" "$out"
listed_on() { ctl "$1" override list 2>/dev/null | grep -q "^$2 "; }
wait_for 5 listed_on "$B" q-perm
check "B lists it within 5 s ($(ctl "$B" override list 2>&1))" listed_on "$B" q-perm
check "B logged it as set by ana" grep -q '"event":"override_set".*"name":"q-perm".*"by":"ana"' "$T/gwb.err"

# records on both partitions: each instance decides its own partition's
printf 'k%d\t{"id":"p%d","mode":"permanent"}\n' 1 1 2 2 3 3 4 4 5 5 6 6 | produce src
wait_drained flt src 40 || not_ok "src not drained"
for g in gwa gwb; do
  check "$g decided with the override (decision log names it)" \
    grep -q '"event":"decision".*"action":"quarantine".*"reason":"override".*"override":"q-perm"' "$T/$g.err"
done
dump src.quarantine "$T/q.json"
dump src.dlq "$T/dlq.json"
nq=$(wc -l <"$T/q.json"); nd=$(wc -l <"$T/dlq.json")
check "all 6 quarantined, none dead-lettered ($nq, $nd)" [ "$nq" = 6 -a "$nd" = 0 ]
$PY - "$T/q.json" >"$T/q.check" <<'PY'
import json, sys
parts = set()
for line in open(sys.argv[1]):
    m = json.loads(line)
    h = dict(zip(m["headers"][0::2], m["headers"][1::2]))
    if h.get("errgate.override") != "q-perm":
        print("no errgate.override on", m["partition"], m["offset"], h); sys.exit(1)
    parts.add(h.get("original.partition"))
print("partitions", sorted(parts))
sys.exit(0 if len(parts) == 2 else 1)
PY
check "every quarantined record carries errgate.override: q-perm, from both partitions ($(cat "$T/q.check"))" [ $? = 0 ]

# B restarts: it re-reads the audit topic before it consumes
stop_gateway "$B_PID"
check "B stops with 0 ($RC)" [ "$RC" = 0 ]
mv "$T/gwb.err" "$T/gwb1.err"
start_gateway gwb "$T/gw.lua"; B_PID=$GW_PID
B=$(admin_addr gwb) || die "no admin endpoint on the restarted B"
check "the restarted B restored the override from the audit topic" \
  grep -q '"event":"override_restored".*"name":"q-perm"' "$T/gwb.err"
check "the restarted B lists it" listed_on "$B" q-perm
restored_line=$(grep -n '"event":"override_restored"' "$T/gwb.err" | head -1 | cut -d: -f1)
start_line=$(grep -n '"event":"start"' "$T/gwb.err" | head -1 | cut -d: -f1)
check "... before it subscribed to anything (line $restored_line < line ${start_line:-none}, its start line)" \
  bash -c '[ -n "$1" ] && [ -n "$2" ] && [ "$1" -lt "$2" ]' _ "$restored_line" "$start_line"

# a short TTL expires on its own, on both instances
out=$(ctl "$A" override set short --code http_418 --action ignore --ttl 6s --reason "brief" 2>&1); rc=$?
check "a 6 s override is set through A ($rc: $out)" exits_with "$rc" 0 "override short set" "$out"
wait_for 5 listed_on "$B" short
check "B lists it too" listed_on "$B" short
for g in gwa gwb; do
  wait_for 20 grep -q '"event":"override_expired".*"name":"short"' "$T/$g.err"
  check "$g logged its expiry once" [ "$(grep -c '"event":"override_expired".*"name":"short"' "$T/$g.err")" = 1 ]
done
check "A no longer lists it" bash -c "! $EG ctl --admin http://$A override list | grep -q '^short '"

# a clear sent to B ends it on A
out=$(ctl "$B" override clear q-perm 2>&1); rc=$?
check "clear through B: exit 0 ($rc: $out)" exits_with "$rc" 0 "override q-perm cleared" "$out"
gone_from() { ! ctl "$1" override list 2>/dev/null | grep -q "^$2 "; }
wait_for 5 gone_from "$A" q-perm
check "A no longer lists it within 5 s" gone_from "$A" q-perm
check "A logged the clear" grep -q '"event":"override_cleared".*"name":"q-perm"' "$T/gwa.err"
check "errgate_overrides_active is 0 on A" bash -c "curl -s http://$A/metrics | grep -q '^errgate_overrides_active 0'"

# a dlq-guard reset sent to B is the group's too
out=$(USER=sre ctl "$B" dlq-guard reset 2>&1); rc=$?
check "dlq-guard reset through B: exit 0 ($rc: $out)" exits_with "$rc" 0 "dlq-guard reset" "$out"
wait_for 5 grep -q '"event":"dlq_guard_reset".*by sre' "$T/gwa.err"
check "A applied it (logged, by sre)" grep -q '"event":"dlq_guard_reset".*by sre' "$T/gwa.err"

# the audit topic: one record per change, keyed GROUP/NAME
kcat -C -b "$BOOTSTRAP" -t errgate.audit -e -q -f '%k %s\n' >"$T/audit.txt" 2>/dev/null
check "the audit topic holds the set, the short one, the clear and the reset ($(wc -l <"$T/audit.txt") records)" \
  bash -c "grep -q '^flt/!dlq-guard-reset {\"group\":\"flt\",\"event\":\"dlq-guard-reset\",\"by\":\"sre\",\"at\":\"20' '$T/audit.txt' && grep -q '^flt/q-perm {\"group\":\"flt\",\"name\":\"q-perm\",\"spec\":\"class=permanent&action=quarantine\",\"reason\":\"provider misreports 400\",\"by\":\"ana\",\"at\":\"[0-9T:.Z-]*\",\"expires_at\":\"[0-9T:.Z-]*\",\"cleared_at\":null}' '$T/audit.txt' &&
    grep -q '^flt/q-perm .*\"cleared_at\":\"20' '$T/audit.txt' && grep -q '^flt/short .*\"spec\":\"code=http_418&action=ignore\"' '$T/audit.txt'"

stop_gateway "$A_PID"; RA=$RC
stop_gateway "$B_PID"
check "both exit 0 ($RA, $RC)" [ "$RA" = 0 -a "$RC" = 0 ]
exit $FAILED
