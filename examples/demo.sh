#!/usr/bin/env bash
# demo.sh — `make demo`: the whole story on the embedded broker
# (`make demo BROKER=kafka`: the same story on a real Apache Kafka broker,
# started by spec/kafka/cluster.sh, which needs Java 17 and Maven).
#
# Starts `errgate broker` and the flaky handler, produces 1,000 mixed records
# to `orders`, runs the gateway with policies/default.lua until every record
# is decided and committed, stops everything it started, and prints what
# happened. Exits 0 when every record is accounted for.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
EG="$ROOT/$BUILD/errgate"
N=${DEMO_RECORDS:-1000}
W=$(mktemp -d /tmp/errgate-demo.XXXXXX)
PIDS=()
KAFKA_DIR=""
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  [ -z "$KAFKA_DIR" ] || "$ROOT/spec/kafka/cluster.sh" down --dir "$KAFKA_DIR" >/dev/null 2>&1
}
trap cleanup EXIT
fail() { echo "demo: $*" >&2; echo "demo: logs kept in $W" >&2; exit 1; }
wait_line() { for _ in $(seq 100); do grep -q "$1" "$2" && return 0; sleep 0.1; done; return 1; }

if [ "${BROKER:-embedded}" = kafka ]; then
  echo "==> starting a real Apache Kafka broker (spec/kafka/cluster.sh; orders: 4 partitions, lanes created by the gateway)"
  KAFKA_DIR="$W/kafka"
  "$ROOT/spec/kafka/cluster.sh" up --dir "$KAFKA_DIR" --brokers 1 >"$W/broker.out" 2>"$W/broker.err" ||
    fail "the Kafka broker did not start: $(tail -3 "$W/broker.err")"
  export ERRGATE_BOOTSTRAP=$(sed -n 's/^bootstrap.servers=//p' "$W/broker.out")
  /usr/bin/python3 "$ROOT/spec/e2e/topics.py" "$ERRGATE_BOOTSTRAP" orders:4 || fail "cannot create the topic orders"
else
  echo "==> starting the embedded broker (orders: 4 partitions, lanes: 4 each)"
  "$EG" broker --topic orders:4 --topic orders.dlq:4 --topic orders.quarantine:4 >"$W/broker.out" 2>"$W/broker.err" &
  PIDS+=($!)
  wait_line '^control=' "$W/broker.out" || fail "broker did not start"
  export ERRGATE_BOOTSTRAP=$(sed -n 's/^bootstrap.servers=//p' "$W/broker.out")
fi

echo "==> starting the flaky handler"
"$ROOT/$BUILD/flaky-handler" --log "$W/ok.log" >"$W/handler.out" 2>"$W/handler.err" &
PIDS+=($!)
wait_line '^listening=' "$W/handler.out" || fail "handler did not start"
export DEMO_TARGET_URL="http://$(sed -n 's/^listening=//p' "$W/handler.out")/"

echo "==> producing $N mixed records (ok, transient, rate-limited, permanent, always-503, semantic, duplicate)"
"$ROOT/examples/gen-records.sh" "$N" "ok:70 transient-1:6 transient-2:4 ratelimit-0:2 permanent:6 explicit-permanent-E42:1 unavailable:1 semantic:4 json-semantic-bad_state:2 duplicate:4" | kcat -P -b "$ERRGATE_BOOTSTRAP" -t orders -K $'\t' -X acks=all 2>"$W/kcat.err" \
  || fail "kcat: $(cat "$W/kcat.err")"

echo "==> running: errgate run -c examples/demo.lua"
"$EG" run -c "$ROOT/examples/demo.lua" 2>"$W/gateway.log" &
GW=$!
PIDS+=($GW)
lag() { "$EG" offsets -g demo orders 2>/dev/null | awk '$1=="total"{print $4}'; }
for _ in $(seq 600); do [ "$(lag)" = 0 ] && break; kill -0 $GW 2>/dev/null || break; sleep 0.1; done
[ "$(lag)" = 0 ] || fail "records still undecided after 60 s (lag $(lag))"
kill -TERM $GW; rc=0; wait $GW || rc=$?
[ "$rc" = 0 ] || fail "gateway exited $rc"

summary=$(grep '"event":"summary"' "$W/gateway.log")
field() { echo "$summary" | sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
read -r committed end <<<"$("$EG" offsets -g demo orders | awk '$1=="total"{print $2, $3}')"
dlq_reasons=$(kcat -C -b "$ERRGATE_BOOTSTRAP" -t orders.dlq -e -q -f '%h\n' 2>/dev/null |
  grep -o 'errgate.reason=[^,]*' | sed 's/errgate.reason=//' | sort | uniq -c)
dlq_total=$(kcat -C -b "$ERRGATE_BOOTSTRAP" -t orders.dlq -e -q -f 'x\n' 2>/dev/null | wc -l)
q_total=$(kcat -C -b "$ERRGATE_BOOTSTRAP" -t orders.quarantine -e -q -f 'x\n' 2>/dev/null | wc -l)

echo
echo "errgate demo — policy $(sed -n 's/.*"event":"start".*"policy":"\([^"]*\)".*/\1/p' "$W/gateway.log")"
printf '  %-34s %8s\n' "records in" "$end"
printf '  %-34s %8s\n' "succeeded first time" "$(field succeeded_first)"
printf '  %-34s %8s\n' "succeeded after retry" "$(field succeeded_retry)"
printf '  %-34s %8s\n' "dead-lettered (orders.dlq)" "$dlq_total"
echo "$dlq_reasons" | while read -r n reason; do [ -n "$reason" ] && printf '    %-32s %8s\n' "reason $reason" "$n"; done
printf '  %-34s %8s\n' "quarantined (orders.quarantine)" "$q_total"
printf '  %-34s %8s\n' "ignored (duplicates)" "$(field ignored)"
printf '  %-34s %8s\n' "in-place retries" "$(field retries)"
printf '  %-34s %8s\n' "committed offset / end offset" "$committed / $end"
printf '  %-34s %8.0f\n' "records/s (first record to last)" "$(field records_per_second)"
accounted=$(( $(field succeeded_first) + $(field succeeded_retry) + dlq_total + q_total + $(field ignored) ))
echo
if [ "$accounted" = "$end" ] && [ "$committed" = "$end" ]; then
  echo "every record accounted for: $accounted of $end. Decision log: $W/gateway.log"
else
  fail "accounted $accounted of $end records, committed $committed"
fi
