#!/usr/bin/env bash
# test_kafka_fetch_wakeup.sh — issue 26 §5 for the fetch wake-up
# (gw_fetch_wakeup.c, source.fetch_wakeup): does a real broker need it,
# with errgate's default prefetch (queued.min.messages 20,000), not the
# 50-record prefetch test_fetch_wakeup.sh uses to make the embedded broker
# show it? librdkafka 2.0.2's broker thread stops fetching a partition
# whose queue is full and looks again only when woken, at the latest after
# a second; the sleep is the client's, so a real broker should show it too.
# 100,000 small records on one partition, a no-op Lua target: once with the
# wake-up off (0), then on (20 ms, the default), one gateway at a time.
# Observed on Kafka 4.4.0: 300,000 records took 10-11 s off and 0.45-0.5 s
# on (about 30,000 against 600,000 records a second): a real cluster needs
# it as much as the embedded broker.
# spec/run.sh: kafka only
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/wakeup_lib.sh"
[ "$BROKER" = kafka ] || die "a real-cluster test: run it with BROKER=kafka"
N=${WAKEUP_RECORDS:-100000}

start_broker --topic src:1 --topic src.dlq:1 --topic src.quarantine:1
gen_records "$N" "ok:1" | kcat -P -b "$BOOTSTRAP" -t src -K $'\t' -X acks=all 2>"$T/kcat.err" ||
  die "kcat produce failed: $(cat "$T/kcat.err")"
for g in off on; do
  wakeup_config "$T/$g.lua" "g$g" "$([ $g = on ] && echo 20 || echo 0)"
  # errgate's default prefetch: no queued.min.messages, no fetch size cap
  sed -i 's/, \["queued.min.messages"\] = 50, \["max.partition.fetch.bytes"\] = 4096//' "$T/$g.lua"
  grep -q 'queued.min.messages' "$T/$g.lua" && die "the config still caps the prefetch"
  start_gateway "$g" "$T/$g.lua"; P=$GW_PID
  ADDR=$(admin_addr "$g") || die "no admin endpoint: $(tail -3 "$T/$g.err")"
  if wait_drained "g$g" src 60; then ok "fetch_wakeup $g: all $N records committed"; else not_ok "$g: lag $(lag "g$g" src)"; fi
  W=$(metric "$ADDR" errgate_fetch_wakeups_total)
  stop_gateway "$P"
  check "$g: the gateway exits 0 with $N first-attempt successes (exit $RC)" \
    bash -c "[ $RC = 0 ] && grep -q '\"succeeded_first\":$N,' '$T/$g.err'"
  eval "W_$g=\$W"
done
check "the wake-up asked for end offsets when on ($W_on), never when off ($W_off)" [ "${W_on:-0}" -gt 0 -a "$W_off" = 0 ]
ON_S=$(active on) OFF_S=$(active off)
diag "active seconds for $N records: $OFF_S without the wake-up, $ON_S with it"
check "without it, the refills wait for librdkafka's sleep: at least 1 s ($OFF_S)" awk -v o="$OFF_S" 'BEGIN{exit !(o >= 1.0)}'
check "with it, the same records take under a third of that ($ON_S vs $OFF_S)" \
  awk -v a="$ON_S" -v o="$OFF_S" 'BEGIN{exit !(a * 3 < o)}'
diag "wall time $SECONDS s"
exit $FAILED
