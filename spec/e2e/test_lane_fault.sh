#!/usr/bin/env bash
# test_lane_fault.sh — a lane write that fails is never a silent loss: after
# the lane producer has written to it, the DLQ topic goes missing for 10 s
# (the broker's topic-fault with UNKNOWN_TOPIC_OR_PART) while records flow. During the fault no offset past a record waiting for its DLQ write is
# committed, the failure is logged and retried with back-off, the partition
# pauses; afterwards every record lands, 0 lost.
source "$(dirname "$0")/lib.sh"
N=2000

start_broker --topic src:4 --topic src.dlq:4 --topic src.quarantine:4
start_handler
# a later `kafka` key wins in a Lua table: short produce and missing-topic timeouts
write_config "$T/gw.lua" lf none 'kafka = { ["session.timeout.ms"] = 6000, ["message.timeout.ms"] = 2000, ["topic.metadata.propagation.max.ms"] = 1000 },'
start_gateway gw "$T/gw.lua"
# warm-up: the lane producer has written to the DLQ before the fault
gen_records 200 "ok:50 permanent:50" | sed 's/"id":"r/"id":"w/' | produce src
wait_drained lf src 60 || die "warm-up did not drain"
"$EG" offsets -b "$BOOTSTRAP" -g lf src >"$T/warm.txt"
broker_ctl topic-fault src.dlq 10 UNKNOWN_TOPIC_OR_PART >/dev/null || die "topic-fault refused"
fault_end=$((SECONDS + 9)) # stop sampling a second early: recovery is quick
gen_records "$N" "ok:80 permanent:10 semantic:10" | produce src

: >"$T/samples.txt"
while [ "$SECONDS" -lt "$fault_end" ]; do
  "$EG" offsets -b "$BOOTSTRAP" -g lf src >>"$T/samples.txt" 2>/dev/null
  sleep 0.5
done
wait_drained lf src 60 && ok "after the fault every record is committed" || not_ok "lag $(lag lf src) after the fault"
stop_gateway "$GW_PID"
check "gateway exits 0 (exit $RC)" [ "$RC" = 0 ]

dump src "$T/src.json"
# the first DLQ-bound (permanent) offset of each partition after the warm-up
$PY - "$T/src.json" "$T/samples.txt" "$T/warm.txt" <<'PY' && ok "during the fault no committed offset passed a record waiting for its DLQ write" || not_ok "a committed offset passed a record waiting for its DLQ write"
import json, sys
warm = {int(f[1]): int(f[3]) for f in (l.split() for l in open(sys.argv[3])) if f[0] == "src"}
first = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["offset"] >= warm[r["partition"]] and json.loads(r["payload"])["mode"] == "permanent":
        first[r["partition"]] = min(first.get(r["partition"], 1 << 62), r["offset"])
bad = samples = 0
for line in open(sys.argv[2]):
    f = line.split()
    if f[0] != "src": continue
    samples += 1
    p, committed = int(f[1]), int(f[2])
    if p in first and committed > first[p]:
        print("# partition %d committed %d past DLQ-bound offset %d" % (p, committed, first[p])); bad += 1
print("# %d samples, first DLQ-bound offsets %s" % (samples, first))
sys.exit(1 if bad or samples < 8 else 0)
PY
check "lane write failures were logged with back-off" grep -q '"event":"lane_write_failed".*"lane":"src.dlq".*"retry_in_ms"' "$T/gw.err"
check "the failing lane paused its partitions" grep -q '"event":"pause".*"reasons":"[a-z,]*lane' "$T/gw.err"
check "recovery was logged" grep -q '"event":"lane_recovered"' "$T/gw.err"
check "lane failures counted in the summary" grep -q '"event":"summary".*"lane_failures":[1-9]' "$T/gw.err"
account lf 4 "$T/gw.err"
