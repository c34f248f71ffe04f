#!/usr/bin/env bash
# test_decision_sampling.sh — a flood of 50,000 dead letters (a Lua target
# that answers 400 to every record) with log.decisions = { per_second = 100 }:
# every record reaches the DLQ and is committed; no second has more than 100
# decision lines of its (topic, class, action); the metrics and the summary
# count all 50,000 exactly; the decision lines written in full plus the
# decision_summary lines' folded counts add up to the decisions taken (the
# decision metric: 50,000, or a few more when a policy call overran its
# budget on a loaded machine and was held), per second and key as well;
# every log line is JSON.
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
  policy_timeout = 1000,
  commit_interval = 200,
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
key = lambda e: (e["topic"], e["class"], e["action"])
per = collections.Counter((e["ts"][:19],) + key(e) for e in dec)
worst = max(per.values()) if per else 0
check(dec and worst <= per_second, "at most %d decision lines per second and key (most: %d, in %d seconds)"
      % (per_second, worst, len(set(e["ts"][:19] for e in dec))))
vals = {}
for line in open(metrics):
    m = re.match(r'^([a-z_]+)(\{[^}]*\})? (\S+)$', line.strip())
    if m: vals[m.group(1)] = vals.get(m.group(1), 0) + float(m.group(3))
decisions = int(vals.get("errgate_decision_duration_seconds_count", -1))
folded = sum(k["folded"] for s in summ for k in s["keys"])
check(summ and len(dec) + folded == decisions, "%d full lines + %d folded in %d summaries = %d decisions"
      % (len(dec), folded, len(summ), decisions))
dlq_folded = sum(k["folded"] for s in summ for k in s["keys"] if k["action"] == "dlq")
check(sum(1 for e in dec if e["action"] == "dlq") + dlq_folded == n, "the dlq decisions add up to %d" % n)
check(all(s["folded"] == sum(k["folded"] for k in s["keys"]) and s["logged"] == sum(k["logged"] for k in s["keys"])
          and s["per_second"] == per_second for s in summ), "each summary's totals are the sum of its keys")
# per second and key: the summary's logged count is the number of full lines
bad = [(s["second"], k["class"]) for s in summ for k in s["keys"]
       if k["logged"] != per[(s["second"][:19], k["topic"], k["class"], k["action"])]]
check(not bad, "each summary's logged count per key equals that second's full lines (%s)" % bad[:3])
check(len(set(s["second"] for s in summ)) == len(summ), "one summary per second")
summary = [e for e in lines if e.get("event") == "summary"][-1]
check(summary["dlq"] == n and summary["failures"] == decisions, "the summary line counts %d dead letters, %d failures"
      % (summary["dlq"], summary["failures"]))
check(int(vals.get("errgate_records_dead_lettered_total", -1)) == n and decisions >= n,
      "metrics are exact: %s dead-lettered, %d decisions" % (vals.get("errgate_records_dead_lettered_total"), decisions))
PY
while IFS='|' read -r res desc; do
  if [ "$res" = ok ]; then ok "$desc"; else not_ok "$desc"; fi
done <"$T/oracle.out"
