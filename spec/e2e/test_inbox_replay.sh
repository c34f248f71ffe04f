#!/usr/bin/env bash
# test_inbox_replay.sh — inbox mode's replay action (`{ replay = "original" |
# TOPIC, after = DUR }`): the record waits on the inbox's replay rung
# (inbox.retry.replay, errgate.not-before = decision + after; nothing sleeps
# in memory), then goes out with key, value and its headers plus
# replay.from-dlq and errgate.replays + 1, to its original topic (the one
# its Spring headers state) or the named one; a record replayed 3 times
# already is dead-lettered (loop guard, reason loop_guard), and so is one
# whose original topic is unknown (no origin: not back into the inbox) or
# no topic name (reason replay_no_topic). The destinations are allowed by
# source.replay_allow (the inbox's name implies none). Audit: every
# inbox record has one outcome, inbox and rung committed to the end.
source "$(dirname "$0")/lib.sh"

start_broker --topic inbox:1 --topic orders:3 --topic orders-manual:1
$PY - "$BOOTSTRAP" <<'PY' || die "cannot produce"
import json, struct, sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "acks": "all"})
spring = [("kafka_dlt-original-topic", b"orders"), ("kafka_dlt-original-partition", struct.pack(">i", 2)),
          ("kafka_dlt-original-offset", struct.pack(">q", 41)),
          ("kafka_dlt-exception-fqcn", b"org.springframework.kafka.listener.ListenerExecutionFailedException"),
          ("kafka_dlt-exception-cause-fqcn", b"java.lang.NullPointerException"),
          ("kafka_dlt-exception-message", b"boom"), ("trace-id", b"t1")]
p.produce("inbox", key=b"npe", value=b'{"order":1}', headers=spring, partition=0)
p.produce("inbox", key=b"looped", value=b'{"order":2}', partition=0,
          headers=spring[:-1] + [("errgate.replays", b"3"), ("trace-id", b"t2")])
p.produce("inbox", key=b"slow", value=b'{"order":3}', partition=0, headers=[("x-dlq-metadata", json.dumps({
    "original_topic": "orders", "error_info": {"exception": "java.util.concurrent.TimeoutException"}}).encode())])
p.produce("inbox", key=b"other", value=b'{"order":4}', partition=0,
          headers=[("__connect.errors.topic", b"orders"), ("__connect.errors.exception.class.name", b"x.DataException")])
p.produce("inbox", key=b"noorigin", value=b'{"order":5}', partition=0,
          headers=[h for h in spring if h[0] not in ("kafka_dlt-original-topic",)])
p.produce("inbox", key=b"badorigin", value=b'{"order":6}', partition=0,
          headers=[("errgate.id", b"x/0/6"), ("error.code", b"NullPointerException"),
                   ("original.topic", b"orders\nevil"), ("original.partition", b"1")])
p.flush(30)
sys.exit(1 if len(p) else 0)
PY

cat >"$T/gw.lua" <<CFG
return {
  group = "rp",
  source = { topics = { "inbox" }, inbox = "auto", replay_allow = { "orders", "orders-*" } },
  policy = "$FIXTURES/inbox_replay.lua",
  commit_interval = 200,
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
}
CFG
start_gateway gw "$T/gw.lua"
wait_drained rp inbox 60 && ok "every inbox record committed" || not_ok "inbox lag $(lag rp inbox)"
rung_done() { [ "$(lag rp inbox.retry.replay)" = 0 ] && [ "$($PY -c '
import sys; from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "x"})
print(sum(c.get_watermark_offsets(TopicPartition(t, p), timeout=5)[1] for t, n in (("orders", 3), ("orders-manual", 1)) for p in range(n)))' "$BOOTSTRAP")" = 2 ]; }
wait_for 60 rung_done && ok "the replay rung is committed to its end, two records went out" ||
  not_ok "rung lag $(lag rp inbox.retry.replay)"
stop_gateway "$GW_PID"
$PY "$ROOT/spec/e2e/profile_reader.py" "$BOOTSTRAP" "$T/out.json" orders orders-manual inbox.retry.replay inbox.dlq ||
  die "cannot read the topics"
check "each record has one outcome: replayed after 3 s to orders[2], at once to orders-manual, loop guard and DLQ" $PY - "$T/out.json" "$T/gw.err" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
def hdrs(r):
    return {n: bytes.fromhex(v).decode("utf-8", "replace") for n, v in r["headers"]}
by = {}
for r in rows:
    by.setdefault(r["topic"], []).append(r)
dec = {}
for line in open(sys.argv[2]):
    try: e = json.loads(line)
    except ValueError: continue
    if e.get("event") == "decision": dec.setdefault(e["topic"] + "@" + str(e["offset"]), []).append(e)
bad = []
orders = by.get("orders", [])
if len(orders) != 1 or orders[0]["key"] != "npe":
    bad.append("orders: %r" % [r["key"] for r in orders])
else:
    r = orders[0]; h = hdrs(r)
    if r["partition"] != 2: bad.append("orders partition %d (want the original 2)" % r["partition"])
    if h.get("errgate.replays") != "1" or not h.get("replay.from-dlq", "").startswith("inbox.retry.replay/0/"):
        bad.append("orders headers %r" % {k: h.get(k) for k in ("errgate.replays", "replay.from-dlq")})
    if h.get("trace-id") != "t1" or h.get("kafka_dlt-exception-message") != "boom":
        bad.append("orders: original headers not carried")
    d = [e for e in dec.get("inbox@0", []) if e["action"] == "replay"]
    if len(d) != 1:
        bad.append("npe decisions %r" % dec.get("inbox@0"))
    else:
        import datetime
        t = datetime.datetime.strptime(d[0]["ts"][:23], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
        waited = r["timestamp"] - t.timestamp() * 1000
        print("# replayed %.0f ms after the decision" % waited)
        if waited < 2900: bad.append("replayed after %.0f ms, before after = 3 s" % waited)
manual = by.get("orders-manual", [])
if [r["key"] for r in manual] != ["slow"] or hdrs(manual[0]).get("errgate.replays") != "1":
    bad.append("orders-manual: %r" % [r["key"] for r in manual])
dlq = {r["key"]: hdrs(r) for r in by.get("inbox.dlq", [])}
if set(dlq) != {"looped", "other", "noorigin", "badorigin"}:
    bad.append("dlq: %r" % sorted(dlq))
elif dlq["looped"].get("errgate.reason") != "loop_guard" or dlq["looped"].get("errgate.replays") != "3":
    bad.append("looped: %r" % {k: dlq["looped"].get(k) for k in ("errgate.reason", "errgate.replays")})
else:
    for k in ("noorigin", "badorigin"):
        if dlq[k].get("errgate.reason") != "replay_no_topic":
            bad.append("%s: reason %r" % (k, dlq[k].get("errgate.reason")))
rung = by.get("inbox.retry.replay", [])
if sorted(r["key"] for r in rung) != ["badorigin", "looped", "noorigin", "npe", "slow"]:
    bad.append("rung: %r" % [r["key"] for r in rung])
for r in rung:
    h = hdrs(r)
    if h.get("errgate.action") != "replay" or not h.get("errgate.not-before") or h.get("errgate.replay-to") not in ("original", "orders-manual"):
        bad.append("rung record %s: %r" % (r["key"], {k: h.get(k) for k in ("errgate.action", "errgate.not-before", "errgate.replay-to")}))
for b in bad: print("# " + b)
sys.exit(1 if bad else 0)
PY
echo "1..$TESTNO"
exit $FAILED
