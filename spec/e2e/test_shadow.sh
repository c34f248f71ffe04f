#!/usr/bin/env bash
# test_shadow.sh — the shadow policy with a real broker, gateway and
# handler. The live policy is the shipped default; the candidate
# (shadow_policy) differs on one class: permanent goes to quarantine
# instead of the DLQ. Checked: /metrics' shadow decisions (plus skips) add
# up to the failures the gateway decided, and GET /shadow's table to the
# same; the permanent cell counts every permanent record with up to 5
# example ids that name real permanent records of the source topic; the
# other classes agree; the lane topics hold the live decisions only (every
# permanent record in the DLQ, none in quarantine); `errgate ctl shadow`
# prints the table. A broken candidate (syntax error) on SIGHUP is refused,
# logged and counted, the previous candidate stays, and live routing goes
# on. A candidate that loops forever is counted as shadow errors and does
# not stop or slow the live records beyond a bound: the same batch drains
# in at most twice the time it took under the good candidate, plus 5 s.
# Bad input: a missing candidate file is a config error; `ctl shadow`
# with an extra argument is a usage error.
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"
N=${SHADOW_RECORDS:-3000}
BATCH=${SHADOW_BATCH:-1500}

start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2
start_handler
echo "sh-token" >"$T/token"
sed -e 's/name = "default"/name = "candidate"/' -e 's/permanent = "dlq",/permanent = "quarantine",/' \
  -e 's/expect = { action = "dlq", class = "permanent" }/expect = { action = "quarantine", class = "permanent" }/' \
  "$ROOT/policies/default.lua" >"$T/good.lua"
"$EG" policy check "$T/good.lua" >/dev/null || die "the candidate does not pass its own examples"
grep -q 'permanent = "quarantine"' "$T/good.lua" || die "the candidate was not made"
cp "$T/good.lua" "$T/cand.lua"
printf 'return {\n' >"$T/syntax.lua"
cat >"$T/loop.lua" <<'LUA'
local policy = require "errgate.policy"
return policy.define { name = "looping", version = "1",
  classify = function() while true do end end,
  route = { default = "dlq" } }
