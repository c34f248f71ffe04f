#!/usr/bin/env bash
# test_kafka_txn_source.sh — a source topic written by a transactional
# producer (Spring's KafkaTemplate in a transaction, Kafka Streams with
# exactly-once) on a real cluster: each commit leaves a control record
# that takes an offset and is never delivered, so the gateway sees its
# partition's offsets jump. Every record is handled once, the jumps are
# fetched again once before they are believed (a probe each, gw_offsets.c),
# said (errgate_source_offset_gaps_total, source_offset_gap naming the
# offsets), and the group's committed offset reaches the end, past the last
# marker too (its lag 0, not 1 for ever: the commit takes librdkafka's
# position once nothing is unfinished); a partition of only aborted records
# (nothing delivered) reaches the end too. The embedded broker writes no
# transaction markers.
# spec/run.sh: kafka only
source "$(dirname "$0")/lib.sh"
[ "$BROKER" = kafka ] || die "a real-cluster test: run it with BROKER=kafka"

start_broker --topic src:1 --topic src.dlq:1 --topic src.quarantine:1
start_handler
$PY - "$BOOTSTRAP" <<'PY' || die "cannot produce transactionally"
import json, sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "errgate-test-txn"})
p.init_transactions(30)
for t in range(3):
    p.begin_transaction()
    for i in range(10):
        p.produce("src", key=b"k%d" % i, value=json.dumps({"id": "t%d-%d" % (t, i), "mode": "ok"}).encode(), partition=0)
    p.commit_transaction(30)
PY
write_config "$T/gw.lua" txn none 'admin = { listen = "127.0.0.1:0" },'
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin endpoint"
handled() { [ "$(sort -u "$T/ok.log" 2>/dev/null | wc -l)" -ge 30 ]; }
wait_for 60 handled || not_ok "handled $(sort -u "$T/ok.log" | wc -l) of 30"
sleep 1
check "all 30 records handled, each once ($(wc -l <"$T/ok.log") deliveries)" [ "$(wc -l <"$T/ok.log")" = 30 ]
gaps=$(metric "$ADDR" errgate_source_offset_gaps_total)
check "the two commit markers inside the log are counted as jumps (gaps $gaps)" [ "$gaps" = 2 ]
probes=$(metric "$ADDR" errgate_source_offset_probes_total)
check "each jump was fetched again once before it was believed (probes $probes)" [ "$probes" = 2 ]
check "and no skipped record was found (refetched $(metric "$ADDR" errgate_source_offset_refetched_total))" \
  [ "$(metric "$ADDR" errgate_source_offset_refetched_total)" = 0 ]
check "and logged with their offsets (10 and 21)" \
  bash -c "grep -q '\"event\":\"source_offset_gap\".*src\\[0\\]: offsets 10..10' '$T/gw.err' && grep -q 'offsets 21..21' '$T/gw.err'"
if wait_drained txn src 20; then ok "committed = end: past the last commit marker too (lag 0)"; else
  not_ok "lag $(lag txn src): $("$EG" offsets -b "$BOOTSTRAP" -g txn src | tr '\n' ' ')"; fi
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]

# a partition holding only an aborted transaction's records (a rung whose
# writes a kill -9 aborted: the chaos runner's --transactional seed 1) delivers
# nothing; its committed offset must still reach the end, past the abort marker
create_topic src2 1
$PY - "$BOOTSTRAP" <<'PY' || die "cannot produce an aborted transaction"
import json, sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "errgate-test-txn-aborted"})
p.init_transactions(30)
p.begin_transaction()
for i in range(5):
    p.produce("src2", key=b"k%d" % i, value=json.dumps({"id": "aborted-%d" % i, "mode": "ok"}).encode(), partition=0)
p.flush(30)
p.abort_transaction(30)
PY
write_config "$T/gw2.lua" txn2 none
sed -i 's/topics = { "src" }/topics = { "src2" }/' "$T/gw2.lua"
start_gateway gw2 "$T/gw2.lua"
if wait_drained txn2 src2 30; then ok "only aborted records: committed = end, past the abort marker (lag 0)"; else
  not_ok "lag $(lag txn2 src2): $("$EG" offsets -b "$BOOTSTRAP" -g txn2 src2 | tr '\n' ' ')"; fi
check "none of them reached the target" bash -c "! grep -q aborted- '$T/ok.log'"
stop_gateway "$GW_PID"
check "that gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
exit $FAILED
