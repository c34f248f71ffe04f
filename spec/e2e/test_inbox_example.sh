#!/usr/bin/env bash
# test_inbox_example.sh — the Spring DLT triage story (examples/inbox/)
# (examples/inbox/run.sh) runs from a clean checkout and checks itself: it
# exits non-zero if a record is lost, left uncommitted or misplaced.
source "$(dirname "$0")/lib.sh"
out=$(bash "$ROOT/examples/inbox/run.sh" 2>&1); rc=$?
printf '%s\n' "$out" | tail -12 | sed 's/^/# /'
check "examples/inbox/run.sh succeeds (exit $rc)" [ "$rc" = 0 ]
check "it reports every record accounted for" grep -q "every record accounted for" <<<"$out"
check "the Spring DLT is read by its innermost classes" grep -q "code=JsonParseException" <<<"$out"
echo "1..$TESTNO"
exit $FAILED
