#!/usr/bin/env bash
# test_rebalance.sh — guarantees 1 and 2 across rebalances: a second
# gateway joins the group mid-stream and leaves again; the records are
# finished by whichever gateway owns them: 0 lost, committed offsets equal
# end offsets. Each revoke tries to commit the revoked partitions' finished
# prefix first. librdkafka 2.0.2's mock refuses OffsetCommit while its group
# is JOINING (rdkafka_mock_cgrp.c), where Kafka accepts it from the current
# generation, so here that commit fails: the test checks that the failure is
# loud and costs nothing but redeliveries, not that the commit lands.
source "$(dirname "$0")/lib.sh"
N=3000

start_broker --topic src:8 --topic src.dlq:8 --topic src.quarantine:8
start_handler
gen_records "$N" "ok:70 slow-200:20 permanent:10" | produce src
# the periodic commit comes 10 s after start, once the rebalances are under
# way; only the commits on revoke (sync, no "retried at the next commit")
# count for the check below
write_config "$T/gw.lua" reb none 'commit_interval = 10000,'
start_gateway gw1 "$T/gw.lua"; GW1=$GW_PID
wait_for 20 grep -q '"event":"decision"' "$T/gw1.err" || die "gw1 made no progress"
start_gateway gw2 "$T/gw.lua"; GW2=$GW_PID
wait_for 30 grep -q '"event":"revoke"' "$T/gw1.err" && ok "the second gateway's join revoked partitions of the first" ||
  not_ok "no revoke in gw1"
revoke_commit_failed() { grep '"event":"commit_failed".*rebalance in progress' "$1" | grep -vq 'retried at the next commit'; }
check "the commit tried on revoke is logged (the mock refuses it mid-rebalance)" revoke_commit_failed "$T/gw1.err"
# the second gateway works its partitions before it leaves
wait_for 30 grep -q '"event":"decision"' "$T/gw2.err" || diag "gw2 made no decision"
stop_gateway "$GW2"
check "the second gateway leaves cleanly (exit $RC)" [ "$RC" = 0 ]
wait_drained reb src 90 && ok "all $N records committed after the rebalances" || not_ok "lag $(lag reb src)"
stop_gateway "$GW1"
check "the first gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
account reb 8 "$T/gw*.err"
