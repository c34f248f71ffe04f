#!/usr/bin/env bash
# test_kafka_zombie_leader.sh — guarantee 1 through a zombie leader (3
# Apache Kafka brokers, replication 3, min.insync.replicas 2, acks=all):
# while records are being dead-lettered, a broker leading a DLQ partition
# (not the group's coordinator) is frozen with SIGSTOP for 30 s (its sockets stay open, nothing
# answers: not a crash the clients can see, unlike test_kafka_failover's
# kill -9), then thawed with SIGCONT: it finds itself fenced, its
# partitions led elsewhere. The gateway keeps its records owned meanwhile
# (lane writes fail and are retried, nothing committed past them). In the
# end no record is missing, each has one kind of outcome, committed = end on
# every partition (account oracle), and every lane record written twice is
# one the gateway decided twice (redelivered: at-least-once) or reported
# rewritten (lane_copies.py), none from the idempotent producer itself; the
# numbers (progress while frozen, lane failures, redeliveries, time to
# drain after the thaw) are printed. The embedded broker
# cannot freeze a broker (its brokers are threads of one process).
# Observed (Kafka 4.4.0, 6000 records, 30 s freeze): no lane write failed
# and no report came without an offset (the idempotent producer waited the
# zombie out); a source partition led by the zombie, and one whose lane
# partition it led, committed nothing until the thaw (records owned,
# nothing skipped); every record committed 0-13 s after the thaw; when a
# rebalance came during the freeze, 2400 records were redelivered and their
# lane records written again (each one decided twice), never lost.
# spec/run.sh: kafka only
source "$(dirname "$0")/lib.sh"
[ "$BROKER" = kafka ] || die "a real-cluster test: run it with BROKER=kafka"
N=${ZOMBIE_RECORDS:-5000}
N2=$((N / 5))
FREEZE=${ZOMBIE_SECONDS:-30}
KA() { $PY "$ROOT/spec/e2e/kafka_admin.py" "$1" "$BOOTSTRAP" "${@:2}"; }

start_broker --brokers 3 --topic src:4 --topic src.dlq:4 --topic src.quarantine:4
start_handler
gen_records "$N" "slow-50:40 permanent:30 semantic:10 duplicate:5 ok:15" | produce src
write_config "$T/gw.lua" zombie key 'admin = { listen = "127.0.0.1:0" }, log = { decisions = "all" },'
sed -i "s/concurrency = 16/concurrency = 4/" "$T/gw.lua"
start_gateway gw "$T/gw.lua"; GW=$GW_PID
ADDR=$(admin_addr gw) || die "no admin endpoint: $(tail -3 "$T/gw.err")"
wait_for 60 grep -q '"event":"assign"' "$T/gw.err" || die "no assignment"
dlq_decisions() { grep -c '"action":"dlq"' "$T/gw.err"; }
enough() { [ "$(dlq_decisions)" -ge "$1" ]; }
wait_for 60 enough 50 || die "nothing dead-lettered in 60 s"
# the zombie: a broker leading a DLQ partition and, when one does, not the
# group's coordinator (a frozen coordinator is a lost session and a rejoin,
# test_kafka_failover's ground; here the leader of a lane partition)
coord=$(KA coordinator zombie) || coord="?"
dlqlead=$(for p in 0 1 2 3; do KA leader src.dlq "$p"; done)
[ -n "$dlqlead" ] || die "no leader for src.dlq"
lead=$(echo "$dlqlead" | grep -vx "$coord" | head -1)
[ -n "$lead" ] || lead=$(echo "$dlqlead" | head -1)
led=$(for p in 0 1 2 3; do echo "src.dlq[$p]:$(echo "$dlqlead" | sed -n "$((p + 1))p") src[$p]:$(KA leader src "$p")"; done | tr '\n' ' ')
pid=$(kafka_broker_pid "$lead")
lag0=$(lag zombie src)
kill -STOP "$pid" || die "cannot SIGSTOP broker $lead ($pid)"
t0=$SECONDS
d0=$(dlq_decisions)
diag "froze broker $lead (pid $pid; the group's coordinator: broker $coord; leaders: $led) after $d0 dead letters; lag $lag0"
while [ $((SECONDS - t0)) -lt "$FREEZE" ]; do
  sleep 5
  diag "+$((SECONDS - t0)) s frozen: $(( $(dlq_decisions) - d0 )) more dead letters, lane failures $(metric "$ADDR" errgate_lane_write_failures_total), handled $(wc -l <"$T/ok.log"), committed src[0..3]: $(timeout 10 "$EG" offsets -b "$BOOTSTRAP" -g zombie src 2>/dev/null | awk '$1=="src" {printf "%s ", $3}')"
done
kill -CONT "$pid"
t1=$SECONDS
d1=$(dlq_decisions)
diag "thawed broker $lead after $((t1 - t0)) s; $((d1 - d0)) dead letters while it was frozen"
# more records as the zombie wakes up fenced and rejoins the ISR
gen_records "$N2" "slow-50:40 permanent:30 semantic:10 duplicate:5 ok:15" | sed 's/"id":"r/"id":"s/' | produce src
check "the gateway is alive through the freeze" kill -0 "$GW"
if wait_drained zombie src 120; then ok "every record committed $((SECONDS - t1)) s after the thaw"; else not_ok "lag $(lag zombie src)"; fi
lf=$(metric "$ADDR" errgate_lane_write_failures_total)
stop_gateway "$GW"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
"$EG" offsets -b "$BOOTSTRAP" -g zombie src >"$T/offsets.txt"
check "committed offsets = end offsets on all 4 partitions" \
  awk '$1=="src" { n++; if ($3 != $4) bad++ } END { exit !(n == 4 && !bad) }' "$T/offsets.txt"
diag "src.dlq is led by brokers $(for p in 0 1 2 3; do KA leader src.dlq "$p"; done | tr '\n' ' ')now; lane failures $lf; lane_write_failed lines: $(grep -o '"event":"lane_write_failed".*"error":"[A-Z_]*"' "$T/gw.err" | sed 's/.*"error":"//; s/"//' | sort | uniq -c | tr '\n' ' ')"
diag "gateway events: $(grep -o '"event":"\(commit_failed\|revoke\|assign\|kafka_error\|consumer_error\|ack_without_offset\|lane_write_failed\|fetch_not_started\|assignment_incomplete\)"' "$T/gw.err" | cut -d'"' -f4 | sort | uniq -c | tr '\n' ' ')"
diag "$(grep '"event":"summary"' "$T/gw.err" | grep -o '"received":[0-9]*') for $((N + N2)) records"
account zombie 4 "$T/gw.err"
$PY "$ROOT/spec/e2e/lane_copies.py" "$T/dlq.json" "$T/q.json" -- "$T/gw.err" >"$T/copies.out"
rc=$?
cat "$T/copies.out"
check "every lane record written twice was decided twice or reported rewritten (the idempotent producer added no copy)" [ "$rc" = 0 ]
diag "wall time $SECONDS s"
exit $FAILED
