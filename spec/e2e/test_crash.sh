#!/usr/bin/env bash
# test_crash.sh — at-least-once across crashes: the gateway is killed with
# SIGKILL at random moments (5 times) while it works through mixed records,
# and restarted each time. In the end every record has exactly one kind of
# outcome, none is missing, committed offsets equal end offsets; duplicate
# deliveries are reported (at-least-once allows them, loss is never allowed).
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"
N=${CRASH_RECORDS:-8000}
KILLS=5

start_broker --topic src:8 --topic src.dlq:8 --topic src.quarantine:8
start_handler
# slow-20 keeps the gateway busy long enough to be killed mid-work
gen_records "$N" "slow-20:70 transient-1:6 permanent:6 semantic:6 duplicate:6 ok:6" | produce src
write_config "$T/gw.lua" crash key
sed -i "s/concurrency = 16/concurrency = 8/" "$T/gw.lua"
# a killed member's partitions go to the restarted one after about twice the
# session timeout: 3 s instead of lib.sh's 6 s halves each restart's wait
sed -i 's/\["session.timeout.ms"\] = 6000/["session.timeout.ms"] = 3000/' "$T/gw.lua"
grep -q '"session.timeout.ms"\] = 3000' "$T/gw.lua" || die "session.timeout.ms not set in gw.lua"
RANDOM=4242
for i in $(seq 1 $KILLS); do
  start_gateway "gw$i" "$T/gw.lua"
  wait_for 60 grep -q '"event":"assign"' "$T/gw$i.err" || die "run $i: no assignment"
  sleep "$((RANDOM % 3 + 1)).$((RANDOM % 10))"
  kill -9 "$GW_PID"; wait "$GW_PID" 2>/dev/null
  diag "run $i killed after $(grep -c '"event":"decision"' "$T/gw$i.err") decisions, lag now $(lag crash src)"
done
check "the last kill still left work to do (lag > 0)" [ "$(lag crash src)" != 0 ]
start_gateway gw9 "$T/gw.lua"
if wait_drained crash src 240; then ok "after $KILLS kills and restarts every record is committed"; else not_ok "lag $(lag crash src)"; fi
stop_gateway "$GW_PID"
check "the final gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
"$EG" offsets -b "$BOOTSTRAP" -g crash src >"$T/offsets.txt"
check "committed offsets = end offsets on all 8 partitions" \
  awk '$1=="src" { n++; if ($3 != $4) bad++ } END { exit !(n == 8 && !bad) }' "$T/offsets.txt"
account crash 8 "$T/gw*.err"
