#!/usr/bin/env bash
# test_replay_steer.sh — issue 28 in `errgate replay`: where a record goes
# back to is not the record's to say, and a stub is never republished empty.
#   - a Spring DLT record whose failed record carried original.topic =
#     errgate.audit goes back to the topic its Spring headers state
#     (payments, partition 2), never to the audit topic;
#   - one whose origin is another team's topic (billing: not among the
#     config's sources, the default allow-list) or __consumer_offsets is
#     refused, named on stderr, counted (refused-destination), and the
#     group does not move past it: the same command with --allow-to billing
#     replays it, __consumer_offsets stays refused; --to errgate.audit is a
#     usage error;
#   - stubs (errgate.value-omitted): one whose original is still at its
#     original.* coordinates is replayed with the original's key, value and
#     headers; one whose original is gone, and one whose coordinates hold
#     another record, are refused by name (stubs-refused); no empty record
#     is written.
source "$(dirname "$0")/lib.sh"

start_broker --topic payments:3 --topic billing:1 --topic errgate.audit:1 --topic payments-dlt:1 \
  --topic pay:2 --topic pay.dlq:1
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
p.produce("payments-dlt", key=b"copied", value=b'{"pay":1}', partition=0, headers=copied + spring("payments"))
p.produce("payments-dlt", key=b"otherteam", value=b'{"pay":2}', partition=0, headers=copied + spring("billing", 0, 9))
p.produce("payments-dlt", key=b"offsets", value=b'{"pay":3}', partition=0, headers=spring("__consumer_offsets", 0))
p.produce("pay", key=b"s1", value=b"BIG-ORIGINAL-VALUE", partition=1, headers=[("trace-id", b"t1")])
def stub(id_, off):
    return [("error.class", b"permanent"), ("error.code", b"http_400"), ("errgate.id", id_),
            ("original.topic", b"pay"), ("original.partition", b"1"), ("original.offset", off),
            ("errgate.value-omitted", b"18"), ("errgate.headers-omitted", b"1")]
p.produce("pay.dlq", key=b"s1", value=None, partition=0, headers=stub(b"pay/1/0", b"0"))
p.produce("pay.dlq", key=b"gone", value=None, partition=0, headers=stub(b"pay/1/5", b"5"))
p.produce("pay.dlq", key=b"other", value=None, partition=0, headers=stub(b"elsewhere/0/0", b"0"))
p.flush(30)
sys.exit(1 if len(p) else 0)
PY
cat >"$T/gw.lua" <<CFG
return {
  group = "g", kafka = { ["bootstrap.servers"] = "$BOOTSTRAP" },
  source = { topics = { "payments", "pay" } },
  target = { http = { url = "http://127.0.0.1:9/" } },
  policy = "$ROOT/policies/default.lua",
}
CFG
ends() { $PY -c '
import sys; from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "x"})
print(" ".join("%s=%d" % (t, sum(c.get_watermark_offsets(TopicPartition(t, p), timeout=5)[1] for p in range(n)))
               for t, n in (("payments", 3), ("billing", 1), ("errgate.audit", 1), ("pay", 2))))' "$BOOTSTRAP"; }

"$EG" replay -c "$T/gw.lua" --from payments-dlt >"$T/r1.out" 2>"$T/r1.err"; rc=$?
diag "$(cat "$T/r1.out" "$T/r1.err")"
check "replay: exit 1 with 2 refused destinations, 1 replayed (rc $rc)" \
  bash -c '[ "$1" = 1 ] && grep -q "replayed 1 .*refused-destination 2" "$2"' _ "$rc" "$T/r1.out"
check "the refused ones are named: billing not allowed, __consumer_offsets internal" \
  bash -c 'grep -q "refused payments-dlt/0/1 .*billing is not allowed (the default: payments, pay)" "$1" &&
           grep -q "refused payments-dlt/0/2 .*__consumer_offsets is a Kafka internal topic" "$1"' _ "$T/r1.err"
check "the copied original.topic steers nothing: payments got it, billing and the audit topic nothing" \
  [ "$(ends)" = "payments=1 billing=0 errgate.audit=0 pay=1" ]
$PY "$ROOT/spec/e2e/profile_reader.py" "$BOOTSTRAP" "$T/p.json" payments >/dev/null || die "cannot read payments"
check "to the partition Spring states (2)" $PY -c '
import json, sys; r = json.load(open(sys.argv[1])); sys.exit(0 if [(x["key"], x["partition"]) for x in r] == [("copied", 2)] else 1)' "$T/p.json"
check "the group stays before the first refused record (lag 2)" [ "$(lag "$(sed -n 's/.*group \([^ ]*\).*/\1/p;q' "$T/r1.out")" payments-dlt)" = 2 ]
"$EG" replay -c "$T/gw.lua" --from payments-dlt --allow-to billing >"$T/r2.out" 2>"$T/r2.err"; rc=$?
diag "$(cat "$T/r2.out")"
check "the same command with --allow-to billing replays it; __consumer_offsets stays refused (rc $rc)" \
  bash -c '[ "$1" = 1 ] && grep -q "replayed 1 .*refused-destination 1" "$2" && [ "$3" = "payments=1 billing=1 errgate.audit=0 pay=1" ]' \
  _ "$rc" "$T/r2.out" "$(ends)"
"$EG" replay -c "$T/gw.lua" --from payments-dlt --to errgate.audit >"$T/r3.out" 2>"$T/r3.err"; rc=$?
check "--to the audit topic is a usage error (rc $rc)" \
  bash -c '[ "$1" = 2 ] && grep -q "errgate.audit is the audit topic" "$2"' _ "$rc" "$T/r3.err"

"$EG" replay -c "$T/gw.lua" --from pay.dlq >"$T/s.out" 2>"$T/s.err"; rc=$?
diag "$(cat "$T/s.out" "$T/s.err")"
check "stubs: one fetched and replayed, two refused by name, exit 1 (rc $rc)" \
  bash -c '[ "$1" = 1 ] && grep -q "replayed 1 .*stubs-refused 2  stubs-fetched 1" "$2" &&
           grep -q "refused stub pay.dlq/0/1 .*pay/1/5" "$3" && grep -q "refused stub pay.dlq/0/2 .*is another" "$3"' \
  _ "$rc" "$T/s.out" "$T/s.err"
$PY "$ROOT/spec/e2e/profile_reader.py" "$BOOTSTRAP" "$T/pay.json" pay >/dev/null || die "cannot read pay"
check "the replayed stub is its original: key, value and own headers, plus the replay's; no empty record" $PY - "$T/pay.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
hd = lambda r: {n: bytes.fromhex(v).decode("utf-8", "replace") for n, v in r["headers"]}
out = [r for r in rows if r["offset"] > 0 or r["partition"] != 1]
print("# %r" % [(r["key"], r["partition"], r.get("value"), hd(r)) for r in out])
ok = len(out) == 1 and out[0]["key"] == "s1" and out[0]["partition"] == 1
if ok:
    h = hd(out[0])
    ok = h.get("trace-id") == "t1" and h.get("errgate.replays") == "1" and h.get("errgate.id") == "pay/1/0" \
        and "errgate.value-omitted" not in h and h.get("replay.from-dlq") == "pay.dlq/0/0"
sys.exit(0 if ok else 1)
PY
check "its value is the original's" bash -c 'kcat -C -b "$1" -t pay -p 1 -o 1 -c 1 -e -q 2>/dev/null | grep -qx BIG-ORIGINAL-VALUE' _ "$BOOTSTRAP"
echo "1..$TESTNO"
exit $FAILED
