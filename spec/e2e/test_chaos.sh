#!/usr/bin/env bash
# test_chaos.sh — two short seeds of the chaos runner (spec/chaos/chaos.py,
# `make chaos`): seed 1 (ordering "none") and seed 2 (ordering "partition"),
# 6,000 records each (full seeds use 50,000), three gateways, one fault of
# each kind but a broker down (kill -9, SIGTERM, a join, request errors, a
# lane fault past spill.after, a target outage and slowdown, reloads). A
# seed passes when no record is missing or misrouted, every gateway exited
# as asked, committed = end offsets and every spill journal is empty.
source "$(dirname "$0")/lib.sh"
for seed in 1 2; do
  rc=0
  out=$(BUILD=$BUILD $PY "$ROOT/spec/chaos/chaos.py" --short --seed "$seed" --out "$T" 2>&1) || rc=$?
  line=$(grep '^seed=' <<<"$out")
  if [ "$rc" = 0 ] && [ -n "$line" ]; then ok "chaos $line"
  else
    not_ok "chaos seed $seed (exit $rc): ${line:-no seed line}"
    sed 's/^/# /' <<<"$out" | head -60
  fi
done
