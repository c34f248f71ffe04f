#!/usr/bin/env bash
# test_oversized.sh — a record too large for its lane is never lost: the DLQ
# write fails (MSG_SIZE_TOO_LARGE), is logged and retried with back-off, its
# partition pauses, and nothing is committed past it; other partitions go on.
source "$(dirname "$0")/lib.sh"

start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2
start_handler
big=$(head -c 6000 /dev/zero | tr '\0' 'x')
printf 'a\t{"id":"big","mode":"permanent","pad":"%s"}\n' "$big" | kcat -P -b "$BOOTSTRAP" -t src -p 0 -K $'\t'
for i in 1 2 3; do printf 'a%d\t{"id":"p0-%d","mode":"ok"}\n' $i $i; done | kcat -P -b "$BOOTSTRAP" -t src -p 0 -K $'\t'
for i in 1 2 3; do printf 'b%d\t{"id":"p1-%d","mode":"ok"}\n' $i $i; done | kcat -P -b "$BOOTSTRAP" -t src -p 1 -K $'\t'
# the lane producer's requests are capped at 4 KB (the consumer fetches as usual)
write_config "$T/gw.lua" big partition 'kafka = { ["message.max.bytes"] = 4096, ["session.timeout.ms"] = 6000 },'
start_gateway gw "$T/gw.lua"
check "the oversized DLQ write fails with MSG_SIZE_TOO_LARGE, logged with back-off" \
  wait_for 30 grep -q '"event":"lane_write_failed".*"offset":0,.*"error":"MSG_SIZE_TOO_LARGE"' "$T/gw.err"
check "it is retried (a third attempt is logged)" wait_for 10 grep -q '"event":"lane_write_failed".*"lane_attempt":3' "$T/gw.err"
check "its partition is paused for the failing lane" grep -q '"event":"pause","topic":"src","partition":0,"reasons":"[a-z,]*lane' "$T/gw.err"
check "the other partition still flows" wait_for 20 bash -c "[ \$(grep -c 'ok p1-' '$T/ok.log') = 3 ]"
"$EG" offsets -b "$BOOTSTRAP" -g big src >"$T/off.txt"
check "nothing is committed past the oversized record" awk '$1=="src" && $2==0 && $3 > 0 {bad=1} END {exit bad}' "$T/off.txt"
check "the other partition is committed" grep -q '^src 1 3 3 0$' "$T/off.txt"
stop_gateway "$GW_PID"
check "SIGTERM still exits 0 (exit $RC)" [ "$RC" = 0 ]
