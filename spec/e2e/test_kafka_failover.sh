#!/usr/bin/env bash
# test_kafka_failover.sh — guarantee 1 through a real cluster's failures
# (3 Apache Kafka brokers, replication 3, min.insync.replicas 2, acks=all):
# while records are being dead-lettered, the broker leading a DLQ partition
# is killed with SIGKILL, then the gateway; a new gateway takes over on the
# two brokers left; the dead broker comes back; then the group
# coordinator's broker is killed while the next gateway joins the group,
# and comes back too. In the end no record is missing, each has one kind of
# outcome, committed = end on every partition, and the audit topic errgate
# created is compacted. The embedded broker can show none of this (no
# replication, no failover, no Admin API).
# spec/run.sh: kafka only
source "$(dirname "$0")/lib.sh"
[ "$BROKER" = kafka ] || die "a real-cluster test: run it with BROKER=kafka"
N=${FAILOVER_RECORDS:-4000}
KA() { $PY "$ROOT/spec/e2e/kafka_admin.py" "$1" "$BOOTSTRAP" "${@:2}"; }
CL() { "$ROOT/spec/kafka/cluster.sh" "$@" --dir "$KAFKA_DIR" >>"$T/cluster-ops.out" 2>>"$T/cluster-ops.err"; }

start_broker --brokers 3 --topic src:4 --topic src.dlq:4 --topic src.quarantine:4
start_handler
gen_records "$N" "slow-20:50 transient-1:10 permanent:20 semantic:10 duplicate:5 ok:5" | produce src
write_config "$T/gw.lua" failover key
sed -i "s/concurrency = 16/concurrency = 8/" "$T/gw.lua"

start_gateway gw1 "$T/gw.lua"
wait_for 60 grep -q '"event":"assign"' "$T/gw1.err" || die "gw1: no assignment"
dlq_decisions() { [ "$(grep -c '"action":"dlq"' "$T/$1.err")" -ge "$2" ]; }
wait_for 60 dlq_decisions gw1 30 || die "gw1 dead-lettered nothing in 60 s"
lead=$(KA leader src.dlq 0) || die "no leader for src.dlq[0]"
kill -9 "$(kafka_broker_pid "$lead")"
diag "killed broker $lead (leads src.dlq[0]) after $(grep -c '"action":"dlq"' "$T/gw1.err") dead letters"
sleep 3
kill -9 "$GW_PID"; wait "$GW_PID" 2>/dev/null
diag "killed gw1; lag $(lag failover src)"

start_gateway gw2 "$T/gw.lua"
wait_for 90 grep -q '"event":"assign"' "$T/gw2.err" || die "gw2: no assignment with broker $lead down"
wait_for 60 dlq_decisions gw2 30 || die "gw2 dead-lettered nothing in 60 s with broker $lead down"
CL start --broker "$lead" || die "broker $lead did not come back: $(tail -3 "$T/cluster-ops.err")"
diag "broker $lead back; lag $(lag failover src)"
stop_gateway "$GW_PID"
check "gw2 stops cleanly with the cluster whole again (exit $RC)" [ "$RC" = 0 ]

coord=$(KA coordinator failover) || die "no coordinator for the group"
start_gateway gw3 "$T/gw.lua"
sleep 0.5
kill -9 "$(kafka_broker_pid "$coord")"
diag "killed broker $coord (the group's coordinator) while gw3 joins; lag $(lag failover src)"
wait_for 120 grep -q '"event":"assign"' "$T/gw3.err" || die "gw3: no assignment after the coordinator's broker died"
CL start --broker "$coord" || die "broker $coord did not come back: $(tail -3 "$T/cluster-ops.err")"
# librdkafka 2.0.2's idempotent lane producer can meet a fatal
# OUT_OF_ORDER_SEQUENCE_NUMBER when the restarted broker's log was truncated
# under it (seen in 1 of 4 runs): the gateway replaces the producer in place
# (lanes.c; lane_producer_replaced, said below). As the systemd unit does
# (Restart=on-failure), a gateway that still ends with exit 1 (more than 3
# such errors in 10 minutes) is started again, at most twice.
restarts=0
settled() { lag_is_zero failover src || ! kill -0 "$GW_PID" 2>/dev/null; }
while wait_for 300 settled && ! lag_is_zero failover src && ! kill -0 "$GW_PID" 2>/dev/null; do
  wait "$GW_PID"; rc=$?
  [ "$rc" = 1 ] && [ "$restarts" -lt 2 ] || break
  restarts=$((restarts + 1))
  diag "the gateway ended with exit 1 ($(grep -o '"event":"lane_producer_fatal","error":"[A-Z_]*"' "$T"/gw*.err | tail -1)); started again"
  start_gateway "gw3r$restarts" "$T/gw.lua"
done
n=$(cat "$T"/gw*.err | grep -c '"event":"lane_producer_replaced"')
[ "$n" -gt 0 ] && diag "lane producers replaced after a fatal error: $n"
if lag_is_zero failover src; then ok "every record committed after two broker kills and a gateway kill ($restarts restart(s) after exit 1)"
else not_ok "lag $(lag failover src)"; fi
stop_gateway "$GW_PID"
check "the last gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
"$EG" offsets -b "$BOOTSTRAP" -g failover src >"$T/offsets.txt"
check "committed offsets = end offsets on all 4 partitions" \
  awk '$1=="src" { n++; if ($3 != $4) bad++ } END { exit !(n == 4 && !bad) }' "$T/offsets.txt"
account failover 4 "$T/gw*.err"
pol=$(KA config errgate.audit cleanup.policy)
check "the audit topic errgate created is compacted (cleanup.policy=$pol)" [ "$pol" = compact ]
exit $FAILED
