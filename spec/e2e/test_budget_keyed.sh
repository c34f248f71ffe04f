#!/usr/bin/env bash
# test_budget_keyed.sh — retry budgets by key (issue 30 item 2):
# target.retry_budget = { percent = 100, min = 100, per_minute = 30,
# key = { header = "tenant" } }, so per_minute alone limits, per tenant.
# A noisy tenant (40 records on partition 0 that always answer 503) and a
# quiet one (10 records on partition 1 that fail twice, 20 retries in all)
# retry in place (retry_in_place_100.lua). Checked:
#   - every quiet record succeeded, all 20 of its retries admitted, none
#     refused (told by partition);
#   - the noisy tenant exhausted its own budget: refused (reason
#     retry_budget), its admitted retries within 30 + 0.5 a second since
#     the start (+2); every retry and refusal names its key (budget_key);
#   - errgate_retry_budget_keys is 2;
#   - `dlq stats --by header:tenant` counts the dead letters per tenant
#     (3 noisy and 2 quiet records answered 400), and refuses a bad header name.
# Without the key, the noisy tenant spends the shared 30 and the quiet
# tenant's retries are refused.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ladder_lib.sh"
start_broker --topic src:4 --topic src.dlq:4 --topic src.quarantine:4
prod() { # PARTITION TENANT: "key<TAB>value" lines on stdin, with header tenant=TENANT
  kcat -P -b "$BOOTSTRAP" -t src -p "$1" -K $'\t' -H "tenant=$2" -X acks=all 2>>"$T/kcat.err" || die "kcat: $(cat "$T/kcat.err")"
}
for i in $(seq 1 40); do printf 'n%d\t{"id":"noisy%d","mode":"unavailable"}\n' "$i" "$i"; done | prod 0 noisy
for i in $(seq 1 10); do printf 'q%d\t{"id":"quiet%d","mode":"transient-2"}\n' "$i" "$i"; done | prod 1 quiet
for i in 1 2 3; do printf 'p%d\t{"id":"pn%d","mode":"permanent"}\n' "$i" "$i"; done | prod 2 noisy
for i in 1 2; do printf 'p%d\t{"id":"pq%d","mode":"permanent"}\n' "$i" "$i"; done | prod 2 quiet
bg h $PY "$ROOT/spec/e2e/rate_handler.py" "$T/h.log"
wait_for 10 grep -q '^listening=' "$T/h.out" || die "handler did not start: $(cat "$T/h.err")"
HANDLER_URL="http://$(sed -n '1s/^listening=//p' "$T/h.out")/"
ladder_config "$T/gw.lua" keyed src none "$FIXTURES/retry_in_place_100.lua" \
  'retry_budget = { percent = 100, min = 100, per_minute = 30, key = { header = "tenant" } },' \
  'admin = { listen = "127.0.0.1:0" }, log = { decisions = "all" },'
T0=$(date +%s.%N)
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin address: $(tail -3 "$T/gw.err")"

quiet_done() { [ "$(grep -c '^[0-9.]* quiet[0-9]* [^ ]* 200$' "$T/h.log" 2>/dev/null)" -ge 10 ]; }
dlq_done() { dump src.dlq "$T/dlq.json"; [ "$(wc -l <"$T/dlq.json")" -ge 5 ]; }
wait_for 60 quiet_done
check "every quiet record succeeded ($(grep -c ' quiet[0-9]* [^ ]* 200$' "$T/h.log") of 10)" quiet_done
wait_for 30 dlq_done
check "the 5 permanent records were dead-lettered" dlq_done
sleep 2 # the noisy tenant keeps retrying and being refused meanwhile
KEYS=$(metric "$ADDR" errgate_retry_budget_keys)
ELAPSED=$(echo "$(date +%s.%N) - $T0" | bc)
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
check "errgate_retry_budget_keys is 2 (got $KEYS)" [ "$KEYS" = 2 ]

"$EG" dlq stats src.dlq -b "$BOOTSTRAP" --by header:tenant >"$T/stats.txt" 2>"$T/stats.err"
diag "dlq stats --by header:tenant: $(tr '\n' '|' <"$T/stats.txt")"
check "dlq stats --by header:tenant: 3 noisy" grep -Eq '^noisy +3 ' "$T/stats.txt"
check "dlq stats --by header:tenant: 2 quiet" grep -Eq '^quiet +2 ' "$T/stats.txt"
"$EG" dlq stats src.dlq -b "$BOOTSTRAP" --by 'header:a b' >/dev/null 2>"$T/bad.err"; brc=$?
check "a bad header name is a usage error (exit $brc: $(head -1 "$T/bad.err"))" [ "$brc" = 2 ]

pycheck "$T/gw.err" "$ELAPSED" <<'PY'
import json, sys
from ladder_lanes import check, done
dec = [json.loads(l) for l in open(sys.argv[1]) if '"event":"decision"' in l]
elapsed = float(sys.argv[2])
def part(p, pred):  # the tenants by partition: noisy 0, quiet 1 (whatever the log says of keys)
    return [d for d in dec if d["partition"] == p and pred(d)]
retry = lambda d: d["action"] == "retry"
refusal = lambda d: d.get("reason") == "retry_budget"
q_ok, q_no = part(1, retry), part(1, refusal)
n_ok, n_no = part(0, retry), part(0, refusal)
print("# %.1f s: quiet %d retries, %d refusals; noisy %d retries, %d refusals; %d decisions"
      % (elapsed, len(q_ok), len(q_no), len(n_ok), len(n_no), len(dec)))
check(len(q_ok) == 20, "all 20 retries of the quiet tenant were admitted (%d)" % len(q_ok))
check(not q_no, "no refusal of the quiet tenant (%d)" % len(q_no))
check(len(n_no) > 0, "the noisy tenant was refused (%d refusals)" % len(n_no))
check(all(d.get("budget_key") == "quiet" for d in q_ok) and all(d.get("budget_key") == "noisy" for d in n_ok + n_no),
      "every retry and refusal names its tenant's key (budget_key)")
cap = 30 + 0.5 * elapsed + 2
check(len(n_ok) <= cap, "the noisy tenant's retries stayed within its per_minute (%d <= %.0f)" % (len(n_ok), cap))
fb = [d for d in n_no if d.get("fallback")]
check(all("of key 'noisy'" in d.get("error", "") and "per_minute" in d.get("error", "") for d in fb),
      "a refusal the gateway made says whose budget and which cap (%d such: %s)"
      % (len(fb), fb[0].get("error") if fb else "-"))
check(all("budget_key" not in d for d in dec if d["action"] not in ("retry",) and d.get("reason") != "retry_budget"),
      "other decisions carry no budget_key")
done()
PY
[ "$FAILED" = 0 ]
