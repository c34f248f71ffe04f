#!/usr/bin/env bash
# test_lane_partition.sh — a lane record goes to its source's partition
# number (DESIGN §4) also when the record has no key (librdkafka's sticky
# partitioner would otherwise place those anywhere), and to partition %
# count when the lane has fewer partitions.
source "$(dirname "$0")/lib.sh"

start_broker --topic src:8 --topic src.dlq:8 --topic src.quarantine:3
start_handler
for p in 0 1 2 3 4 5 6 7; do
  for i in $(seq 1 15); do echo "{\"id\":\"p$p-$i\",\"mode\":\"permanent\"}"; echo "{\"id\":\"q$p-$i\",\"mode\":\"semantic\"}"; done |
    kcat -P -b "$BOOTSTRAP" -t src -p "$p"
done
write_config "$T/gw.lua" lp none
start_gateway gw "$T/gw.lua"
wait_drained lp src 60 && ok "all records committed" || not_ok "lag $(lag lp src)"
stop_gateway "$GW_PID"
dump src.dlq "$T/dlq.json"
dump src.quarantine "$T/q.json"
check "null-key DLQ records land on their source partition" $PY -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
h = lambda r: {r["headers"][i]: r["headers"][i + 1] for i in range(0, len(r["headers"]), 2)}
bad = [r for r in rows if r["key"] is not None or int(h(r)["original.partition"]) != r["partition"]]
print("# %d DLQ records, %d misplaced" % (len(rows), len(bad)))
sys.exit(0 if len(rows) == 120 and not bad else 1)' "$T/dlq.json"
check "on a lane with fewer partitions: partition % count" $PY -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
h = lambda r: {r["headers"][i]: r["headers"][i + 1] for i in range(0, len(r["headers"]), 2)}
bad = [r for r in rows if int(h(r)["original.partition"]) % 3 != r["partition"]]
print("# %d quarantine records, %d misplaced" % (len(rows), len(bad)))
sys.exit(0 if len(rows) == 120 and not bad else 1)' "$T/q.json"
