"""txn_lanes.py — read lane topics as a transactional reader does
(e2e/test_kafka_txn_lanes, lanes.transactional).

    txn_lanes.py BOOTSTRAP ISOLATION OUT.jsonl TOPIC...

ISOLATION is read_committed (what every errgate reader uses: only records
of committed transactions) or read_uncommitted (every record written,
aborted transactions' too). Writes one JSON object per record to OUT.jsonl,
as ladder_lanes.py does. A read_committed consumer never receives the
transactions' control records (commit and abort markers) nor aborted
records, so the end of a partition is reached when the consumer's position
(which steps over them) reaches the high watermark, not when the last
offset is received. Exits 1 with a one-line message when a topic cannot be
read or a partition's end is not reached within 20 s without progress.
"""
import json
import sys
import time

from confluent_kafka import Consumer, TopicPartition

from ladder_lanes import record_json


def read(bootstrap, isolation, topics):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-lanes-reader", "isolation.level": isolation,
                  "enable.auto.commit": False, "enable.partition.eof": False})
    ends, assign = {}, []
    for topic in topics:
        tm = c.list_topics(topic, timeout=10).topics.get(topic)
        if tm is None or tm.error is not None:
            sys.exit("txn_lanes.py: cannot read topic %s: %s" % (topic, tm.error if tm else "missing"))
        for p in sorted(tm.partitions):
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if hi > lo:
                ends[(topic, p)] = hi
                assign.append(TopicPartition(topic, p, lo))
    out = []
    if assign:
        c.assign(assign)
    last = time.time()
    while ends and time.time() - last < 20:
        m = c.poll(0.1)
        if m is not None:
            if m.error():
                sys.exit("txn_lanes.py: %s[%d]: %s" % (m.topic(), m.partition(), m.error()))
            out.append(record_json(m))
            last = time.time()
        for tp in c.position([TopicPartition(t, p) for (t, p) in ends]):
            if tp.offset >= ends[(tp.topic, tp.partition)]:
                del ends[(tp.topic, tp.partition)]
                last = time.time()
    c.close()
    if ends:
        sys.exit("txn_lanes.py: %s: the end was not reached" % ", ".join("%s[%d]" % k for k in sorted(ends)))
    return out


def main():
    bootstrap, isolation, path, topics = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    if isolation not in ("read_committed", "read_uncommitted"):
        sys.exit("txn_lanes.py: ISOLATION is read_committed or read_uncommitted")
    out = read(bootstrap, isolation, topics)
    out.sort(key=lambda r: (topics.index(r["topic"]), r["partition"], r["offset"]))
    with open(path, "w") as f:
        for r in out:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
