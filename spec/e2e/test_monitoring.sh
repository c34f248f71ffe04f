#!/usr/bin/env bash
# test_monitoring.sh — what errgate ships for monitoring:
# deploy/prometheus/errgate-alerts.yml passes `promtool check rules`, its
# unit tests pass `promtool test rules`, every alert has a test where it
# fires and one where it does not, and the tests can fail (each alert's
# threshold pushed out of reach makes them fail); deploy/grafana/errgate.json
# is valid JSON and every metric its queries use is exposed by a live
# gateway's /metrics (with a spill journal, so the spill gauges exist); the
# alerts' other source, `errgate dlq stats --prometheus`, passes `promtool
# check metrics` and counts a lane's items per state.
source "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || die "promtool is missing (Debian package prometheus)"
RULES="$ROOT/deploy/prometheus/errgate-alerts.yml"
TESTS="$ROOT/deploy/prometheus/errgate-alerts.test.yml"
DASH="$ROOT/deploy/grafana/errgate.json"

if promtool check rules "$RULES" >"$T/check.out" 2>&1; then ok "promtool check rules: $(grep -o '[0-9]* rules found' "$T/check.out")"
else not_ok "promtool check rules: $(tail -3 "$T/check.out")"; fi
if promtool test rules "$TESTS" >"$T/test.out" 2>&1; then ok "promtool test rules passes"
else not_ok "promtool test rules: $(head -20 "$T/test.out")"; fi
check "every alert has a firing and a non-firing test" $PY - "$RULES" "$TESTS" <<'PY'
import sys, yaml
rules = [r["alert"] for g in yaml.safe_load(open(sys.argv[1]))["groups"] for r in g["rules"] if "alert" in r]
fires, quiet = set(), set()
for t in yaml.safe_load(open(sys.argv[2]))["tests"]:
    for a in t.get("alert_rule_test", []):
        (fires if a.get("exp_alerts") else quiet).add(a["alertname"])
missing = [a for a in rules if a not in fires or a not in quiet]
print("# %d alerts; without both cases: %s" % (len(rules), missing))
sys.exit(0 if rules and not missing else 1)
PY
# each alert made unable to fire (its expression ANDed with a selector that
# matches nothing): the unit tests must notice
$PY - "$RULES" "$T" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
for gi, g in enumerate(doc["groups"]):
    for i, r in enumerate(g["rules"]):
        d = yaml.safe_load(open(sys.argv[1]))
        rr = d["groups"][gi]["rules"][i]
        rr["expr"] = "(%s) and on() vector(0) > 1" % rr["expr"]
        yaml.safe_dump(d, open("%s/mut-%s.yml" % (sys.argv[2], rr["alert"]), "w"))
PY
silenced=0; caught=0
for m in "$T"/mut-*.yml; do
  silenced=$((silenced + 1))
  sed "s|errgate-alerts.yml|$m|" "$TESTS" >"$T/mut-test.yml"
  promtool test rules "$T/mut-test.yml" >/dev/null 2>&1 || caught=$((caught + 1))
done
check "the unit tests fail for each alert that cannot fire ($caught of $silenced)" \
  eval '[ "$silenced" -ge 12 ] && [ "$caught" = "$silenced" ]'

check "the dashboard is valid JSON" $PY -c 'import json, sys; json.load(open(sys.argv[1]))' "$DASH"

start_broker --topic src:2 --topic src.dlq:2
start_handler
mkdir -p "$T/spill"
write_config "$T/gw.lua" mon none 'admin = { listen = "127.0.0.1:0" }, lanes = { spill = { dir = "'"$T/spill"'" } },'
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin endpoint: $(tail -3 "$T/gw.err")"
gen_records 20 "ok:1 permanent:1" | produce src
wait_drained mon src 60 || not_ok "the gateway did not drain src"
admin_get "$ADDR" /metrics >"$T/metrics.txt"
check "the live gateway's /metrics answers" [ "$(http_code)" = 200 ]
check "every metric the dashboard's queries use is on /metrics" $PY - "$DASH" "$T/metrics.txt" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
exprs += [v["query"]["query"] for v in d["templating"]["list"] if isinstance(v.get("query"), dict)]
used = set()
for e in exprs:
    used |= set(re.findall(r"\b(errgate_[a-z_]+)", e))
