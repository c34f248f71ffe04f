#!/usr/bin/env bash
# test_rebalance_paused.sh — a partition the gateway had paused when the
# group rebalanced is read again after it comes back (found by make chaos,
# seed 2). librdkafka keeps an application pause across a revoke and the
# re-assignment of the same partition to the same consumer; the gateway
# forgets a revoked partition, so without resuming it on assignment the
# partition stayed paused for good: nothing more was read, its lag grew.
#
# Ordering "partition" pauses a partition while its head record waits for
# an in-place retry: the record answers 429 with Retry-After 15 s (mode
# ratelimit-15000; the default policy honours it). While it waits, one
# injected Heartbeat error (REBALANCE_IN_PROGRESS) makes the gateway rejoin:
# partitions revoked, then assigned to it again. The record is redelivered
# from the committed offset (the handler answers 200 the second time) and
# the partition drains well before the 15 s the old retry would have taken.
source "$(dirname "$0")/lib.sh"

start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2
start_handler
{ printf 'k\t{"id":"held","mode":"ratelimit-15000"}\n'
  for i in $(seq 20); do printf 'k\t{"id":"a%d","mode":"ok"}\n' "$i"; done; } |
  kcat -P -b "$BOOTSTRAP" -t src -p 0 -K $'\t' -X acks=all || die "kcat produce failed"
for i in $(seq 20); do printf 'k\t{"id":"b%d","mode":"ok"}\n' "$i"; done |
  kcat -P -b "$BOOTSTRAP" -t src -p 1 -K $'\t' -X acks=all || die "kcat produce failed"
write_config "$T/gw.lua" paused partition
start_gateway gw "$T/gw.lua"
wait_for 30 grep -q '"event":"pause","topic":"src","partition":0,"reasons":"retry"' "$T/gw.err" ||
  die "src[0] was not paused for its retry: $(tail -3 "$T/gw.err")"
check "the head record waits for its Retry-After (15 s) in place" \
  grep -q '"event":"decision".*"id":"src/0/0".*"action":"retry".*"delay_ms":15000' "$T/gw.err"
broker_ctl request-errors Heartbeat 1 REBALANCE_IN_PROGRESS >/dev/null || die "request-errors refused"
wait_for 20 grep -q '"event":"revoke","msg":"src\[0\]' "$T/gw.err" || die "no rebalance: $(tail -3 "$T/gw.err")"
assigned_twice() { [ "$(grep -c '"event":"assign","msg":"src\[0\]"' "$T/gw.err")" -ge 2 ]; }
wait_for 20 assigned_twice || die "src[0] not assigned again"
t0=$SECONDS
if wait_drained paused src 10; then ok "src[0] is read again after the rebalance and drains ($((SECONDS - t0)) s after the re-assignment)"
else not_ok "src[0] stays paused after the rebalance: lag $(lag paused src)"; fi
check "the held record succeeded on its redelivery" grep -q '^ok held ' "$T/ok.log"
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
