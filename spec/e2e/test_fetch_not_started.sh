#!/usr/bin/env bash
# test_fetch_not_started.sh — partitions librdkafka leaves assigned but never
# fetched are assigned again (found by make test: test_crash's last gateway
# left the 536 records of one of its 8 partitions for 240 s).
#
# librdkafka 2.0.2 starts an assigned partition once the coordinator has
# answered the committed-offset fetch (OffsetFetch); when that fails for good
# it reports a consumer error and never starts the partition. One injected
# OffsetFetch error, right before the gateway's first assignment, does it to
# all 4 partitions. The gateway's fetch watch (gw_unstarted.c) sees them
# "none" in librdkafka's statistics, assigns them again, and the records are
# all handled exactly once. Then, idle and drained, the partitions are
# fetching with nothing to read: the watch must not fire again.
source "$(dirname "$0")/lib.sh"
N=400

start_broker --topic src:4 --topic src.dlq:4 --topic src.quarantine:4
start_handler
gen_records "$N" "ok:1" | produce src
write_config "$T/gw.lua" fns none 'kafka = { ["session.timeout.ms"] = 6000, ["statistics.interval.ms"] = 1000 },
  admin = { listen = "127.0.0.1:0" },'
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin endpoint: $(tail -3 "$T/gw.err")"
# the group's first assignment comes about 3 s after the start (the broker's
# initial rebalance delay): the error is waiting for its OffsetFetch. Nothing
# else may ask for offsets meanwhile (lag would), so only the log is watched.
broker_ctl request-errors OffsetFetch 1 UNKNOWN_TOPIC_OR_PART >/dev/null || die "request-errors refused"
wait_for 20 grep -q '"event":"assign"' "$T/gw.err" || die "no assignment: $(tail -3 "$T/gw.err")"
wait_for 10 grep -q '"event":"consumer_error"' "$T/gw.err"
check "the committed-offset fetch failed (consumer_error logged)" grep -q '"event":"consumer_error"' "$T/gw.err"

if wait_drained fns src 45; then ok "all $N records committed within 45 s"; else not_ok "lag $(lag fns src) after 45 s"; fi
# The injected error usually leaves all 4 partitions unstarted, but librdkafka
# may have split the first OffsetFetch (then fewer are named): whichever it is,
# the watch fires once and assigns all 4 again.
FNS=$(grep '"event":"fetch_not_started"' "$T/gw.err")
check "fetch_not_started logged once, naming 1-4 unstarted partitions and assigning the 4 again" \
  [ "$(printf '%s\n' "$FNS" | grep -cE '[1-4] assigned partition\(s\) never started fetching \(src\[[0-3]\].*assigning the 4 partitions again')" = 1 ]
restarts() { admin_get "$ADDR" /metrics | awk '$1=="errgate_fetch_restarts_total"{print $2}'; }
check "errgate_fetch_restarts_total is 1 ($(restarts))" [ "$(restarts)" = 1 ]

# idle and drained: every partition is fetching with nothing to read; 12 s
# is six statistics reports, beyond the 10 s grace
sleep 12
check "an idle, fetching assignment is not assigned again ($(grep -c '"event":"fetch_not_started"' "$T/gw.err") lines)" \
  [ "$(grep -c '"event":"fetch_not_started"' "$T/gw.err")" = 1 ]
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
account fns 4 "$T/gw.err"
