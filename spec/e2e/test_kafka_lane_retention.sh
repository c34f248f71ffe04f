#!/usr/bin/env bash
# test_kafka_lane_retention.sh — dead letters must outlast the time people
# take to act on them (issue 32 item 3): with lanes.replay_window (or
# lanes.approval_window) a lanes.retention shorter than the window is a
# config error, the lanes the gateway creates get lanes.retention, and a DLQ
# or quarantine lane that exists already and keeps records for less than
# the window is warned about at start (lane_retention_short, read back with
# DescribeConfigs), once per such lane, while a long enough one is not. The
# embedded broker has no Admin API (nothing to read back): a real cluster.
# spec/run.sh: kafka only
source "$(dirname "$0")/lib.sh"
[ "$BROKER" = kafka ] || die "a real-cluster test: run it with BROKER=kafka"
KA() { $PY "$ROOT/spec/e2e/kafka_admin.py" "$1" "$BOOTSTRAP" "${@:2}"; }

start_broker --topic short:2 --topic long:2
$PY - "$BOOTSTRAP" <<'PY' || die "cannot create short.dlq"
import sys
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for f in a.create_topics([NewTopic("short.dlq", 2, config={"retention.ms": "60000"})]).values():
    f.result(20)
PY
start_handler
cfg() {
  cat >"$1" <<CFG
return {
  group = "ret",
  source = { topics = { "short", "long" }, ordering = "none" },
  target = { http = { url = "$HANDLER_URL", timeout = 3000 } },
  policy = "$ROOT/policies/default.lua",
  lanes = { $2 },
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
}
CFG
}
cfg "$T/bad.lua" 'retention = "30m", replay_window = "1h"'
out=$("$EG" run -c "$T/bad.lua" 2>&1); rc=$?
check "lanes.retention shorter than lanes.replay_window is a config error (exit $rc)" \
  exits_with "$rc" 2 'lanes.retention (1800 s) is shorter than lanes.replay_window (3600 s)' "$out"
cfg "$T/bad2.lua" 'retention = "1h", approval_window = "2d", replay_window = "1h"'
out=$("$EG" run -c "$T/bad2.lua" 2>&1); rc=$?
check "and shorter than lanes.approval_window (exit $rc)" exits_with "$rc" 2 'shorter than lanes.approval_window' "$out"

cfg "$T/gw.lua" 'retention = "2h", replay_window = "1h"'
start_gateway gw "$T/gw.lua"
wait_for 60 grep -q '"event":"assign"' "$T/gw.err" || die "no assignment: $(tail -3 "$T/gw.err")"
for t in short.quarantine long.dlq long.quarantine; do
  ret=$(KA config "$t" retention.ms)
  check "$t created with lanes.retention (retention.ms $ret)" [ "$ret" = 7200000 ]
done
check "short.dlq (60 s, made before) is warned about once: lane_retention_short" \
  bash -c '[ "$(grep -c "\"event\":\"lane_retention_short\"" "$1")" = 1 ] &&
           grep -q "\"event\":\"lane_retention_short\",\"msg\":\"short.dlq keeps records for 60000 ms (retention.ms), less than lanes.replay_window (3600000 ms)" "$1"' _ "$T/gw.err"
stop_gateway "$GW_PID"
check "the gateway runs on and exits 0 (exit $RC)" [ "$RC" = 0 ]

# without a window nothing is read back or warned about
cfg "$T/nowin.lua" 'retention = "2h"'
start_gateway gw2 "$T/nowin.lua"
wait_for 60 grep -q '"event":"assign"' "$T/gw2.err" || die "no assignment: $(tail -3 "$T/gw2.err")"
stop_gateway "$GW_PID"
check "without lanes.replay_window or approval_window: no lane_retention_short" \
  bash -c '! grep -q lane_retention_short "$1"' _ "$T/gw2.err"
echo "1..$TESTNO"
exit $FAILED
