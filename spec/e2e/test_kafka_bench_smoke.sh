#!/usr/bin/env bash
# test_kafka_bench_smoke.sh — `make bench` on a real cluster still runs end
# to end: bench/run.sh with BENCH_BROKER=kafka and BENCH_SMOKE=1 (20,000
# records, one repetition, one kcat consume; the Spring Kafka peer on 2,000
# dead letters and HTTP records, built by Maven into its cache on the first
# run) exits 0 and prints every row of its table with a figure: errgate, kcat
# and Spring on the happy and dead-letter paths, errgate, the Python peer,
# Spring and wrk on HTTP and HTTPS, the errgate/Spring ratios, and the nine
# decision rows. Nothing here judges speed (the table's goals are reported,
# never asserted): it keeps the benchmark from rotting between quiet runs.
# About 40 s on an idle 2-core machine. Skipped under SAN=1 (the bench links
# its decision harness against the build's objects without sanitizers).
# spec/run.sh: kafka only
source "$(dirname "$0")/lib.sh"
[ "$BROKER" = kafka ] || die "a real-cluster test: run it with BROKER=kafka"
if [ "${SAN:-}" = 1 ]; then
  ok "bench smoke # SKIP under SAN=1"
  exit 0
fi

# the run's shape is this suite's, not the caller's environment's
for v in $(compgen -e | grep '^BENCH_'); do unset "$v"; done
rc=0
BENCH_SMOKE=1 BENCH_KCAT_RUNS=1 BENCH_BROKER=kafka BUILD=$BUILD \
  bash "$ROOT/bench/run.sh" >"$T/bench.out" 2>"$T/bench.err" || rc=$?
check "bench/run.sh with BENCH_BROKER=kafka exits 0 (exit $rc; $(grep '^bench:' "$T/bench.err" | tail -1))" [ "$rc" = 0 ]
check "the table names the real broker" grep -q '^broker: Apache Kafka [0-9.]*, 1 broker' "$T/bench.out"

# has_row LABEL: a row starting with LABEL with a records/s figure (its
# first whole-number field: labels, spreads, CPU, RSS and ratios have none)
has_row() {
  awk -v l="$1" 'index($0, l) == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+$/) { if ($i > 0) ok = 1; break } }
                 END { exit !ok }' "$T/bench.out"
}
for l in "happy  errgate" "happy  kcat" "happy  Spring Kafka" "dlq    errgate" "dlq    kcat" "dlq    Spring Kafka" \
  "http   errgate" "http   python peer" "http   Spring Kafka" "http   wrk" "https  errgate" "https  wrk"; do
  check "row '$l' has a records/s figure" has_row "$l"
done
check "the Spring rows carry errgate/Spring ratios of records/s, CPU and RSS" \
  [ "$(grep -c 'Spring Kafka.*errgate/Spring.*CPU x[0-9.e-]*.*RSS x[0-9.e-]*' "$T/bench.out")" = 3 ]
check "nine decision rows with a figure" [ "$(grep -cE '^[a-z]+\.lua:[a-z_0-9]+ +[0-9]+ ' "$T/bench.out")" = 9 ]
[ "$FAILED" = 0 ] || { echo "# bench stderr:"; tail -20 "$T/bench.err" | sed 's/^/#   /'; }
exit $FAILED
