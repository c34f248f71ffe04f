#!/usr/bin/env bash
# test_metrics.sh — the admin endpoint's /metrics during an end-to-end run:
# the exposition passes `promtool check metrics`, and its counters equal the
# run's accounting (the summary log line and the lane topics' record counts).
# Payloads carry a marker that must never appear in a log line, and every
# log line parses as JSON.
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"
N=3000
MARKER=PAYLOAD-MARKER-5c1e

command -v promtool >/dev/null || die "promtool is missing (Debian package prometheus)"
start_broker --topic src:4 --topic src.dlq:4 --topic src.quarantine:4
start_handler
write_config "$T/gw.lua" mt key 'kafka = { ["session.timeout.ms"] = 6000, ["statistics.interval.ms"] = 500 },
  admin = { listen = "127.0.0.1:0" },'
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin_listening line: $(tail -5 "$T/gw.err")"
check "admin_listening gives a real port ($ADDR)" [ "${ADDR##*:}" != 0 ]
gen_records "$N" "ok:70 transient-1:6 transient-9:2 permanent:6 explicit-permanent-E42:1 semantic:4 json-semantic-bad_state:2 duplicate:5 ratelimit-0:2" | sed "s/}\$/,\"note\":\"$MARKER\"}/" | produce src
wait_drained mt src 120 || not_ok "lag $(lag mt src) after 120 s"

