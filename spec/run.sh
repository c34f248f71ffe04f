#!/usr/bin/env bash
# run.sh — every errgate test: C unit tests, busted specs, policy cases,
# end-to-end tests.
#
# Each suite prints TAP lines; this script counts "ok" and "not ok" across all
# of them (a suite that exits non-zero without a "not ok" line counts as one
# failure) and ends with exactly one line "N passed, N failed".
# Usage: spec/run.sh [PATTERN]  — PATTERN filters suites by name (grep -E).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD
FILTER=${1:-${TESTS:-.}}
passed=0
failed=0
LOGDIR=$(mktemp -d /tmp/errgate-tests.XXXXXX)

run_suite() {
  local name=$1; shift
  echo "$name" | grep -Eq "$FILTER" || return 0
  local log="$LOGDIR/$(echo "$name" | tr '/ ' '__').log" t0=$SECONDS
  echo "# --- $name"
  "$@" >"$log" 2>&1
  local rc=$?
  local p f
  p=$(grep -Ec '^ok [0-9]+' "$log")
  f=$(grep -Ec '^not ok [0-9]+' "$log")
  if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; echo "not ok - $name exited $rc"; fi
  grep -E '^(not ok|# )' "$log" | grep -v '^# scratch' | head -50
  [ "$f" != 0 ] && tail -30 "$log" | sed 's/^/#   | /'
  echo "# $name: $p passed, $f failed ($((SECONDS - t0)) s)"
  passed=$((passed + p))
  failed=$((failed + f))
}

for t in "$BUILD"/test_*; do
  [ -x "$t" ] && run_suite "c/$(basename "$t")" "$t"
done
# every fuzz corpus file through its harness once (spec/fuzz/README.md)
fuzz_replay() {
  local t n=0 rc=0
  for t in "$BUILD"/fuzz/fuzz_*; do
    [ -x "$t" ] || continue
    n=$((n + 1))
    ERRGATE_LUA_DIR=$PWD/lua "$t" "spec/fuzz/corpus/$(basename "$t")" || rc=1
  done
  [ "$n" != 0 ] || { echo "not ok 1 - no $BUILD/fuzz/fuzz_* (make test builds them)"; return 1; }
  return $rc
}
run_suite "fuzz/corpus" fuzz_replay
# busted runs under LuaJIT (the runtime's language); --lua=luajit would re-exec
# through sh with the ';' of --lpath unquoted, so call the runner directly.
run_suite "lua/busted" luajit /usr/bin/busted -o TAP --lpath='lua/?.lua;lua/?/init.lua' spec/lua
# each shipped policy against its cases (spec/cases/NAME.jsonl, policies/NAME.lua)
for c in spec/cases/*.jsonl; do
  run_suite "cases/$(basename "$c" .jsonl)" bash spec/cases/run.sh "$c"
done
for t in spec/e2e/test_*.sh; do
  run_suite "e2e/$(basename "$t" .sh)" bash "$t"
done
rm -rf "$LOGDIR"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
