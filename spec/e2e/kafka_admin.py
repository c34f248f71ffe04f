#!/usr/bin/python3
"""kafka_admin.py — what a real-cluster end-to-end test asks a real Kafka
cluster (BROKER=kafka; spec/kafka/cluster.sh), through Debian's
python3-confluent-kafka (librdkafka 2.0.2, as errgate links).

  leader BOOTSTRAP TOPIC PARTITION   the node id of the partition's leader
  coordinator BOOTSTRAP GROUP        the node id of the group's coordinator
  txn-coordinator BOOTSTRAP TXNID    the node id of the transaction coordinator
                                     of transactional id TXNID
  config BOOTSTRAP TOPIC KEY         the topic's effective value of KEY
  partitions BOOTSTRAP TOPIC         the topic's partition count

Prints the answer on stdout; exit 1 with the reason on stderr when the
cluster cannot tell (within 20 s), 2 on usage.
"""
import sys
import time

from confluent_kafka.admin import AdminClient, ConfigResource


def java_hash(s):
    """Java's String.hashCode of s (UTF-16 code units), as a signed int."""
    h = 0
    b = s.encode("utf-16-be")
    for i in range(0, len(b), 2):
        h = (31 * h + (b[i] << 8 | b[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def txn_partition(txnid, count):
    """The __transaction_state partition of txnid: Kafka's
    TransactionStateManager.partitionFor, Utils.abs(hashCode) % count
    (Utils.abs: Math.abs, and 0 for Integer.MIN_VALUE). The leader of that
    partition is the transaction coordinator FindCoordinator (key type 1)
    names."""
    h = java_hash(txnid)
    return (0 if h == -(1 << 31) else abs(h)) % count


def main(a):
    if len(a) < 4:
        sys.stderr.write(__doc__)
        return 2
    # asking about a topic must never create it: a metadata request of a
    # producer-type client (the admin client is one) auto-creates a missing
    # topic with the broker's num.partitions (4) by default; the chaos
    # runner asks about lanes a starting gateway has yet to create
    admin = AdminClient({"bootstrap.servers": a[2], "allow.auto.create.topics": False})
    deadline = time.time() + 20
    last = "no answer"
    while time.time() < deadline:
        try:
            if a[1] == "leader" and len(a) == 5:
                t = admin.list_topics(a[3], timeout=5).topics.get(a[3])
                p = t.partitions.get(int(a[4])) if t and not t.error else None
                if p is not None and p.leader >= 0:
                    print(p.leader)
                    return 0
                last = "no leader for %s[%s]" % (a[3], a[4])
            elif a[1] == "coordinator" and len(a) == 4:
                for g in admin.list_groups(a[3], timeout=5):
                    if g.id == a[3] and g.broker is not None:
                        print(g.broker.id)
                        return 0
                last = "no coordinator answered for group %s" % a[3]
            elif a[1] == "txn-coordinator" and len(a) == 4:
                t = admin.list_topics("__transaction_state", timeout=5).topics.get("__transaction_state")
                if t is not None and t.error is None and t.partitions:
                    p = t.partitions.get(txn_partition(a[3], len(t.partitions)))
                    if p is not None and p.leader >= 0:
                        print(p.leader)
                        return 0
                last = "no transaction coordinator for %s" % a[3]
            elif a[1] == "config" and len(a) == 5:
                r = ConfigResource(ConfigResource.Type.TOPIC, a[3])
                cfg = admin.describe_configs([r], request_timeout=5)[r].result()
                print(cfg[a[4]].value)
                return 0
            elif a[1] == "partitions" and len(a) == 4:
                t = admin.list_topics(a[3], timeout=5).topics.get(a[3])
                if t is not None and t.error is None:
                    print(len(t.partitions))
                    return 0
                last = "no topic %s" % a[3]
            else:
                sys.stderr.write(__doc__)
                return 2
        except Exception as e:  # noqa: BLE001 (a broker down: ask again)
            last = str(e)
        time.sleep(0.5)
    sys.stderr.write("kafka_admin.py %s: %s\n" % (a[1], last))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
