#!/usr/bin/env bash
# test_kafka_topics.sh — on a real cluster the gateway creates the topics it
# writes (gw_topics.c) before it subscribes: a source of 8 partitions whose
# DLQ, quarantine and rung topics do not exist gets them with 8 partitions
# each (the harness's auto-creation would give 4), not compacted, with
# lanes.retention as their retention.ms, and a
# dead letter of source partition 7 lands on DLQ partition 7; an inbox gets
# its state topic (accepted loss) compacted with the inbox's partition
# count. The embedded broker has no Admin API: there the topics are
# auto-created on first write (one info line says so).
# spec/run.sh: kafka only
source "$(dirname "$0")/lib.sh"
[ "$BROKER" = kafka ] || die "a real-cluster test: run it with BROKER=kafka"
KA() { $PY "$ROOT/spec/e2e/kafka_admin.py" "$1" "$BOOTSTRAP" "${@:2}"; }

start_broker --topic src:8 --topic inbox:3
start_handler
write_config "$T/gw.lua" topics none 'lanes = { retention = "3d" },'
sed -i "s|policy = .*|policy = \"$ROOT/examples/payments/policy.lua\",|" "$T/gw.lua"
start_gateway gw "$T/gw.lua"
wait_for 60 grep -q '"event":"assign"' "$T/gw.err" || die "no assignment: $(tail -3 "$T/gw.err")"
rungs=$(sed -n 's/.*"event":"rung","msg":"\([^ ]*\) .*/\1/p' "$T/gw.err" | sort -u)
check "the payments ladder names rung topics ($(echo $rungs))" [ "$(echo "$rungs" | wc -w)" -ge 2 ]
for t in src.dlq src.quarantine $rungs; do
  n=$(KA partitions "$t"); pol=$(KA config "$t" cleanup.policy); ret=$(KA config "$t" retention.ms)
  check "$t created by the gateway with its source's 8 partitions, cleanup.policy=$pol, retention.ms=$ret (got $n)" \
    eval '[ "$n" = 8 ] && [ "$pol" = delete ] && [ "$ret" = 259200000 ] &&
      grep -q "\"event\":\"lane_topic_created\",\"msg\":\"$t: 8 partitions, retention.ms=259200000\"" "$T/gw.err"'
done
echo '{"id":"p7","mode":"permanent"}' | kcat -P -b "$BOOTSTRAP" -t src -p 7
wait_drained topics src 60 || not_ok "lag $(lag topics src)"
dump src.dlq "$T/dlq.json"
check "the dead letter of src[7] is on src.dlq[7]" $PY -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if len(rows) == 1 and rows[0]["partition"] == 7 else 1)' "$T/dlq.json"
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]

cat >"$T/inbox.lua" <<CFG
return {
  group = "triage",
  source = { topics = { "inbox" }, inbox = "auto" },
  policy = "$FIXTURES/inbox_triage.lua",
  commit_interval = 200,
  lanes = { retention = "3d" },
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
}
CFG
start_gateway ib "$T/inbox.lua"
wait_for 60 grep -q '"event":"assign"' "$T/ib.err" || die "inbox: no assignment: $(tail -3 "$T/ib.err")"
n=$(KA partitions inbox.state); pol=$(KA config inbox.state cleanup.policy); ret=$(KA config inbox.state retention.ms)
check "the inbox's state topic created compacted with the inbox's 3 partitions (got $n, $pol)" \
  eval '[ "$n" = 3 ] && [ "$pol" = compact ]'
check "and without lanes.retention: its items' states are kept (retention.ms $ret, the cluster's)" [ "$ret" != 259200000 ]
stop_gateway "$GW_PID"
check "the inbox gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
exit $FAILED