exposed = set(re.findall(r"^# TYPE (\S+) (\S+)", open(sys.argv[2]).read(), re.M))
names = {n for n, _ in exposed}
hist = {n for n, t in exposed if t == "histogram"}
def known(m):
    if m in names: return True
    for suf in ("_bucket", "_sum", "_count"):
        if m.endswith(suf) and m[: -len(suf)] in hist: return True
    return False
missing = sorted(m for m in used if not known(m))
print("# %d queries, %d metrics used, missing: %s" % (len(exprs), len(used), missing))
sys.exit(0 if len(used) >= 30 and not missing else 1)
PY
check "every metric the alert rules read is on /metrics (but dlq stats' own), the ratio's two with a topic label" \
  $PY - "$RULES" "$T/metrics.txt" <<'PY'
import re, sys, yaml
exprs = [r["expr"] for g in yaml.safe_load(open(sys.argv[1]))["groups"] for r in g["rules"]]
used = set(m for e in exprs for m in re.findall(r"\b(errgate_[a-z_]+)", e)) - {"errgate_dlq_oldest_item_timestamp_seconds"}
text = open(sys.argv[2]).read()
missing = sorted(m for m in used if not re.search(r"^# TYPE %s " % m, text, re.M))
topic = all(re.search(r'^%s\{topic="src"\} ' % m, text, re.M)
            for m in ("errgate_records_dead_lettered_by_topic_total", "errgate_records_received_total"))
print("# %d metrics used by the rules, missing: %s" % (len(used), missing))
sys.exit(0 if not missing and topic and "errgate_dead_letter_ratio_threshold" in used else 1)
PY
stop_gateway "$GW_PID"

# the pending-approval alert's metric: dlq stats --prometheus
printf 'k1\tv1\nk2\tv2\n' | kcat -P -b "$BOOTSTRAP" -t src.dlq -K $'\t' -H errgate.approval=required -H error.class=permanent 2>/dev/null
"$EG" dlq stats src.dlq --prometheus >"$T/dlq.prom" 2>"$T/dlq.err"; rc=$?
check "dlq stats --prometheus exits 0 (rc $rc)" [ "$rc" = 0 ]
if promtool check metrics <"$T/dlq.prom" >"$T/dlqcheck.out" 2>&1; then ok "promtool check metrics accepts it"
else not_ok "promtool check metrics: $(head -3 "$T/dlqcheck.out")"; fi
n_open=$(( $(kcat -C -b "$BOOTSTRAP" -t src.dlq -e -q -f 'x\n' 2>/dev/null | wc -l) - 2 ))
counts_ok() {
  grep -q '^errgate_dlq_items{lane="src.dlq",state="pending-approval"} 2$' "$T/dlq.prom" &&
    [ "$n_open" -gt 0 ] && grep -q "^errgate_dlq_items{lane=\"src.dlq\",state=\"open\"} $n_open\$" "$T/dlq.prom"
}
check "it counts the lane's items per state (2 pending-approval, $n_open open from the gateway)" counts_ok
check "and when the oldest pending-approval item was written (a time of today)" $PY - "$T/dlq.prom" <<'PY'
import re, sys, time
m = re.search(r'^errgate_dlq_oldest_item_timestamp_seconds\{lane="src.dlq",state="pending-approval"\} (\S+)$',
              open(sys.argv[1]).read(), re.M)
sys.exit(0 if m and abs(time.time() - float(m.group(1))) < 3600 else 1)
PY
exit $FAILED
