#!/usr/bin/env bash
# test_overrides_rung.sh — `ctl override set NAME --rung R --delay D`
# re-times ladder rung R while in force: with the ladder 2s / 4s / 8s and an
# override giving rung 2s a delay of 20 s, failing records land on the 2s
# rung with errgate.not-before 20 s after their failure and the
# errgate.override header naming the override, and none has climbed to the
# 4s rung 8 s later (without the override it would after 2 s). A rung the
# policy does not name is refused, and so are --delay without --rung and
# --action with --rung.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ladder_lib.sh"
start_broker $(ladder_topics src 2s 4s 8s)
handler_at h1
echo "rung-token" >"$T/token"
ladder_config "$T/gw.lua" rgr src none "$ROOT/spec/fixtures/policies/ladder_2s_4s_8s.lua" "" \
  "admin = { listen = \"127.0.0.1:0\", token_file = \"$T/token\" },"
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin endpoint: $(tail -3 "$T/gw.err")"
ctl() { "$EG" ctl --admin "http://$ADDR" --token-file "$T/token" "$@"; }
wait_for 40 grep -q '"event":"assign".*src\[' "$T/gw.err" || die "no assignment"

out=$(ctl override set slow2 --rung 9m --delay 20s --ttl 1h --reason r 2>&1); rc=$?
check "an unknown rung is refused: 400, exit 1 ($rc: $out)" exits_with "$rc" 1 "HTTP 400.*unknown rung '9m'" "$out"
out=$(ctl override set slow2 --class transient --delay 20s --action hold --ttl 1h --reason r 2>&1); rc=$?
check "--delay without --rung: usage error ($rc: $out)" exits_with "$rc" 2 "--delay goes with --rung only" "$out"
out=$(ctl override set slow2 --rung 2s --delay 20s --action hold --ttl 1h --reason r 2>&1); rc=$?
check "--action with --rung: usage error ($rc: $out)" exits_with "$rc" 2 "--action goes with" "$out"
out=$(ctl override set slow2 --rung 2s --ttl 1h --reason r 2>&1); rc=$?
check "--rung without --delay: usage error ($rc: $out)" exits_with "$rc" 2 "--rung needs --delay" "$out"

out=$(ctl override set slow2 --rung 2s --delay 20s --ttl 2m --reason "provider asks for patience" 2>&1); rc=$?
check "rung override set: exit 0 ($rc: $out)" exits_with "$rc" 0 "override slow2 set: delay 20000 ms until" "$out"
out=$(ctl --json override list)
check "listed with its delay ($out)" grep -q '"name":"slow2","match":"rung","value":"2s","delay_ms":20000' <<<"$out"

printf 'k%d\t{"id":"o%d","mode":"outage-600000"}\n' 1 1 2 2 3 3 | produce src
wait_for 20 bash -c "[ \$(kcat -C -b $BOOTSTRAP -t src.retry.2s -e -q 2>/dev/null | wc -l) -ge 3 ]" ||
  not_ok "the records did not reach the 2s rung"
sleep 8
dump src.retry.2s "$T/r2.json"
dump src.retry.4s "$T/r4.json"
$PY - "$T/r2.json" >"$T/r2.check" <<'PY'
import json, sys, datetime
ok = True
for line in open(sys.argv[1]):
    m = json.loads(line)
    h = dict(zip(m["headers"][0::2], m["headers"][1::2]))
    nb = int(h.get("errgate.not-before", "0"))
    failed = datetime.datetime.strptime(h["error.timestamp"].replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
    wait = nb - int(failed.timestamp() * 1000)
    good = 18000 <= wait <= 22000 and h.get("errgate.override") == "slow2"
    ok &= good
    print(m["offset"], "not-before - failure =", wait, "ms, override", h.get("errgate.override"), "ok" if good else "BAD")
sys.exit(0 if ok else 1)
PY
check "rung records carry errgate.not-before = failure + 20 s and errgate.override ($(tr '\n' ';' <"$T/r2.check"))" [ $? = 0 ]
check "3 records on the 2s rung ($(wc -l <"$T/r2.json"))" [ "$(wc -l <"$T/r2.json")" = 3 ]
check "none climbed to the 4s rung 8 s later ($(wc -l <"$T/r4.json"))" [ "$(wc -l <"$T/r4.json")" = 0 ]
check "the decision log names the override" \
  grep -q '"event":"decision".*"action":"ladder".*"delay_ms":20000.*"override":"slow2"' "$T/gw.err"
stop_gateway "$GW_PID"
check "the gateway exits 0 ($RC)" [ "$RC" = 0 ]
exit $FAILED
