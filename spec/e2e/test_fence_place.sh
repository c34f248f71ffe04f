#!/usr/bin/env bash
# test_fence_place.sh — under source.fence = "ladder+dlq", a follower waits for
# the followers before it to reach the DLQ as long as they may still come
# (the place bound counts from the fence's last progress, 3 rung delays and
# 60 s), on the embedded broker, rungs 1s and 10s:
#   p1 climbs to rung 10s; p2 follows it onto rung 10s 5 s later; an
#   operator pauses the rung topic (ctl override --pause, 50 s TTL) before
#   p2 is fetched (p1, fetched already, comes due and is dead-lettered: the
#   key moves to the DLQ); p3, produced 44 s after p1's dead letter (past
#   the former bound, 3 rung delays and 10 s from the move, which sent p3 to
#   the DLQ at once, ahead of p2), must wait on the rung for p2; after the
#   pause's expiry p2, then p3, reach the DLQ: p1 p2 p3 in offset order, no
#   fence_place_timeout, the wait counted (errgate_fence_place_waits_total).
#   About 80 s.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ladder_lib.sh"
POLICY="$ROOT/spec/fixtures/policies/ladder_1s_2s.lua"
start_broker $(ladder_topics pw 1s 10s)
echo "place-token" >"$T/token"
handler_at h1
sed 's/"1s", "2s"/"1s", "10s"/' "$POLICY" >"$T/ladder_1s_10s.lua"
ladder_config "$T/gpw.lua" gpw pw key "$T/ladder_1s_10s.lua" "" \
  "admin = { listen = \"127.0.0.1:0\", token_file = \"$T/token\" },"
sed -i 's/ordering = "key",/ordering = "key", fence = "ladder+dlq",/' "$T/gpw.lua"
start_gateway gpw "$T/gpw.lua"
ADDR=$(admin_addr gpw) || die "no admin endpoint: $(tail -3 "$T/gpw.err")"
ctl() { "$EG" ctl --admin "http://$ADDR" --token-file "$T/token" "$@"; }
wait_for 40 grep -q '"event":"assign".*pw\[' "$T/gpw.err" || die "no assignment"
# decisions of the log: from TOPIC (exact) with ACTION (a pattern) and REASON; at_least: N or more
decided() { grep -c "\"event\":\"decision\",\"topic\":\"$1\",.*\"action\":\"$2\",\"reason\":\"$3\"" "$T/gpw.err"; }
at_least() { [ "$(decided "$1" "$2" "$3")" -ge "$4" ]; }

printf 'p\t{"id":"p1","mode":"transient-3"}\n' | produce pw
wait_for 20 at_least pw.retry.1s ladder transient 1 ||
  die "p1 did not climb to rung 10s"
sleep 5
printf 'p\t{"id":"p2","mode":"ok"}\n' | produce pw
wait_for 10 at_least pw ladder fenced 1 ||
  die "p2 did not follow p1 onto the rung"
out=$(ctl override set hold10 --pause pw.retry.10s --ttl 50s --reason "rung held" 2>&1); rc=$?
check "the rung topic paused while p1 waits on it ($rc: $out)" exits_with "$rc" 0 "override hold10 set" "$out"
wait_for 15 at_least pw.retry.10s dlq exhausted 1 ||
  die "p1 was not dead-lettered"
moved=$(date +%s)
sleep 2
check "p2 did not come back from the paused rung ($(decided pw.retry.10s dlq fenced) placed)" [ "$(decided pw.retry.10s dlq fenced)" = 0 ]
sleep $((moved + 44 - $(date +%s)))
printf 'p\t{"id":"p3","mode":"ok"}\n' | produce pw
wait_for 10 at_least pw '[a-z]*' fenced 2 ||
  not_ok "p3 was not decided"
check "p3, produced $(($(date +%s) - moved)) s after p1's dead letter, waits on the rung for p2 ($(decided pw ladder fenced) waited, $(decided pw dlq fenced) placed at once)" \
  [ "$(decided pw ladder fenced)/$(decided pw dlq fenced)" = 2/0 ]
wait_for 40 at_least pw.retry.10s dlq fenced 2 ||
  not_ok "p2 and p3 were not placed after the pause"
order=$(kcat -C -b "$BOOTSTRAP" -t pw.dlq -e -q 2>/dev/null | grep -o '"id":"p[0-9]"' | cut -d'"' -f4 | tr '\n' ' ')
check "p1, p2, p3 reached pw.dlq in offset order ($order)" [ "$order" = "p1 p2 p3 " ]
check "no follower was placed ahead of one before it (fence_place_timeout)" \
  bash -c "! grep -q fence_place_timeout '$T/gpw.err'"
waits=$(curl -s -m 5 "http://$ADDR/metrics" | awk '$1=="errgate_fence_place_waits_total" {print $2}')
check "the wait is counted (errgate_fence_place_waits_total $waits)" [ "${waits:-0}" -ge 1 ]
stop_gateway "$GW_PID"
check "the gateway exits 0 ($RC)" [ "$RC" = 0 ]
exit $FAILED
