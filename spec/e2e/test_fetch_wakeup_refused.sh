#!/usr/bin/env bash
# test_fetch_wakeup_refused.sh — brokers that refuse the fetch wake-up's
# asks (every ListOffsets answered TOPIC_AUTHORIZATION_FAILED, as a broker
# that denies the principal Describe would) get about one ask a second, not
# one every source.fetch_wakeup, and the records still go through.
#
# The setting of test_fetch_wakeup: batches of 100 records over a 50-record
# prefetch, so every batch waits for a wake-up, and the gateway asks each
# time it has taken a batch. First gateway A, the brokers answering: it asks
# once a batch, many times a second (the control: a gateway that did not back
# off would do the same while refused, since a refused ask still wakes the
# fetcher). Then the refusals begin, and gateway B, in the same group (so it
# starts from A's committed offsets: a new group's offset reset would ask
# ListOffsets itself and never start), handles as many records again: a
# failed ask waits a second before the next (gw_fetch_wakeup.c). `errgate
# offsets` asks ListOffsets too, so B's progress is read from its metrics.
# Gateway C, a new group started beside B, never starts reading (its offset
# reset is refused); the consumer errors it gets instead are not records,
# so it asks nothing.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/wakeup_lib.sh"
N=1000

start_broker --topic src:1 --topic src.dlq:1 --topic src.quarantine:1
wakeup_config "$T/gw.lua" g 20
succeeded_all() { [ "$(metric "$1" errgate_records_succeeded_total)" = "$N" ]; }
received() { admin_get "$1" /metrics | awk '$1 ~ /^errgate_records_received_total/{n += $2} END{print n + 0}'; }
# within_backoff ASKS SECONDS: at most one ask per second of work, and 2 more
within_backoff() { awk -v n="$1" -v s="$2" 'BEGIN{exit !(n <= 1.2 * s + 2)}'; }
beyond_backoff() { ! within_backoff "$@"; }

produce_batches "$N"
start_gateway a "$T/gw.lua"
A_PID=$GW_PID
A_ADDR=$(admin_addr a) || die "no admin endpoint: $(tail -3 "$T/a.err")"
wait_for 30 succeeded_all "$A_ADDR" || die "gateway A handled $(metric "$A_ADDR" errgate_records_succeeded_total) of $N"
A_ASKS=$(metric "$A_ADDR" errgate_fetch_wakeups_total)
stop_gateway "$A_PID"
A_S=$(active a)
diag "answered: $A_ASKS asks in $A_S s"
check "answered, the asks exceed one a second: the bound below can fail ($A_ASKS in $A_S s)" \
  beyond_backoff "$A_ASKS" "$A_S"

produce_batches "$N"
start_gateway b "$T/gw.lua"
B_PID=$GW_PID
sed 's/group = "g"/group = "gc"/' "$T/gw.lua" >"$T/gc.lua"
start_gateway c "$T/gc.lua"
C_PID=$GW_PID
B_ADDR=$(admin_addr b) || die "no admin endpoint: $(tail -3 "$T/b.err")"
C_ADDR=$(admin_addr c) || die "no admin endpoint: $(tail -3 "$T/c.err")"
# refused only once B and C have started (each reads the audit topic to its
# end at its start, with ListOffsets too) and before their assignments (~3 s
# later)
broker_ctl request-errors ListOffsets 100000 TOPIC_AUTHORIZATION_FAILED >/dev/null || die "request-errors refused"
[ "$(received "$B_ADDR")" = 0 ] || die "gateway B took records before the refusals began ($(received "$B_ADDR"))"
if wait_for 60 succeeded_all "$B_ADDR"; then ok "refused, all $N records are still handled"
else not_ok "refused: $(metric "$B_ADDR" errgate_records_succeeded_total) of $N handled after 60 s"; fi
B_ASKS=$(metric "$B_ADDR" errgate_fetch_wakeups_total)
T0=$(date +%s%N)
stop_gateway "$B_PID"
STOP_MS=$((($(date +%s%N) - T0) / 1000000))
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
check "its stop is not held up by an ask ($STOP_MS ms)" [ "$STOP_MS" -lt 5000 ]
B_S=$(active b)
diag "refused: $B_ASKS asks in $B_S s"
check "refused, it asked ($B_ASKS)" [ "${B_ASKS:-0}" -ge 1 ]
check "refused, it asks about once a second ($B_ASKS in $B_S s)" within_backoff "$B_ASKS" "$B_S"
check "the summary counts $N first-attempt successes" grep -q "\"succeeded_first\":$N," "$T/b.err"

# C, a new group, cannot start reading: its offset reset is refused, and the
# consumer errors that come of it every 100 ms are not records taken
check "C's offset reset was refused (consumer_error logged)" grep -q '"event":"consumer_error"' "$T/c.err"
check "C took no record ($(received "$C_ADDR"))" [ "$(received "$C_ADDR")" = 0 ]
check "C asked nothing: error events are not records ($(metric "$C_ADDR" errgate_fetch_wakeups_total))" \
  [ "$(metric "$C_ADDR" errgate_fetch_wakeups_total)" = 0 ]
stop_gateway "$C_PID"
check "C exits 0 (exit $RC)" [ "$RC" = 0 ]
