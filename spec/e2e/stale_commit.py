"""stale_commit.py BOOTSTRAP GROUP TOPIC OUTDIR — a member of GROUP that
commits an old offset for a partition another member owns, as a previous
owner's late commit does (librdkafka re-sends a commit it deferred while the
coordinator was unavailable with the member's current generation; Kafka, and
the embedded broker, accept a commit from any member of the generation for
any partition).

It joins GROUP on TOPIC and writes its assignment to OUTDIR/assigned (one
partition number per line). When OUTDIR/commit.K appears (K = 1, 2, ... in
turn), holding "PARTITION OFFSET", it commits that offset synchronously and
writes OUTDIR/committed.K ("ok" or the error). It keeps polling, without
consuming a record of its own partitions (the test writes none there),
until OUTDIR/leave appears, then closes (leaves the group)."""
import os, sys, time
from confluent_kafka import Consumer, TopicPartition

bootstrap, group, topic, out = sys.argv[1:5]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
              "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "auto.offset.reset": "latest"})

def on_assign(consumer, parts):
    with open(os.path.join(out, "assigned.tmp"), "w") as f:
        f.write("".join("%d\n" % p.partition for p in parts if p.topic == topic))
    os.rename(os.path.join(out, "assigned.tmp"), os.path.join(out, "assigned"))

c.subscribe([topic], on_assign=on_assign)
k = 1
deadline = time.time() + 120
while not os.path.exists(os.path.join(out, "leave")) and time.time() < deadline:
    m = c.poll(0.2)
    if m is not None and not m.error():
        print("unexpected record at %s/%d/%d" % (m.topic(), m.partition(), m.offset()), file=sys.stderr)
    req = os.path.join(out, "commit.%d" % k)
    if os.path.exists(req):
        p, off = open(req).read().split()
        try:
            res = c.commit(offsets=[TopicPartition(topic, int(p), int(off))], asynchronous=False)
            errs = [str(tp.error) for tp in res if tp.error]
            status = "ok" if not errs else "error " + ",".join(errs)
        except Exception as e:  # a KafkaException: the commit was refused
            status = "error %s" % e
        with open(os.path.join(out, "committed.%d" % k), "w") as f:
            f.write(status + "\n")
        k += 1
c.close()
