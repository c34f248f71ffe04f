#!/usr/bin/env bash
# test_policy_cmd.sh — `errgate policy check` and `errgate policy test`: the
# checks a team and its CI run before a policy ships. A policy that check
# passes is one the gateway loads; test replays recorded cases and fails on
# any mismatch with an aligned table naming it.
source "$(dirname "$0")/lib.sh"
POL="$ROOT/policies/default.lua"
sha=$(sha256sum "$POL" | cut -c1-8)

out=$("$EG" policy check "$POL"); rc=$?
check "check: the shipped default passes (exit $rc)" [ "$rc" = 0 ]
check "check: prints name@version+sha (default@1+$sha)" grep -q "^policy    default@1+$sha$" <<<"$out"
check "check: counts the examples it ran" grep -q '^examples  11 passed$' <<<"$out"
check "check: lint ok" grep -q '^lint      ok$' <<<"$out"

out=$("$EG" policy check "$FIXTURES/unrouted_class.lua"); rc=$?
check "check: a class with no route is a lint error (exit $rc)" [ "$rc" = 1 ]
check "check: the lint error names the class and rule" grep -q "lint: class 'gone' (classify rule 2) has no route" <<<"$out"

out=$("$EG" policy check "$FIXTURES/failing_example.lua"); rc=$?
check "check: a failing example fails the check, naming it (exit $rc)" \
  exits_with "$rc" 1 'example 2 (404 is dead-lettered): expected action quarantine, got dlq' "$out"
printf 'return {\n' >"$T/syntax.lua"
out=$("$EG" policy check "$T/syntax.lua"); rc=$?
check "check: a syntax error fails naming file:line (exit $rc)" exits_with "$rc" 1 'syntax.lua:2:' "$out"

cat >"$T/cases.jsonl" <<'C'
# recorded failures: one JSON object per line
{"name": "provider 503", "failure": {"kind": "http", "status": 503}, "expect": {"action": "retry", "class": "transient"}}
{"failure": 400, "expect": "dlq"}
{"failure": "timeout", "ctx": {"last_class": "transient", "class_attempts": 4}, "expect": {"action": "dlq", "reason": "exhausted"}}
{"failure": {"kind": "http", "status": 429, "retry_after_ms": 3000}, "expect": {"action": "retry", "delay_ms": 3000}}
C
out=$("$EG" policy test "$POL" "$T/cases.jsonl"); rc=$?
check "test: all cases pass (exit $rc)" [ "$rc" = 0 ]
check "test: summary line" grep -q "^default@1+$sha: 4 cases, 4 passed, 0 mismatched$" <<<"$out"
check "test: aligned table with a header" grep -q '^line  case  *expected  *decided  *result$' <<<"$out"
printf '{"failure": 422, "expect": "dlq"}\nnot json\n' >>"$T/cases.jsonl"
out=$("$EG" policy test "$POL" "$T/cases.jsonl"); rc=$?
check "test: a mismatch exits 1 (exit $rc)" [ "$rc" = 1 ]
check "test: the mismatch row says what differed" grep -q '^6 .*MISMATCH expected action dlq, got quarantine$' <<<"$out"
check "test: an unreadable line is reported, not skipped" grep -q '^7 .*ERROR invalid JSON' <<<"$out"
check "test: summary counts them" grep -q ': 6 cases, 4 passed, 2 mismatched$' <<<"$out"
"$EG" policy test "$POL" >/dev/null 2>&1; rc=$?
check "usage error exits 2 (exit $rc)" [ "$rc" = 2 ]

for pol in "$ROOT"/policies/*.lua; do
  out=$("$EG" policy check "$pol"); rc=$?
  check "check: shipped $(basename "$pol") passes with clean lint (exit $rc)" exits_with "$rc" 0 '^lint      ok$' "$out"
done

# the man page's DSL sample (POLICIES) is a real, loadable policy: its
# example block, roff escapes undone
awk '/^local policy = require "errgate.policy"$/{f=1} f{print} /^}$/ && f{exit}' "$ROOT/man/errgate.1" |
  sed -e 's/\\-/-/g' -e 's/\\e/\\/g' -e 's/^\\&//' >"$T/man_policy.lua"
check "the man page has a DSL sample ($(wc -l <"$T/man_policy.lua") lines)" [ "$(wc -l <"$T/man_policy.lua")" -ge 20 ]
out=$("$EG" policy check "$T/man_policy.lua"); rc=$?
check "the man page's sample policy passes policy check (exit $rc)" exits_with "$rc" 0 '^lint      ok$' "$out"
