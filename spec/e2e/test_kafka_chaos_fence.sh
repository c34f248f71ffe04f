#!/usr/bin/env bash
# test_kafka_chaos_fence.sh — a short seed of the chaos runner with per-key
# fencing (`make chaos-fence`, spec/chaos/chaos.py --broker kafka --fence
# MODE --short): seed 5 with source.fence = "ladder" and seed 2 with
# "ladder+dlq" (CHAOS_FENCE_SEED, CHAOS_FENCE_DLQ_SEED choose others), each with
# three gateways under ordering = "key" on a fresh 3-broker cluster of the
# seed's own, 6,000 records of 400 interleaved keys, a kill -9, a SIGTERM, a
# join, a target outage and slowdown, reloads, a broker kill -9 and a broker
# SIGSTOP. A seed passes when no record is missing or misrouted, every
# gateway exited as asked, committed = end offsets, followers carry their
# fence headers, and the per-key audit finds every key's outcomes in offset
# order whenever one was parked (inversions=0); the target's own duplicates
# (at least once) are allowed. About 100 s each.
# spec/run.sh: kafka only
source "$(dirname "$0")/lib.sh"
[ "$BROKER" = kafka ] || die "a real-cluster test: run it with BROKER=kafka"
runs="ladder:${CHAOS_FENCE_SEED:-5} ladder+dlq:${CHAOS_FENCE_DLQ_SEED:-2}"
for run in $runs; do
  mode=${run%%:*} seed=${run##*:} rc=0
  out=$(BUILD=$BUILD $PY "$ROOT/spec/chaos/chaos.py" --broker kafka --fence "$mode" --short --seed "$seed" \
    --out "$T" --report "$T/chaos-report-$mode.txt" 2>&1) || rc=$?
  line=$(grep '^seed=' <<<"$out")
  if [ "$rc" = 0 ] && grep -q ' missing=0 ' <<<"$line" && grep -q ' inversions=0 ' <<<"$line"; then
    ok "chaos fence $line"
  else
    not_ok "chaos fence $mode seed $seed (exit $rc): ${line:-no seed line}"
    sed 's/^/# /' <<<"$out" | head -60
  fi
done
exit $FAILED
