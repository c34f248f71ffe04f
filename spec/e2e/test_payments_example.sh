#!/usr/bin/env bash
# test_payments_example.sh — the payment-provider story (examples/payments/)
# (examples/payments/run.sh) runs from a clean checkout and checks itself:
# it exits non-zero if a record is lost, left uncommitted or misplaced.
source "$(dirname "$0")/lib.sh"
out=$(bash "$ROOT/examples/payments/run.sh" 2>&1); rc=$?
printf '%s\n' "$out" | tail -4 | sed 's/^/# /'
check "examples/payments/run.sh succeeds (exit $rc)" [ "$rc" = 0 ]
check "it reports every record accounted for" grep -q "every record accounted for" <<<"$out"
