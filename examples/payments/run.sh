#!/usr/bin/env bash
# run.sh — the payment-provider story on the embedded broker, in one command.
#
# Starts `errgate broker` (payments, its three rung topics 1s/2s/4s and its
# DLQ), produces mixed records to `payments` (ok; `outage-MS`: the provider
# answers 503 until MS ms after it started, then 200; permanent: 400), starts
# the flaky handler and the gateway with examples/payments/config.lua, waits
# until every record has an outcome and every offset is committed, stops
# everything it started, and prints what happened: how many records walked
# each rung, what reached the DLQ and why, and `errgate offsets`. Exits 0
# when every outage record succeeded after the recovery, every permanent one
# is in the DLQ (reason permanent) and nothing is left uncommitted.
# Environment: PAYMENTS_RECORDS (default 300), PAYMENTS_OUTAGE_MS (8000),
# BUILD (build). Logs are kept in a temporary folder named at the end.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
EG="$ROOT/$BUILD/errgate"
N=${PAYMENTS_RECORDS:-300}
OUTAGE=${PAYMENTS_OUTAGE_MS:-8000}
RUNGS="payments.retry.1s payments.retry.2s payments.retry.4s"
W=$(mktemp -d /tmp/errgate-payments.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT
fail() { echo "payments: $*" >&2; echo "payments: logs kept in $W" >&2; exit 1; }
wait_line() { for _ in $(seq 100); do grep -q "$1" "$2" && return 0; sleep 0.1; done; return 1; }
for tool in kcat; do command -v $tool >/dev/null || fail "$tool is required (make demo installs it)"; done
[ -x "$EG" ] && [ -x "$ROOT/$BUILD/flaky-handler" ] || fail "build first: make"

echo "==> starting the embedded broker (payments, 3 rung topics and a DLQ: 4 partitions each)"
topics=(--topic payments:4 --topic payments.dlq:4 --topic payments.quarantine:4)
for r in $RUNGS; do topics+=(--topic "$r:4"); done
"$EG" broker "${topics[@]}" >"$W/broker.out" 2>"$W/broker.err" &
PIDS+=($!)
wait_line '^control=' "$W/broker.out" || fail "broker did not start"
export ERRGATE_BOOTSTRAP=$(sed -n 's/^bootstrap.servers=//p' "$W/broker.out")

echo "==> producing $N payments: ok 60%, outage-$OUTAGE 30%, permanent 10%"
"$ROOT/examples/gen-records.sh" "$N" "ok:60 outage-$OUTAGE:30 permanent:10" >"$W/records.tsv"
kcat -P -b "$ERRGATE_BOOTSTRAP" -t payments -K $'\t' -X acks=all <"$W/records.tsv" 2>"$W/kcat.err" \
  || fail "kcat: $(cat "$W/kcat.err")"
ids_of() { grep "\"mode\":\"$1\"" "$W/records.tsv" | sed 's/.*"id":"\([^"]*\)".*/\1/' | sort; }
ids_of "outage-$OUTAGE" >"$W/outage.ids"
ids_of permanent >"$W/permanent.ids"

echo "==> starting the payment provider (flaky-handler): down for the first $OUTAGE ms"
"$ROOT/$BUILD/flaky-handler" --log "$W/ok.log" >"$W/handler.out" 2>"$W/handler.err" &
PIDS+=($!)
wait_line '^listening=' "$W/handler.out" || fail "handler did not start"
export PAYMENTS_TARGET_URL="http://$(sed -n 's/^listening=//p' "$W/handler.out")/"

echo "==> running: errgate run -c examples/payments/config.lua"
"$EG" run -c "$ROOT/examples/payments/config.lua" 2>"$W/gateway.log" &
GW=$!
PIDS+=($GW)
# offsets: committed vs end of the source and every rung; done when nothing
# is uncommitted and every record has its outcome (a success or the DLQ)
offsets() { "$EG" offsets -g payments payments $RUNGS 2>/dev/null; }
lag() { offsets | awk '$1=="total"{print $4}'; }
count() { kcat -C -b "$ERRGATE_BOOTSTRAP" -t "$1" -e -q -f 'x\n' 2>/dev/null | wc -l; }
succeeded() { awk '{print $2}' "$W/ok.log" 2>/dev/null | sort -u | wc -l; }
for _ in $(seq 900); do
  [ "$(lag)" = 0 ] && [ $(( $(succeeded) + $(count payments.dlq) )) -ge "$N" ] && break
  kill -0 $GW 2>/dev/null || break
  sleep 0.1
done
[ "$(lag)" = 0 ] || fail "records still undecided after 90 s (lag $(lag))"
kill -TERM $GW; rc=0; wait $GW || rc=$?
[ "$rc" = 0 ] || fail "gateway exited $rc"

dlq_reasons=$(kcat -C -b "$ERRGATE_BOOTSTRAP" -t payments.dlq -e -q -f '%h\n' 2>/dev/null |
  grep -o 'errgate.reason=[^,]*' | sed 's/errgate.reason=//' | sort | uniq -c)
dlq_ids=$(kcat -C -b "$ERRGATE_BOOTSTRAP" -t payments.dlq -e -q -f '%s\n' 2>/dev/null |
  sed 's/.*"id":"\([^"]*\)".*/\1/' | sort)
awk '{print $2}' "$W/ok.log" | sort -u >"$W/ok.ids"
outage_ok=$(comm -12 "$W/outage.ids" "$W/ok.ids" | wc -l)

echo
echo "payments story — policy $(sed -n 's/.*"event":"start".*"policy":"\([^"]*\)".*/\1/p' "$W/gateway.log")"
printf '  %-40s %6s\n' "records in (payments)" "$N"
printf '  %-40s %6s\n' "outage records (503 for $OUTAGE ms)" "$(wc -l <"$W/outage.ids")"
printf '  %-40s %6s\n' "  ... succeeded after the recovery" "$outage_ok"
for r in $RUNGS; do printf '  %-40s %6s\n' "  records written to $r" "$(count "$r")"; done
printf '  %-40s %6s\n' "succeeded in all (distinct ids)" "$(wc -l <"$W/ok.ids")"
printf '  %-40s %6s\n' "dead-lettered (payments.dlq)" "$(count payments.dlq)"
echo "$dlq_reasons" | while read -r n reason; do [ -n "$reason" ] && printf '    %-38s %6s\n' "reason $reason" "$n"; done
printf '  %-40s %6s\n' "breaker transitions logged" "$(grep -c '"event":"breaker' "$W/gateway.log")"
echo
echo "errgate offsets -g payments payments $RUNGS"
offsets | sed 's/^/  /'
echo

[ "$outage_ok" = "$(wc -l <"$W/outage.ids")" ] || fail "only $outage_ok outage records succeeded"
[ "$dlq_ids" = "$(cat "$W/permanent.ids")" ] || fail "the DLQ does not hold exactly the permanent records"
[ -z "$(echo "$dlq_reasons" | awk 'NF && $2 != "permanent"')" ] || fail "the DLQ holds records for another reason than permanent"
[ "$(count payments.retry.1s)" -gt 0 ] || fail "no record climbed the ladder (the outage ended before the gateway started?)"
echo "every record accounted for: outage records recovered from the rungs, permanent ones in payments.dlq."
echo "Decision log: $W/gateway.log"
