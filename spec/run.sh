#!/usr/bin/env bash
# run.sh — every errgate test: C unit tests, busted specs, policy cases,
# end-to-end tests.
#
# Each suite prints TAP lines; this script counts "ok" and "not ok" across all
# of them (a suite that exits non-zero without a "not ok" line counts as one
# failure) and ends with exactly one line "N passed, N failed".
# The C, fuzz, busted and cases suites run one after the other (some check
# CPU time bounds); the e2e suites, which mostly wait on processes, run
# TEST_JOBS at a time (default 2; TEST_JOBS=1 runs them one by one). They
# share nothing: each has its own scratch dir, broker and random ports. An
# e2e suite with the line "# spec/run.sh: alone" (one that compares rates or
# times the machine's load would skew) runs with no other suite. Each
# suite's report is printed in the order of the list below, whatever order
# they finish in, with the suite's own wall time.
# Usage: spec/run.sh [PATTERN]  — PATTERN filters suites by name (grep -E):
# e2e/NAME on the embedded broker, kafka/NAME on a real cluster.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD
FILTER=${1:-${TESTS:-.}}
# BROKER: both (default: every suite on the embedded broker, the suites
# marked "# spec/run.sh: kafka" on a real cluster too), embedded, or kafka
# (only the marked suites, on a real cluster)
BROKER=${BROKER:-both}
case $BROKER in both | embedded | kafka) ;; *) echo "BROKER must be both, embedded or kafka, not '$BROKER'" >&2; exit 2 ;; esac
# VALGRIND: 1 runs the errgate processes of every end-to-end suite under
# valgrind's memcheck (spec/e2e/lib.sh says how), 0 none; unset or empty (the
# default) only the suites with the line "# spec/run.sh: valgrind", a
# memcheck pass over the gateway's main paths, its admin endpoint, the DLQ
# commands and inbox mode. Ignored under SAN=1 (valgrind cannot run an ASan
# binary): those suites then run as the others do.
VALGRIND=${VALGRIND:-}
case $VALGRIND in '' | 0 | 1) ;; *) echo "VALGRIND must be 0 or 1, not '$VALGRIND'" >&2; exit 2 ;; esac
# vg_of SCRIPT: the VALGRIND an end-to-end suite runs with.
vg_of() {
  if [ -n "$VALGRIND" ]; then echo "$VALGRIND"
  elif grep -qx '# spec/run.sh: valgrind' "$1"; then echo 1
  else echo 0; fi
}
JOBS=${TEST_JOBS:-2}
case $JOBS in ''|*[!0-9]*|0) echo "TEST_JOBS must be a positive number, not '$JOBS'" >&2; exit 2 ;; esac
passed=0
failed=0
LOGDIR=$(mktemp -d /tmp/errgate-tests.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$LOGDIR"; exit 130' INT TERM
SLOTS=1      # suites that may run at once (JOBS for the e2e suites)
NAMES=()     # suites started, in list order
NEXT=0       # index in NAMES of the next report to print

# suite_log NAME: the log of suite NAME; LOG.time holds its seconds and
# LOG.rc its exit code (written last: the suite is done once LOG.rc exists).
suite_log() { local n=${1//\//_}; echo "$LOGDIR/${n// /_}.log"; }

# report NAME: print the report of finished suite NAME; adds to passed/failed.
report() {
  local name=$1 log rc p f
  log=$(suite_log "$name")
  rc=$(cat "$log.rc")
  echo "# --- $name"
  p=$(grep -Ec '^ok [0-9]+' "$log")
  f=$(grep -Ec '^not ok [0-9]+' "$log")
  if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; echo "not ok - $name exited $rc"; fi
  grep -E '^(not ok|# )' "$log" | grep -v '^# scratch' | head -50
  [ "$f" != 0 ] && tail -30 "$log" | sed 's/^/#   | /'
  echo "# $name: $p passed, $f failed ($(cat "$log.time") s)"
  passed=$((passed + p))
  failed=$((failed + f))
}

# flush: report every finished suite at the head of the list; sets RUNNING
# to the number of suites started and not finished.
flush() {
  while [ "$NEXT" -lt "${#NAMES[@]}" ] && [ -e "$(suite_log "${NAMES[$NEXT]}").rc" ]; do
    report "${NAMES[$NEXT]}"; NEXT=$((NEXT + 1))
  done
  local i; RUNNING=0
  for ((i = NEXT; i < ${#NAMES[@]}; i++)); do
    [ -e "$(suite_log "${NAMES[$i]}").rc" ] || RUNNING=$((RUNNING + 1))
  done
}

# drain: wait for every started suite and report it.
drain() {
  flush
  while [ "$NEXT" -lt "${#NAMES[@]}" ]; do wait -n 2>/dev/null || sleep 0.1; flush; done
}

# run_suite NAME CMD...: run CMD as suite NAME in the background once fewer
# than SLOTS suites run.
run_suite() {
  local name=$1 log; shift
  echo "$name" | grep -Eq "$FILTER" || return 0
  flush
  while [ "$RUNNING" -ge "$SLOTS" ]; do wait -n 2>/dev/null || sleep 0.1; flush; done
  log=$(suite_log "$name")
  (
    t0=$SECONDS
    "$@" >"$log" 2>&1 </dev/null
    rc=$?
    echo $((SECONDS - t0)) >"$log.time"
    echo $rc >"$log.rc.tmp" && mv "$log.rc.tmp" "$log.rc"
  ) &
  NAMES+=("$name")
}

[ "$BROKER" = kafka ] && FILTER="^kafka/($FILTER)|^kafka/.*($FILTER)" # only the real-cluster suites
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
SLOTS=$JOBS
# e2e_suite NAME CMD...: runs an e2e suite, alone when its script says so.
e2e_suite() {
  local name=$1; shift
  if grep -qx '# spec/run.sh: alone' "${@: -1}"; then
    drain; run_suite "$name" "$@"; drain
  else
    run_suite "$name" "$@"
  fi
}
if [ "$BROKER" != kafka ]; then
  for t in spec/e2e/test_*.sh; do
    grep -qx '# spec/run.sh: kafka only' "$t" && continue
    e2e_suite "e2e/$(basename "$t" .sh)" env BROKER=embedded VALGRIND="$(vg_of "$t")" bash "$t"
  done
fi
# the suites marked "# spec/run.sh: kafka" again on a real Apache Kafka
# cluster each (spec/kafka/cluster.sh; its release is fetched once first),
# and those marked "# spec/run.sh: kafka only" there alone
if [ "$BROKER" != embedded ]; then
  kafka_suites=()
  for t in spec/e2e/test_*.sh; do
    grep -qxE '# spec/run.sh: kafka( only)?' "$t" && echo "kafka/$(basename "$t" .sh)" | grep -Eq "$FILTER" && kafka_suites+=("$t")
  done
  if [ ${#kafka_suites[@]} -gt 0 ]; then
    drain
    if ! spec/kafka/cluster.sh fetch >"$LOGDIR/kafka-fetch.log" 2>&1; then
      echo "not ok 1 - the Kafka release for the real-cluster suites could not be fetched"
      sed 's/^/#   | /' "$LOGDIR/kafka-fetch.log" | tail -20
      failed=$((failed + 1))
    else
      for t in "${kafka_suites[@]}"; do e2e_suite "kafka/$(basename "$t" .sh)" env BROKER=kafka VALGRIND="$(vg_of "$t")" bash "$t"; done
    fi
  fi
fi
drain
rm -rf "$LOGDIR"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
