#!/usr/bin/env bash
# test_dlq_ops_example.sh — the DLQ operations story (examples/dlq-ops/run.sh)
# runs from a clean checkout and checks itself: records dead-lettered with
# approval required, dlq watch writes incidents and the local webhook gets
# exactly one alert for the class that crossed its threshold, replay skips
# the unapproved items, an operator approves the permanent ones by class,
# replay --state approved republishes exactly those, stats by state add up.
source "$(dirname "$0")/lib.sh"
out=$(BUILD=$BUILD bash "$ROOT/examples/dlq-ops/run.sh" 2>&1); rc=$?
printf '%s\n' "$out" | tail -3 | sed 's/^/# /'
check "examples/dlq-ops/run.sh succeeds (exit $rc)" [ "$rc" = 0 ]
check "it reports every step held" grep -q "^dlq-ops: every step held" <<<"$out"
[ "$rc" = 0 ] || printf '%s\n' "$out" | grep "^dlq-ops:" | sed 's/^/# /'
exit $FAILED
