#!/usr/bin/python3
"""acl_probe.py — what one principal may do on a SASL cluster with ACLs
(e2e/test_kafka_acls.sh), through python3-confluent-kafka (librdkafka, the
client errgate links).

  acl_probe.py PROPS create NAME:PARTITIONS...  create topics (as an admin)
  acl_probe.py PROPS produce TOPIC              "key<TAB>value" lines on stdin
  acl_probe.py PROPS consume TOPIC              read the topic (no group)

PROPS is a file of librdkafka properties (KEY=VALUE lines, cluster.sh's
DIR/clients/NAME.properties). produce and consume print "ok N" (records
delivered, or read to the end) or "refused ERROR_NAME" (the broker's error,
e.g. TOPIC_AUTHORIZATION_FAILED) and exit 0 either way; anything else (no
answer within 30 s, a usage error) exits 1 or 2.
"""
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

DEADLINE_S = 30


def props(path):
    p = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                k, v = line.split("=", 1)
                p[k] = v
    p["log_level"] = 0
    return p


def create(p, specs):
    a = AdminClient(p)
    new = []
    for s in specs:
        name, _, n = s.rpartition(":")
        new.append(NewTopic(name, num_partitions=int(n), replication_factor=-1))
    for name, f in a.create_topics(new, request_timeout=DEADLINE_S).items():
        f.result()
    deadline = time.time() + DEADLINE_S
    while time.time() < deadline:
        md = a.list_topics(timeout=5)
        if all(t.topic in md.topics and all(pp.leader >= 0 for pp in md.topics[t.topic].partitions.values())
               for t in new):
            print("ok %d" % len(new))
            return 0
        time.sleep(0.2)
    print("topics have no leaders within %d s" % DEADLINE_S, file=sys.stderr)
    return 1


def produce(p, topic):
    errs, done = [], [0]

    def report(err, msg):
        if err:
            errs.append(err)
        else:
            done[0] += 1

    pr = Producer(dict(p, **{"acks": "all", "enable.idempotence": True,
                             "message.timeout.ms": DEADLINE_S * 1000,
                             "error_cb": lambda e: errs.append(e)}))
    n = 0
    for line in sys.stdin:
        key, _, value = line.rstrip("\n").partition("\t")
        pr.produce(topic, value.encode(), key.encode(), on_delivery=report)
        n += 1
    pr.flush(DEADLINE_S + 5)
    fatal = [e for e in errs if e.code() not in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)]
    if fatal:
        print("refused %s" % fatal[0].name())
    elif done[0] == n:
        print("ok %d" % n)
    else:
        print("undelivered %d of %d: %s" % (n - done[0], n, errs[:1]), file=sys.stderr)
        return 1
    return 0


def consume(p, topic):
    errs = []
    c = Consumer(dict(p, **{"group.id": "errgate-acl-probe", "enable.auto.commit": False,
                            "error_cb": lambda e: errs.append(e)}))
    try:
        md = c.list_topics(topic, timeout=10)
        t = md.topics.get(topic)
        if t is not None and t.error is not None:
            print("refused %s" % t.error.name())
            return 0
        parts = sorted(t.partitions) if t else []
        n = 0
        for pid in parts:
            try:
                lo, hi = c.get_watermark_offsets(TopicPartition(topic, pid), timeout=10)
            except KafkaException as e:
                print("refused %s" % e.args[0].name())
                return 0
            if hi <= lo:
                continue
            c.assign([TopicPartition(topic, pid, lo)])
            deadline = time.time() + DEADLINE_S
            got = lo
            while got < hi and time.time() < deadline:
                m = c.poll(0.5)
                if m is None:
                    continue
                if m.error():
                    print("refused %s" % m.error().name())
                    return 0
                n += 1
                got = m.offset() + 1
        print("ok %d" % n)
        return 0
    finally:
        c.close()


def main(argv):
    if len(argv) < 4 or argv[2] not in ("create", "produce", "consume"):
        print(__doc__, file=sys.stderr)
        return 2
    p = props(argv[1])
    try:
        if argv[2] == "create":
            return create(p, argv[3:])
        if argv[2] == "produce":
            return produce(p, argv[3])
        return consume(p, argv[3])
    except KafkaException as e:
        print("refused %s" % e.args[0].name())
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
