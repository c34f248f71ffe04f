#!/usr/bin/env bash
# test_inbox_replay_steer.sh — issue 28: nobody who can merely produce to
# Kafka steers where inbox mode's replay writes. The inbox is a Spring DLT
# (payments-dlt) whose policy replays every record to "original":
#   - a record whose failed record carried original.topic = errgate.audit
#     (Spring's recoverer copies headers) goes to payments, the topic its
#     Spring headers state, to their partition, never to the audit topic;
#   - a record whose Spring origin is another team's topic (billing, not
#     allowed: the default allow-list of payments-dlt is payments), Kafka's
#     __consumer_offsets, the audit topic or a *.state topic is refused:
#     dead-lettered with reason replay_refused (an outcome, not a loss), its
#     DLQ record's original.topic the Spring one;
#   - records produced straight into the replay rung: one naming
#     __consumer_offsets in errgate.replay-to is refused the same way, and a
#     stub (errgate.value-omitted: its value was dropped as too large) is
#     never republished as an empty record: dead-lettered, reason
#     replay_stub.
# Audit: inbox and rung committed to their ends, every record one outcome.
source "$(dirname "$0")/lib.sh"

start_broker --topic payments-dlt:1 --topic payments:3 --topic billing:1 --topic errgate.audit:1 \
  --topic payments.state:1 --topic payments-dlt.retry.replay:1
$PY - "$BOOTSTRAP" <<'PY' || die "cannot produce"
import struct, sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "acks": "all"})
def spring(topic, partition=2, offset=41):
    return [("kafka_dlt-original-topic", topic.encode()), ("kafka_dlt-original-partition", struct.pack(">i", partition)),
            ("kafka_dlt-original-offset", struct.pack(">q", offset)),
            ("kafka_dlt-exception-fqcn", b"org.springframework.kafka.listener.ListenerExecutionFailedException"),
            ("kafka_dlt-exception-cause-fqcn", b"java.lang.NullPointerException"),
            ("kafka_dlt-exception-message", b"boom")]
copied = [("original.topic", b"errgate.audit"), ("original.partition", b"0"), ("original.offset", b"7")]
p.produce("payments-dlt", key=b"copied", value=b'{"pay":1}', headers=copied + spring("payments"))
p.produce("payments-dlt", key=b"otherteam", value=b'{"pay":2}', headers=copied + spring("billing", 0, 9))
p.produce("payments-dlt", key=b"offsets", value=b'{"pay":3}', headers=spring("__consumer_offsets"))
p.produce("payments-dlt", key=b"audit", value=b'{"pay":4}', headers=spring("errgate.audit", 0))
p.produce("payments-dlt", key=b"state", value=b'{"pay":5}', headers=spring("payments.state", 0))
rung = [("errgate.replay-to", b"original"), ("errgate.not-before", b"0"), ("error.class", b"bug"),
        ("previous.topic", b"payments-dlt"), ("errgate.id", b"payments-dlt/0/99")]
p.produce("payments-dlt.retry.replay", key=b"forged", value=b'{"pay":6}', partition=0,
          headers=[("errgate.replay-to", b"__consumer_offsets")] + rung[1:])
p.produce("payments-dlt.retry.replay", key=b"stub", value=None, partition=0,
          headers=rung + [("original.topic", b"payments"), ("original.partition", b"1"), ("original.offset", b"5"),
                          ("errgate.value-omitted", b"2000000")])
p.flush(30)
sys.exit(1 if len(p) else 0)
PY

cat >"$T/gw.lua" <<CFG
return {
  group = "st",
  source = { topics = { "payments-dlt" }, inbox = "auto" },
  policy = "$FIXTURES/inbox_replay_steer.lua",
  commit_interval = 200,
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
}
CFG
start_gateway gw "$T/gw.lua"
wait_drained st payments-dlt 60 && ok "every inbox record committed" || not_ok "inbox lag $(lag st payments-dlt)"
dlq_full() { [ "$(lag st payments-dlt.retry.replay)" = 0 ] && [ "$($PY -c '
import sys; from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "x"})
print(c.get_watermark_offsets(TopicPartition("payments-dlt.dlq", 0), timeout=5)[1])' "$BOOTSTRAP" 2>/dev/null)" = 6 ]; }
wait_for 60 dlq_full && ok "the replay rung is committed to its end, six records dead-lettered" ||
  not_ok "rung lag $(lag st payments-dlt.retry.replay)"
stop_gateway "$GW_PID"
$PY "$ROOT/spec/e2e/profile_reader.py" "$BOOTSTRAP" "$T/out.json" payments billing errgate.audit payments.state \
  payments-dlt.dlq || die "cannot read the topics"
check "the copied original.topic steers nothing: payments[2] got it, no replay reached billing, the audit or a state topic" \
  $PY - "$T/out.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
by = {}
for r in rows: by.setdefault(r["topic"], []).append(r)
bad = []
pay = by.get("payments", [])
if [(r["key"], r["partition"]) for r in pay] != [("copied", 2)]: bad.append("payments: %r" % [(r["key"], r["partition"]) for r in pay])
for t in ("billing", "errgate.audit", "payments.state"):
    if by.get(t): bad.append("%s got %r" % (t, [r["key"] for r in by[t]]))
for b in bad: print("# " + b)
sys.exit(1 if bad else 0)
PY
check "refused replays are outcomes: dead-lettered with reason replay_refused or replay_stub, the Spring origin kept" \
  $PY - "$T/out.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
hd = lambda r: {n: bytes.fromhex(v).decode("utf-8", "replace") for n, v in r["headers"]}
dlq = {r["key"]: hd(r) for r in rows if r["topic"] == "payments-dlt.dlq"}
want = {"otherteam": "replay_refused", "offsets": "replay_refused", "audit": "replay_refused", "state": "replay_refused",
        "forged": "replay_refused", "stub": "replay_stub"}
bad = []
if set(dlq) != set(want): bad.append("dlq keys %r" % sorted(dlq))
for k, reason in want.items():
    h = dlq.get(k, {})
    if h.get("errgate.reason") != reason: bad.append("%s: reason %r message %r" % (k, h.get("errgate.reason"), h.get("error.message")))
    print("# %s: %s" % (k, h.get("error.message")))
if dlq.get("otherteam", {}).get("original.topic") != "billing":
    bad.append("otherteam original.topic %r (want Spring's billing)" % dlq.get("otherteam", {}).get("original.topic"))
if dlq.get("stub", {}).get("errgate.value-omitted") != "2000000": bad.append("stub lost its marker")
for b in bad: print("# " + b)
sys.exit(1 if bad else 0)
PY
echo "1..$TESTNO"
exit $FAILED
