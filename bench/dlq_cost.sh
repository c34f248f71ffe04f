#!/usr/bin/env bash
# dlq_cost.sh — the dead-letter path's work per record, for comparing builds
# on a loaded machine where records/s says little.
#
#   bash bench/dlq_cost.sh                     # this tree's build/
#   bash bench/dlq_cost.sh /tmp/old-tree .     # several trees, side by side
#
# One broker holds BENCH_COST_RECORDS (100,000) records over BENCH_PARTITIONS (8);
# for each tree (a checkout with build/errgate, lua/ and policies/ built by
# make), errgate runs a Lua target that answers 400 to every record, so the
# default policy dead-letters them all, BENCH_COST_REPS (3) times, each with
# a fresh group and DLQ topic, under perf stat and GNU time:
# - cpu_us/record: task-clock of the whole process (start-up and the group
#   join included; ~0.1 s) per record;
# - writes/record: write(2) calls per record (log lines);
# - faults/record: page faults per record (malloc growth);
# - rss_mib: peak resident set (GNU time %M);
# - records/s: the summary line's records_per_second;
# - log lines: lines errgate wrote to stderr.
# With BENCH_COST_ALLOCS=1, one more run per tree under valgrind (memcheck
# without leak check) on N/10 records prints allocs/record: heap
# allocations of the whole process (librdkafka's threads too) per record.
# These figures move with load; compare trees run in turn and take medians.
# BENCH_COST_KAFKA adds librdkafka properties to the gateway's kafka table
# (Lua: '["fetch.max.bytes"] = 1048576'), to try prefetch settings.
# BENCH_COST_SOURCE adds keys to its source table (Lua: "fetch_wakeup = 0").
# BENCH_COST_PROFILE=DIR: each run under `perf record -g` (or
# BENCH_COST_PERF_ARGS, e.g. "--call-graph dwarf -F 499") instead of perf
# stat, its data kept as DIR/runN.data (read with perf report -i); the CPU,
# write and fault columns are then empty.
set -u
source "$(dirname "$0")/lib.sh"
N=${BENCH_COST_RECORDS:-100000}
REPS=${BENCH_COST_REPS:-3}
P=${BENCH_PARTITIONS:-8}
[ $# -gt 0 ] || set -- "$ROOT"
command -v perf >/dev/null || die "needs perf"
[ -x "$GTIME" ] || die "needs GNU time ($GTIME)"
W=$(mktemp -d /tmp/errgate-dlqcost.XXXXXX)
trap cleanup EXIT
NV=$((N / 10))
start_broker --topic "flood:$P" --topic "floodv:$P"
produce flood "$N" permanent:1
expect_topic flood "$P" "$N"
[ "${BENCH_COST_ALLOCS:-0}" = 1 ] && { produce floodv "$NV" permanent:1; expect_topic floodv "$P" "$NV"; }
echo 'return function(record) return { status = 400, message = "bench: permanent" } end' >"$W/reject.lua"
# BENCH_COST_PATH=happy: a no-op target instead (every record succeeds)
[ "${BENCH_COST_PATH:-dlq}" = happy ] && echo 'return function(record) end' >"$W/reject.lua"

run=0
# one_run RUN TREE TOPIC WRAPPER...: errgate (under WRAPPER, group gRUN,
# DLQ topic TOPIC.dlq.RUN) until the group's lag is 0; prints the summary's
# records/s.
one_run() {
  local run=$1 tree=$2 topic=$3; shift 3
  cat >"$W/c$run.lua" <<CFG
return {
  kafka = { ["bootstrap.servers"] = "$BOOTSTRAP", ${BENCH_COST_KAFKA:-} },
  group = "g$run",
  source = { topics = { "$topic" }, ordering = "partition", ${BENCH_COST_SOURCE:-} },
  target = { lua = "$W/reject.lua" },
  policy = "$tree/policies/default.lua",
  lanes = { dlq = "$topic.dlq.$run", quarantine = "$topic.quarantine" },
  commit_interval = "200ms",
}
CFG
  ERRGATE_LUA_DIR="$tree/lua" "$@" "$tree/build/errgate" run -c "$W/c$run.lua" 2>"$W/e$run" &
  stop_when_drained $! "g$run" "$topic" || die "$tree: lag did not reach 0; log $W/e$run"
  json_num "$W/e$run" summary records_per_second
}

for tree in "$@"; do
  tree=$(cd "$tree" && pwd)
  [ -x "$tree/build/errgate" ] || die "$tree/build/errgate: run make there"
  for r in $(seq "$REPS"); do
    run=$((run + 1))
    if [ -n "${BENCH_COST_PROFILE:-}" ]; then
      mkdir -p "$BENCH_COST_PROFILE"; : >"$W/ps$run"
      rps=$(one_run "$run" "$tree" flood "$GTIME" -f '%M' -o "$W/t$run" perf record -q ${BENCH_COST_PERF_ARGS:--g} \
        -o "$BENCH_COST_PROFILE/run$run.data")
    else
      rps=$(one_run "$run" "$tree" flood "$GTIME" -f '%M' -o "$W/t$run" perf stat -x, \
        -e task-clock,page-faults,syscalls:sys_enter_write -o "$W/ps$run")
    fi
    awk -F, -v n="$N" -v rps="$rps" -v t="$tree" -v rss="$(tail -1 "$W/t$run")" -v lines="$(wc -l <"$W/e$run")" '
      $3=="task-clock"{cpu=$1*1000/n} $3=="page-faults"{pf=$1/n} $3=="syscalls:sys_enter_write"{w=$1/n}
      END{printf "%s: cpu_us/record %.2f  writes/record %.3f  faults/record %.3f  rss_mib %.1f  records/s %s  log lines %d\n",
          t, cpu, w, pf, rss/1024, rps, lines}' "$W/ps$run"
  done
  if [ "${BENCH_COST_ALLOCS:-0}" = 1 ]; then
    run=$((run + 1))
    one_run "$run" "$tree" floodv valgrind '--soname-synonyms=somalloc=*jemalloc*' --log-file="$W/vg$run" >/dev/null
    awk -v n="$NV" -v t="$tree" '/total heap usage/{gsub(",",""); printf "%s: allocs/record %.1f (valgrind, %d records)\n", t, $5/n, n}' "$W/vg$run"
  fi
done
