#!/usr/bin/env bash
# spec/cases/run.sh — runs one policy's case file through `errgate policy
# test` and prints one TAP line per case.
#
# Usage: spec/cases/run.sh spec/cases/NAME.jsonl   (the policy is
# policies/NAME.lua). spec/run.sh runs it once per case file (the suites
# cases/NAME). The table `policy test` prints is aligned: the result column
# starts where its header "result" does, so each row is cut there. The
# command's exit code counts too: a policy that does not load, or a case file
# it cannot read, is a failure even with no row.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
cases=$1
policy=policies/$(basename "$cases" .jsonl).lua
out=$("$BUILD/errgate" policy test "$policy" "$cases" 2>&1)
rc=$?
# the summary line; the whole table only when something failed
if [ "$rc" = 0 ]; then echo "# $(echo "$out" | tail -1)"; else echo "$out" | sed 's/^/# /'; fi
echo "$out" | awk -v file="$cases" '
  NR == 1 { at = index($0, "result"); caseat = index($0, "case"); expat = index($0, "expected"); next }
  at == 0 || /^[^ ]+: [0-9]+ cases, / { next }
  {
    n++
    line = $1
    label = substr($0, caseat, expat - caseat); sub(/ +$/, "", label)
    result = substr($0, at)
    if (result == "ok") print "ok " n " - " file ":" line " " label
    else print "not ok " n " - " file ":" line " " label ": " result
  }
  END { print "1.." n + 0 }'
exit $rc