# the statistics arrive every 500 ms: wait until they show the drained partitions
lag_zero() { [ "$(curl -s "http://$ADDR/metrics" | grep -c '^errgate_consumer_lag{topic="src",partition="[0-3]"} 0$')" = 4 ]; }
wait_for 20 lag_zero
admin_get "$ADDR" /metrics >"$T/metrics.txt"
check "GET /metrics answers 200" [ "$(http_code)" = 200 ]
if promtool check metrics <"$T/metrics.txt" >"$T/promtool.txt" 2>&1; then ok "promtool check metrics passes"
else not_ok "promtool check metrics: $(head -5 "$T/promtool.txt")"; fi
for m in errgate_records_processed_total errgate_records_failed_total errgate_records_retried_total \
         errgate_records_retry_exhausted_total errgate_records_dead_lettered_total errgate_records_quarantined_total \
         errgate_records_ignored_total errgate_lane_write_failures_total errgate_decision_duration_seconds \
         errgate_target_request_duration_seconds errgate_breaker_state errgate_inflight_records \
         errgate_committed_offset_lag errgate_consumer_lag errgate_policy_info errgate_policy_reloads_total; do
  grep -q "^# TYPE $m " "$T/metrics.txt" || { not_ok "metric $m is missing"; continue; }
done
check "every metric family is exposed" true
check "consumer lag from librdkafka statistics is 0 on the 4 partitions" \
  [ "$(grep -c '^errgate_consumer_lag{topic="src",partition="[0-3]"} 0$' "$T/metrics.txt")" = 4 ]
check "committed-offset lag is 0 per partition after draining" \
  [ "$(grep -c '^errgate_committed_offset_lag{topic="src",partition="[0-3]"} 0$' "$T/metrics.txt")" = 4 ]
check "in-flight records gauge is 0 after draining" grep -q '^errgate_inflight_records 0$' "$T/metrics.txt"
check "policy info names the default policy" grep -q '^errgate_policy_info{name="default",version="[^"]*"} 1$' "$T/metrics.txt"
admin_get "$ADDR" /lanes >"$T/lanes.json"
stop_gateway "$GW_PID"
check "gateway exits 0 (exit $RC)" [ "$RC" = 0 ]

dump src.dlq "$T/dlq.json"
dump src.quarantine "$T/q.json"
$PY - "$T/metrics.txt" "$T/gw.err" "$T/dlq.json" "$T/q.json" "$T/lanes.json" "$N" <<'PY' && ok "metrics equal the summary line and the lane topics" || not_ok "metrics disagree with the accounting"
import json, re, sys
metrics, log, dlq, q, lanes, n = sys.argv[1:7]
vals = {}
for line in open(metrics):
    if line.startswith("#") or not line.strip(): continue
    m = re.match(r'^([a-z_]+)(\{[^}]*\})? (\S+)$', line.strip())
    vals.setdefault(m.group(1), []).append((m.group(2) or "", float(m.group(3))))
def total(name, pat=""):
    return int(sum(v for l, v in vals.get(name, []) if pat in l))
s = [json.loads(l) for l in open(log) if '"event":"summary"' in l][-1]
ndlq = sum(1 for _ in open(dlq)); nq = sum(1 for _ in open(q))
lane = {x["topic"]: x for x in json.load(open(lanes))["lanes"]}
checks = [
    ("received", total("errgate_records_received_total", 'topic="src"'), s["received"]),
    ("received = N", s["received"], int(n)),
    ("processed", total("errgate_records_processed_total", 'topic="src"'),
     s["succeeded_first"] + s["succeeded_retry"] + s["dlq"] + s["quarantined"] + s["ignored"]),
    ("succeeded", total("errgate_records_succeeded_total"), s["succeeded_first"] + s["succeeded_retry"]),
    ("failed", total("errgate_records_failed_total"), s["failures"]),
    ("retried", total("errgate_records_retried_total"), s["retries"]),
    ("held", total("errgate_records_held_total"), s["holds"]),
    ("dead-lettered = summary", total("errgate_records_dead_lettered_total"), s["dlq"]),
    ("dead-lettered by source topic = summary", total("errgate_records_dead_lettered_by_topic_total", 'topic="src"'),
     s["dlq"]),
    ("recovered = succeeded after a failure (no rungs here)", total("errgate_records_recovered_total", 'topic="src"'),
     s["succeeded_retry"]),
    ("poison = DLQ and quarantine records with one attempt", total("errgate_records_poison_total", 'topic="src"'),
     sum(1 for f in (dlq, q) for l in open(f)
         if dict(zip(*[iter(json.loads(l).get("headers") or [])] * 2)).get("errgate.attempts") == "1")),
    ("poison > 0", min(total("errgate_records_poison_total"), 1), 1),
    ("dead-lettered = DLQ topic", total("errgate_records_dead_lettered_total", 'lane="src.dlq"'), ndlq),
    ("quarantined = summary", total("errgate_records_quarantined_total"), s["quarantined"]),
    ("quarantined = topic", total("errgate_records_quarantined_total", 'lane="src.quarantine"'), nq),
    ("ignored", total("errgate_records_ignored_total"), s["ignored"]),
    ("fallbacks", total("errgate_policy_fallbacks_total"), s["policy_errors"]),
    ("lane failures", total("errgate_lane_write_failures_total"), s["lane_failures"]),
    ("exhausted > 0", min(total("errgate_records_retry_exhausted_total"), 1), 1),
    ("decisions observed", total("errgate_decision_duration_seconds_count"), s["failures"]),
    ("target attempts observed", total("errgate_target_request_duration_seconds_count"),
     s["succeeded_first"] + s["succeeded_retry"] + s["failures"]),
    ("/lanes dlq written", lane["src.dlq"]["written"], ndlq),
    ("/lanes quarantine written", lane["src.quarantine"]["written"], nq),
    ("/lanes pending", lane["src.dlq"]["pending"] + lane["src.quarantine"]["pending"], 0),
]
bad = 0
for name, got, want in checks:
    if got != want: print("# %s: metrics %s, expected %s" % (name, got, want)); bad += 1
print("# summary: %s" % {k: s[k] for k in ("received", "failures", "retries", "dlq", "quarantined", "ignored")})
sys.exit(1 if bad else 0)
PY
check "every log line is JSON and none carries the payload marker" json_lines_ok "$T/gw.err" "$MARKER"
check "decision lines carry the issue's fields" $PY -c '
import json, sys
need = {"ts","level","event","topic","partition","offset","key_hash","value_bytes","class","code","action","attempt","lane","policy","latency_ms"}
lines = [json.loads(l) for l in open(sys.argv[1]) if "\"event\":\"decision\"" in l]
sys.exit(0 if lines and all(need <= set(d) for d in lines) else 1)' "$T/gw.err"
check "the payloads did carry the marker (DLQ records keep them)" grep -q "$MARKER" "$T/dlq.json"
