#!/usr/bin/env bash
# run.sh — the DLQ operations story on the embedded broker, in one command.
#
# Orders fail; their DLQ needs approval before anything is replayed
# (config.lua: lanes.dlq_approval). `errgate dlq watch` writes an incident
# line per dead-lettered record and calls a local webhook when permanent
# failures cross their threshold; `errgate replay` refuses to touch the
# unapproved items; an operator approves the permanent ones (about half of
# the DLQ) by class; `errgate replay --state approved` republishes exactly
# those to orders.fixed; `errgate dlq stats --by state` adds up. Each step
# is checked: the script exits non-zero, naming the step, when one does
# not hold. Environment: ORDERS_RECORDS (default 60), BUILD (build). Logs
# are kept in a temporary folder named at the end.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/examples/dlq-ops"
BUILD=${BUILD:-build}
EG="$ROOT/$BUILD/errgate"
N=${ORDERS_RECORDS:-60}
W=$(mktemp -d /tmp/errgate-dlq-ops.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT
fail() { echo "dlq-ops: $*" >&2; echo "dlq-ops: logs kept in $W" >&2; exit 1; }
wait_line() { for _ in $(seq 100); do grep -q "$1" "$2" && return 0; sleep 0.1; done; return 1; }
count() { kcat -C -b "$ERRGATE_BOOTSTRAP" -t "$1" -e -q -f 'x\n' 2>/dev/null | wc -l; }
# stat FILE STATE: the ITEMS column of the row STATE of `dlq stats --by state`
stat() { awk -v s="$2" '$1==s {print $2}' "$1"; }
for tool in kcat python3; do command -v $tool >/dev/null || fail "$tool is required (make deps installs it)"; done
[ -x "$EG" ] && [ -x "$ROOT/$BUILD/flaky-handler" ] || fail "build first: make"

echo "==> the embedded broker: orders, orders.dlq, orders.fixed (4 partitions each)"
"$EG" broker --topic orders:4 --topic orders.dlq:4 --topic orders.fixed:4 >"$W/broker.out" 2>"$W/broker.err" &
PIDS+=($!)
wait_line '^control=' "$W/broker.out" || fail "broker did not start"
export ERRGATE_BOOTSTRAP=$(sed -n 's/^bootstrap.servers=//p' "$W/broker.out")

echo "==> an alert receiver, and errgate dlq watch on orders.dlq (permanent: 5 in 10 min alerts)"
python3 "$HERE/webhook.py" "$W/alerts.jsonl" >"$W/webhook.out" 2>"$W/webhook.err" &
PIDS+=($!)
wait_line '^listening=' "$W/webhook.out" || fail "webhook receiver did not start"
HOOK="http://$(sed -n 's/^listening=//p' "$W/webhook.out")/errgate"
"$EG" dlq watch orders.dlq --incidents "$W/incidents.jsonl" --webhook "$HOOK" \
  --threshold permanent=5/10m --threshold transient=1000/10m >"$W/watch.out" 2>"$W/watch.err" &
WATCH=$!
PIDS+=($WATCH)
wait_line '^watch orders.dlq' "$W/watch.out" || fail "dlq watch did not start: $(cat "$W/watch.err")"

echo "==> $N orders: ok 50%, unavailable 20% (503 forever: retried, then dead-lettered), permanent 30% (400)"
"$ROOT/examples/gen-records.sh" "$N" "ok:50 unavailable:20 permanent:30" >"$W/records.tsv"
kcat -P -b "$ERRGATE_BOOTSTRAP" -t orders -K $'\t' -X acks=all <"$W/records.tsv" 2>"$W/kcat.err" || fail "kcat: $(cat "$W/kcat.err")"
N_PERM=$(grep -c '"mode":"permanent"' "$W/records.tsv")
N_TRANS=$(grep -c '"mode":"unavailable"' "$W/records.tsv")
"$ROOT/$BUILD/flaky-handler" --log "$W/ok.log" >"$W/handler.out" 2>"$W/handler.err" &
PIDS+=($!)
wait_line '^listening=' "$W/handler.out" || fail "handler did not start"
export ORDERS_TARGET_URL="http://$(sed -n 's/^listening=//p' "$W/handler.out")/"

echo "==> errgate run -c examples/dlq-ops/config.lua until every order has its outcome"
"$EG" run -c "$HERE/config.lua" 2>"$W/gateway.log" &
GW=$!
PIDS+=($GW)
lag() { "$EG" offsets -g orders orders 2>/dev/null | awk '$1=="total"{print $4}'; }
for _ in $(seq 1200); do
  [ "$(lag)" = 0 ] && [ "$(count orders.dlq)" -ge $((N_PERM + N_TRANS)) ] && break
  kill -0 $GW 2>/dev/null || break
  sleep 0.1
done
kill -TERM $GW; rc=0; wait $GW || rc=$?
[ "$rc" = 0 ] || fail "gateway exited $rc"
N_DLQ=$(count orders.dlq)
[ "$N_DLQ" = $((N_PERM + N_TRANS)) ] || fail "orders.dlq holds $N_DLQ records, want $N_PERM permanent + $N_TRANS transient"

echo "==> dlq watch: one incident per dead-lettered order, one alert (permanent crossed 5 in 10 min)"
for _ in $(seq 300); do [ "$(wc -l <"$W/incidents.jsonl" 2>/dev/null || echo 0)" -ge "$N_DLQ" ] && break; sleep 0.1; done
sleep 1
kill -TERM $WATCH; rc=0; wait $WATCH || rc=$?
[ "$rc" = 0 ] || fail "dlq watch exited $rc"
sed 's/^/    /' "$W/watch.out"
[ "$(wc -l <"$W/incidents.jsonl")" = "$N_DLQ" ] || fail "$(wc -l <"$W/incidents.jsonl") incident lines for $N_DLQ DLQ records"
alerts=$(python3 -c 'import json,sys; print(" ".join(json.loads(l)["class"] for l in open(sys.argv[1])))' "$W/alerts.jsonl")
[ "$alerts" = permanent ] || fail "the webhook got alerts for [$alerts], want exactly one for permanent"
echo "    webhook received: $(cat "$W/alerts.jsonl")"

echo "==> errgate dlq stats orders.dlq --by state: everything waits for approval"
"$EG" dlq stats orders.dlq --by state | tee "$W/stats1.txt" | sed 's/^/    /'
[ "$(stat "$W/stats1.txt" pending-approval)" = "$N_DLQ" ] || fail "not every DLQ item is pending-approval"

echo "==> errgate replay --from orders.dlq --to orders.fixed: nothing is approved, nothing goes"
"$EG" replay --from orders.dlq --to orders.fixed >"$W/replay1.txt" 2>&1 || fail "replay: $(cat "$W/replay1.txt")"
sed 's/^/    /' "$W/replay1.txt"
grep -q "replayed 0 .*skipped $N_DLQ (pending-approval=$N_DLQ)" "$W/replay1.txt" || fail "replay did not skip every unapproved item"
[ "$(count orders.fixed)" = 0 ] || fail "replay republished unapproved items"

echo "==> errgate dlq approve orders.dlq --class permanent --by ops: the permanent ones are fixed upstream"
"$EG" dlq approve orders.dlq --class permanent --by ops --reason "price table fixed, OPS-42" >"$W/approve.txt" 2>&1 ||
  fail "approve: $(cat "$W/approve.txt")"
sed -n '1,3p;$p' "$W/approve.txt" | sed 's/^/    /'
grep -q "^approved $N_PERM\$" "$W/approve.txt" || fail "approve did not approve the $N_PERM permanent items"

echo "==> errgate replay --from orders.dlq --to orders.fixed --state approved"
"$EG" replay --from orders.dlq --to orders.fixed --state approved >"$W/replay2.txt" 2>&1 || fail "replay: $(cat "$W/replay2.txt")"
sed 's/^/    /' "$W/replay2.txt"
[ "$(count orders.fixed)" = "$N_PERM" ] || fail "orders.fixed holds $(count orders.fixed) records, want the $N_PERM approved"
approved=$(sed -n 's/^approved \([^ ]*\) .*/\1/p' "$W/approve.txt" | sort)
replayed=$(kcat -C -b "$ERRGATE_BOOTSTRAP" -t orders.fixed -e -q -f '%h\n' 2>/dev/null | tr ',' '\n' |
  sed -n 's/^errgate.id=//p' | sort)
[ "$approved" = "$replayed" ] || fail "the replayed records are not exactly the approved ones"

echo "==> errgate dlq stats orders.dlq --by state: it adds up"
"$EG" dlq stats orders.dlq --by state | tee "$W/stats2.txt" | sed 's/^/    /'
[ "$(stat "$W/stats2.txt" replayed)" = "$N_PERM" ] && [ "$(stat "$W/stats2.txt" pending-approval)" = "$N_TRANS" ] &&
  [ "$(stat "$W/stats2.txt" total)" = "$N_DLQ" ] || fail "stats by state do not add up"
echo
echo "dlq-ops: every step held: $N_DLQ dead-lettered with approval required, $N_DLQ incidents, one alert,"
echo "  $N_PERM approved and replayed, $N_TRANS still pending approval. Logs: $W"