LUA
# bad input: a candidate file that is not there is a config error naming the key
write_config "$T/missing.lua" shadowg partition "shadow_policy = \"$T/nowhere.lua\","
out=$("$EG" run -c "$T/missing.lua" 2>&1); rc=$?
check "a missing shadow_policy file is refused at start, naming the key ($rc: $out)" exits_with "$rc" 2 "shadow_policy" "$out"
out=$("$EG" ctl --admin http://127.0.0.1:1 shadow now 2>&1); rc=$?
check "ctl shadow with an extra argument is a usage error ($rc: $out)" exits_with "$rc" 2 "'shadow'" "$out"

write_config "$T/gw.lua" shadowg partition \
  "admin = { listen = \"127.0.0.1:0\", token_file = \"$T/token\" }, shadow_policy = \"$T/cand.lua\","
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin endpoint: $(tail -3 "$T/gw.err")"
wait_for 30 grep -q '"event":"assign"' "$T/gw.err" || die "no assignment"
check "the candidate is loaded at start" grep -q '"event":"shadow_loaded","trigger":"start","policy":"candidate@1+' "$T/gw.err"

metrics() { curl -s -m 5 "http://$ADDR/metrics"; }
# msum NAME_PREFIX: the sum of every sample of the series starting so
msum() { metrics | awk -v p="$1" 'index($0, p) == 1 {s += $NF} END {printf "%d\n", s}'; }
shadow_idle() { admin_get "$ADDR" /shadow | grep -q '"pending":0,'; }
lane_count() { kcat -C -b "$BOOTSTRAP" -t "$1" -e -q 2>/dev/null | wc -l; }
shadow_field() { admin_get "$ADDR" /shadow | $PY -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

# ---- phase 1: a good candidate, a mix of failures ---------------------------
SPEC="ok:50 permanent:20 semantic:10 duplicate:10 transient-1:10"
gen_records "$N" "$SPEC" >"$T/recs1"
PERM=$(grep -c '"mode":"permanent"' "$T/recs1")
SEM=$(grep -c '"mode":"semantic"' "$T/recs1")
produce src <"$T/recs1"
wait_drained shadowg src 120 || not_ok "phase 1 not drained: lag $(lag shadowg src)"
wait_for 30 shadow_idle || not_ok "the shadow queue did not empty"
FAILED_DECISIONS=$(msum errgate_records_failed_total)
SHADOW=$(msum errgate_shadow_decisions_total)
SKIPPED=$(msum errgate_shadow_skipped_total)
diag "failures decided $FAILED_DECISIONS, shadow decisions $SHADOW, skipped $SKIPPED"
check "shadow decisions + skips = failures decided ($SHADOW + $SKIPPED = $FAILED_DECISIONS)" \
  [ "$FAILED_DECISIONS" -gt 0 -a $((SHADOW + SKIPPED)) = "$FAILED_DECISIONS" ]
check "no shadow error with the good candidate" [ "$(msum errgate_shadow_errors_total)" = 0 ]
check "the permanent disagreement is a metric series of $PERM" \
  bash -c "curl -s http://$ADDR/metrics | grep -qx 'errgate_shadow_decisions_total{class=\"permanent\",live=\"dlq\",shadow=\"quarantine\"} $PERM'"
admin_get "$ADDR" /shadow >"$T/shadow1.json"
check "GET /shadow answers 200" [ "$(http_code)" = 200 ]
dump src "$T/src.json"
$PY - "$T/shadow1.json" "$T/src.json" "$SHADOW" "$PERM" >"$T/table.check" <<'PY'; TABLE_RC=$?
import json, sys
s = json.load(open(sys.argv[1]))
recs = {}
for line in open(sys.argv[2], encoding="utf-8"):
    m = json.loads(line)
    recs["src/%d/%d" % (m["partition"], m["offset"])] = json.loads(m["payload"])["mode"]
shadow, perm = int(sys.argv[3]), int(sys.argv[4])
def check(cond, what):
    print(("# good: " if cond else "# FAILED: ") + what)
    return cond
ok = True
cells = {(c["class"], c["live"], c["shadow"]): c for c in s["table"]}
ok &= check(s["candidate"].startswith("candidate@1+"), "/shadow names the candidate: %s" % s["candidate"])
ok &= check(sum(c["count"] for c in s["table"]) == s["table_total"] == s["decided"] == shadow,
            "/shadow's table adds up to its decided count and the metric (%d, %d, %d)" % (s["table_total"], s["decided"], shadow))
p = cells.get(("permanent", "dlq", "quarantine"))
ok &= check(p is not None and p["count"] == perm and not p["agree"],
            "permanent: live dlq, shadow quarantine, %d (%s)" % (perm, p and p["count"]))
ex = p["examples"] if p else []
ok &= check(len(ex) == min(5, perm) and all(recs.get(i) == "permanent" for i in ex),
            "its %d examples name real permanent records: %s" % (len(ex), ex))
others = [c for c in s["table"] if c["class"] != "permanent"]
ok &= check(others and all(c["agree"] and c["examples"] == [] for c in others),
            "every other class agrees, with no examples: %s" % [(c["class"], c["live"], c["count"]) for c in others])
sys.exit(0 if ok else 1)
PY
cat "$T/table.check"
check "/shadow: the candidate, totals that add up, the permanent cell with real examples, the rest agreeing" \
  [ "$TABLE_RC" = 0 ]
check "the DLQ holds every permanent record ($PERM), the live decision" [ "$(lane_count src.dlq)" = "$PERM" ]
check "quarantine holds the semantic ones only ($SEM): the shadow's decision was not acted on" \
  [ "$(lane_count src.quarantine)" = "$SEM" ]
out=$("$EG" ctl --admin "http://$ADDR" shadow 2>&1); rc=$?
diag "$(head -8 <<<"$out")"
check "errgate ctl shadow prints the table ($rc)" \
  exits_with "$rc" 0 "^permanent  *dlq  *quarantine  *$PERM  *src/" "$out"
out=$("$EG" ctl --admin "http://$ADDR" --json shadow 2>&1)
check "ctl --json shadow prints the endpoint's JSON" grep -q '^{"path":".*"table":\[' <<<"$out"
out=$("$EG" ctl --admin "http://$ADDR" shadow --json 2>&1)
check "ctl shadow --json does the same" grep -q '^{"path":".*"table":\[' <<<"$out"

# ---- phase 2: timing a batch of permanent failures under the good candidate --
batch() { # batch NAME: BATCH permanent records with ids NAME-i, drained; prints the seconds
  local t0 t1
  for i in $(seq 1 "$BATCH"); do printf 'k%d\t{"id":"%s-%d","mode":"permanent"}\n' "$i" "$1" "$i"; done >"$T/$1.recs"
  t0=$(date +%s.%N)
  produce src <"$T/$1.recs"
  wait_drained shadowg src 180 || not_ok "batch $1 not drained: lag $(lag shadowg src)"
  t1=$(date +%s.%N)
  $PY -c "print('%.2f' % ($t1 - $t0))"
}
GOOD_S=$(batch good)
DLQ_BEFORE=$(lane_count src.dlq)
check "the good candidate's batch is dead-lettered by the live policy ($DLQ_BEFORE)" [ "$DLQ_BEFORE" = $((PERM + BATCH)) ]

# ---- phase 3: a broken candidate is refused, live routing goes on -----------
cp "$T/syntax.lua" "$T/next.lua" && mv "$T/next.lua" "$T/cand.lua" && kill -HUP "$GW_PID"
wait_for 20 grep -q '"event":"shadow_refused"' "$T/gw.err" || not_ok "no shadow_refused line"
check "the broken candidate is refused, naming the file and line, the previous one kept" \
  grep -q '"event":"shadow_refused".*"error":"[^"]*cand.lua:2.*"kept":"candidate@1+' "$T/gw.err"
check "the refusal is counted" [ "$(msum 'errgate_shadow_reloads_total{result="failure"}')" -ge 1 ]
check "the live policy was not touched by it" \
  bash -c "! grep -q '\"event\":\"reload\",\"result\":\"failed\"' '$T/gw.err'"
check "/shadow still shows the candidate and the refusal" \
  bash -c "[ \"\$(curl -s http://$ADDR/shadow | grep -c '\"candidate\":\"candidate@1+.*\"last_error\":\"[^\"]*cand.lua:2')\" = 1 ]"
printf 'k1\t{"id":"after-refusal","mode":"permanent"}\n' | produce src
wait_drained shadowg src 60 || not_ok "not drained after the refusal"
check "live routing went on after the refusal" [ "$(lane_count src.dlq)" = $((DLQ_BEFORE + 1)) ]

# ---- phase 4: a candidate that loops forever ------------------------------
cp "$T/loop.lua" "$T/next.lua" && mv "$T/next.lua" "$T/cand.lua" && kill -HUP "$GW_PID"
wait_for 20 grep -q '"event":"shadow_loaded".*"policy":"looping@1+' "$T/gw.err" || die "the looping candidate did not load"
E0=$(msum errgate_shadow_errors_total)
LOOP_S=$(batch loop)
E1=$(msum errgate_shadow_errors_total)
BEHIND=$(msum 'errgate_shadow_skipped_total{reason="behind"}')
diag "batch of $BATCH: ${GOOD_S}s under the good candidate, ${LOOP_S}s under the looping one; shadow errors $((E1 - E0)), skipped behind $BEHIND"
check "the looping candidate's decisions are counted as shadow errors ($((E1 - E0)))" [ $((E1 - E0)) -ge 1 ]
check "the live records were not slowed beyond the bound (${LOOP_S}s <= 2 x ${GOOD_S}s + 5s)" \
  $PY -c "import sys; sys.exit(0 if $LOOP_S <= 2 * $GOOD_S + 5 else 1)"
check "every record of the batch was dead-lettered by the live policy" \
  [ "$(lane_count src.dlq)" = $((DLQ_BEFORE + 1 + BATCH)) ]
check "the shadow error is logged, naming the budget" \
  grep -q '"event":"shadow_error","policy":"looping@1+.*budget' "$T/gw.err"
check "the live policy never fell back" [ "$(msum errgate_policy_fallbacks_total)" = 0 ]
stop_gateway "$GW_PID"
check "gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
account shadowg 2 "$T/gw.err"
