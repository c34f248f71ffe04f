#!/usr/bin/python3
"""topics.py — creates topics on a real Kafka cluster for an end-to-end test
(spec/e2e/lib.sh's start_broker under BROKER=kafka), as `errgate broker
--topic NAME:PARTITIONS` pre-creates them on the embedded broker.

Usage: topics.py BOOTSTRAP NAME:PARTITIONS[@BROKER]...
Each topic is created through the Admin API with the cluster's default
replication factor (-1: every broker of a 3-broker cluster holds a copy)
and the partition count given; with @BROKER its only replica is on that
broker (a topic a test can take offline by stopping the broker); a topic that already exists with that count
is fine, with another count it is an error. Returns once every partition
of every topic has a leader in the metadata (a producer or a consumer
started next finds them). Exit status: 0 done, 1 failed (the reason on
stderr), 2 usage.
"""
import sys
import time

from confluent_kafka.admin import AdminClient, NewTopic


def main(argv):
    if len(argv) < 3:
        sys.stderr.write("usage: topics.py BOOTSTRAP NAME:PARTITIONS[@BROKER]...\n")
        return 2
    want, new = {}, []
    for spec in argv[2:]:
        name, _, n = spec.rpartition(":")
        n, _, broker = n.partition("@")
        if not name or not n.isdigit() or int(n) < 1 or (broker and not broker.isdigit()):
            sys.stderr.write("topics.py: %r is not NAME:PARTITIONS[@BROKER]\n" % spec)
            return 2
        want[name] = int(n)
        if broker:
            new.append(NewTopic(name, int(n), replica_assignment=[[int(broker)]] * int(n)))
        else:
            new.append(NewTopic(name, int(n), replication_factor=-1))
    admin = AdminClient({"bootstrap.servers": argv[1]})
    futures = admin.create_topics(new, request_timeout=30)
    for t, f in futures.items():
        try:
            f.result()
        except Exception as e:  # noqa: BLE001 (an existing topic is checked below)
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                sys.stderr.write("topics.py: cannot create %s: %s\n" % (t, e))
                return 1
    deadline = time.time() + 60
    while True:
        md = admin.list_topics(timeout=10)
        missing = []
        for t, n in want.items():
            tm = md.topics.get(t)
            if tm is None or tm.error is not None:
                missing.append(t)
            elif len(tm.partitions) != n:
                sys.stderr.write("topics.py: %s exists with %d partitions, not %d\n" % (t, len(tm.partitions), n))
                return 1
            elif any(p.leader < 0 for p in tm.partitions.values()):
                missing.append(t + " (a partition without a leader)")
        if not missing:
            return 0
        if time.time() > deadline:
            sys.stderr.write("topics.py: not ready after 60 s: %s\n" % ", ".join(missing))
            return 1
        time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
