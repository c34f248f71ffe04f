#!/usr/bin/env bash
# test_decision_sampling.sh — a flood of 50,000 dead letters (a Lua target
# that answers 400 to every record) with log.decisions = { per_second = 100 }:
# every record reaches the DLQ and is committed; no second has more than 100
# decision lines of its (topic, class, action); the metrics and the summary
# count all 50,000 exactly; the decision lines written in full plus the
# decision_summary lines' folded counts add up to the 50,000 decisions, per
# second as well; every log line is JSON.
source "$(dirname "$0")/lib.sh"
N=${SAMPLING_RECORDS:-50000}
PER_SECOND=100

start_broker --topic src:8 --topic src.dlq:8 --topic src.quarantine:8
gen_records "$N" "permanent:1" | produce src
echo 'return function(record) return { status = 400, message = "flood" } end' >"$T/reject.lua"
cat >"$T/gw.lua" <<CFG
return {
  group = "flood",
  source = { topics = { "src" }, ordering = "none" },
  target = { lua = "$T/reject.lua" },
  policy = "$ROOT/policies/default.lua",
  commit_interval_ms = 200,
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
  admin = { listen = "127.0.0.1:0" },
  log = { decisions = { per_second = $PER_SECOND } },
}
CFG
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin endpoint: $(tail -3 "$T/gw.err")"
if wait_drained flood src 240; then ok "all $N dead letters committed (lag 0)"; else not_ok "lag $(lag flood src) after 240 s"; fi
admin_get "$ADDR" /metrics >"$T/metrics.txt"
stop_gateway "$GW_PID"
check "SIGTERM: gateway exits 0 (got $RC)" [ "$RC" = 0 ]
json_lines_ok "$T/gw.err" NO-MARKER-IN-THIS-TEST || not_ok "a log line is not JSON"

# the oracle prints "ok|DESC" or "bad|DESC" per check
$PY - "$T/gw.err" "$T/metrics.txt" "$N" "$PER_SECOND" >"$T/oracle.out" <<'PY' || not_ok "the oracle failed: $(tail -3 "$T/oracle.out")"
import collections, json, re, sys
log, metrics, n, per_second = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
lines = [json.loads(l) for l in open(log, encoding="utf-8")]
def check(cond, desc):
    print("%s|%s" % ("ok" if cond else "bad", desc))
dec = [e for e in lines if e.get("event") == "decision"]
summ = [e for e in lines if e.get("event") == "decision_summary"]
per = collections.Counter((e["ts"][:19], e["topic"], e["class"], e["action"]) for e in dec)
worst = max(per.values()) if per else 0
check(dec and worst <= per_second, "at most %d decision lines per second and key (most: %d, in %d seconds)"
      % (per_second, worst, len(per)))
check(all((e["topic"], e["class"], e["action"]) == ("src", "permanent", "dlq") for e in dec),
      "one key: src / permanent / dlq")
folded = sum(k["folded"] for s in summ for k in s["keys"])
check(summ and len(dec) + folded == n, "%d full lines + %d folded in %d summaries = %d decisions"
      % (len(dec), folded, len(summ), n))
check(all(s["folded"] == sum(k["folded"] for k in s["keys"]) and s["logged"] == sum(k["logged"] for k in s["keys"])
          and s["per_second"] == per_second for s in summ), "each summary's totals are the sum of its keys")
# per second: the summary's logged count is the number of full lines of that second
full = collections.Counter(e["ts"][:19] for e in dec)
bad = [s["second"] for s in summ if s["logged"] != full[s["second"][:19]]]
check(not bad, "each summary's logged count equals that second's full lines (%s)" % bad[:3])
check(len(set(s["second"] for s in summ)) == len(summ), "one summary per second")
summary = [e for e in lines if e.get("event") == "summary"][-1]
check(summary["dlq"] == n and summary["failures"] == n, "the summary line counts %d dead letters, %d failures"
      % (summary["dlq"], summary["failures"]))
vals = {}
for line in open(metrics):
    m = re.match(r'^([a-z_]+)(\{[^}]*\})? (\S+)$', line.strip())
    if m: vals[m.group(1)] = vals.get(m.group(1), 0) + float(m.group(3))
check(int(vals.get("errgate_records_dead_lettered_total", -1)) == n and
      int(vals.get("errgate_decision_duration_seconds_count", -1)) == n,
      "metrics are exact: %s dead-lettered, %s decisions" % (vals.get("errgate_records_dead_lettered_total"),
                                                              vals.get("errgate_decision_duration_seconds_count")))
PY
while IFS='|' read -r res desc; do
  if [ "$res" = ok ]; then ok "$desc"; else not_ok "$desc"; fi
done <"$T/oracle.out"
