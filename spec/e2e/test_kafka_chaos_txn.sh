#!/usr/bin/env bash
# test_kafka_chaos_txn.sh — one short seed of the chaos runner in its
# transactional mode (`make chaos-txn`, spec/chaos/chaos.py --broker kafka
# --transactional --short): three gateways with lanes.transactional (no
# spill journal) on a fresh 3-broker cluster of the seed's own, 6,000
# records, a kill -9, a SIGTERM, a join, a target outage and slowdown,
# reloads, a broker kill -9 and a broker SIGSTOP. It passes when no record
# is missing or misrouted, every gateway exited as asked, committed = end
# offsets, and the auditor, reading read_committed, finds no record twice in
# any lane (lane_dup=0: the DLQ, the quarantine, each rung); the target's
# own duplicates (at least once) are allowed. About 70 s.
# spec/run.sh: kafka only
source "$(dirname "$0")/lib.sh"
[ "$BROKER" = kafka ] || die "a real-cluster test: run it with BROKER=kafka"
seed=${CHAOS_TXN_SEED:-1}
rc=0
out=$(BUILD=$BUILD $PY "$ROOT/spec/chaos/chaos.py" --broker kafka --transactional --short --seed "$seed" \
  --out "$T" --report "$T/chaos-report.txt" 2>&1) || rc=$?
line=$(grep '^seed=' <<<"$out")
if [ "$rc" = 0 ] && grep -q ' lane_dup=0 ' <<<"$line"; then ok "chaos transactional $line"
else
  not_ok "chaos transactional seed $seed (exit $rc): ${line:-no seed line}"
  sed 's/^/# /' <<<"$out" | head -60
fi
exit $FAILED
