#!/usr/bin/env bash
# test_fetch_wakeup.sh — a drained prefetch queue is refilled within
# source.fetch_wakeup, not after librdkafka's one-second sleep.
#
# librdkafka 2.0.2's broker thread stops fetching a partition whose queue
# holds queued.min.messages and looks again only when something wakes it, at
# the latest after 1 s (gw_fetch_wakeup.c). The records are produced in batches
# of 100 and the prefetch holds 50: the embedded broker answers a fetch with
# one batch per partition, so every fetch fills the queue and stops the
# fetcher, and each further batch waits for a wake-up. Without the wake-up
# (the control) that is about a second a batch (5 to 7 s for the 1,000
# records here); with it (every 20 ms while records are taken) they take
# about 0.15 s. Both gateways run side by side on the same topic in their
# own groups. Idle, the wake-up asks nothing. (With batches of 10 the
# fetcher stopped only when it happened to outrun the gateway: the control
# took 1 to 3 s, too close to its bound.)
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/wakeup_lib.sh"
N=1000

start_broker --topic src:1 --topic src.dlq:1 --topic src.quarantine:1
produce_batches "$N"
wakeup_config "$T/on.lua" gon 20
wakeup_config "$T/off.lua" goff 0
start_gateway on "$T/on.lua"
ON_PID=$GW_PID
start_gateway off "$T/off.lua"
OFF_PID=$GW_PID
ON_ADDR=$(admin_addr on) || die "no admin endpoint: $(tail -3 "$T/on.err")"
OFF_ADDR=$(admin_addr off) || die "no admin endpoint: $(tail -3 "$T/off.err")"
wakeups() { metric "$1" errgate_fetch_wakeups_total; }

if wait_drained gon src 25; then ok "fetch_wakeup = 20: all $N records committed within 25 s"
else not_ok "fetch_wakeup = 20: lag $(lag gon src) after 25 s"; fi
if wait_drained goff src 60; then ok "fetch_wakeup = 0: all $N records committed within 60 s"
else not_ok "fetch_wakeup = 0: lag $(lag goff src) after 60 s"; fi
W1=$(wakeups "$ON_ADDR")
check "errgate_fetch_wakeups_total counts the asks ($W1)" [ "${W1:-0}" -gt 0 ]
check "with fetch_wakeup = 0 it asks nothing ($(wakeups "$OFF_ADDR"))" [ "$(wakeups "$OFF_ADDR")" = 0 ]
sleep 2
W2=$(wakeups "$ON_ADDR")
check "idle, it asks nothing ($W1 then $W2 over 2 s)" [ "$W1" = "$W2" ]

stop_gateway "$OFF_PID"
check "the control exits 0 (exit $RC)" [ "$RC" = 0 ]
stop_gateway "$ON_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
for g in on off; do
  check "$g: the summary counts $N first-attempt successes" grep -q "\"succeeded_first\":$N," "$T/$g.err"
done
ON_S=$(active on) OFF_S=$(active off)
diag "active seconds: $ON_S with the wake-up, $OFF_S without"
check "without it, the refills wait for librdkafka's sleep: the control takes at least 1 s ($OFF_S)" \
  awk -v o="$OFF_S" 'BEGIN{exit !(o >= 1.0)}'
check "with it, the same records take under a third of the control's time ($ON_S vs $OFF_S)" \
  awk -v a="$ON_S" -v o="$OFF_S" 'BEGIN{exit !(a * 3 < o)}'
