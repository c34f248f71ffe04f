#!/usr/bin/python3
"""probe.py — the checks spec/kafka/cluster.sh makes on the real Kafka brokers
errgate's tests run against.

cluster.sh is bash; what needs a Kafka client or a socket is here, run with
Debian's /usr/bin/python3 and python3-confluent-kafka, which is built on the
same librdkafka (2.0.2) errgate links, so every `up` also proves that client
can talk to the broker release under test. Three subcommands:

  ports K                 print K distinct free 127.0.0.1 ports, one a line
  ready  BOOT N TOPIC PIDS DEADLINE
                          wait until the metadata lists N brokers, create
                          TOPIC (N partitions, replication N: every broker
                          leads one), wait until each partition has a leader
                          and a full ISR, then produce one record to each
                          partition with acks=all and idempotence
  member BOOT ID PIDS DEADLINE
                          wait until broker ID, asked on its own address,
                          answers metadata that lists it, and every partition
                          with a leader that has ID as a replica has it in
                          its ISR (it has caught up: stopping another broker
                          next leaves every partition its min ISR)

When ERRGATE_PROBE_CONFIG names a file of librdkafka properties (KEY=VALUE
lines: a SASL cluster's admin credentials, see cluster.sh --sasl), every
client here connects with them.

PIDS is a comma-separated list of the broker processes cluster.sh started;
DEADLINE is a Unix time. Exit status: 0 done, 1 deadline passed (the last
thing still missing on stderr), 3 a broker process exited (cluster.sh then
reads its log: a port taken by another process makes it retry with new
ports), 2 usage.

Ports are drawn at random from 20000-32767, below Linux's ephemeral range
(32768-60999), so an outgoing connection of another test cannot take one
between the check here and the broker's bind; each is bind-checked while
the ones already chosen stay bound, so the K are distinct. Two clusters
started at once can still draw the same free port: one broker then fails to
bind, and cluster.sh starts that cluster again on new ports.
"""
import os
import random
import socket
import sys
import time

PORT_LO, PORT_HI = 20000, 32767


def ports(k):
    held = []
    tried = set()
    while len(held) < k:
        if len(tried) > 2000:
            sys.exit("probe: no free ports in %d-%d" % (PORT_LO, PORT_HI))
        p = random.randint(PORT_LO, PORT_HI)
        if p in tried:
            continue
        tried.add(p)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            s.close()
            continue
        held.append(s)
    for s in held:
        print(s.getsockname()[1])
        s.close()


def alive(pids):
    for p in pids:
        try:
            os.kill(p, 0)
        except ProcessLookupError:
            return p
        except PermissionError:
            pass
        # a zombie (exited, not yet reaped) counts as gone
        try:
            with open("/proc/%d/stat" % p) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return p
        except OSError:
            return p
    return None


def client_props():
    """The properties of $ERRGATE_PROBE_CONFIG (none when unset), without
    bootstrap.servers (each caller names the address it asks)."""
    path = os.environ.get("ERRGATE_PROBE_CONFIG")
    props = {}
    if not path:
        return props
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                k, v = line.split("=", 1)
                if k != "bootstrap.servers":
                    props[k] = v
    return props


def admin(boot):
    from confluent_kafka.admin import AdminClient
    # connection refusals while brokers start are expected: keep them quiet
    return AdminClient(dict(client_props(), **{
        "bootstrap.servers": boot, "log_level": 0,
        "error_cb": lambda e: None,
        "socket.connection.setup.timeout.ms": 2000,
        "reconnect.backoff.max.ms": 500}))


class Waiter:
    def __init__(self, pids, deadline):
        self.pids = pids
        self.deadline = deadline
        self.missing = "nothing yet"

    def step(self, what):
        """Record what is still missing; end the process when a broker has
        exited or the deadline passed, else sleep a little."""
        self.missing = what
        dead = alive(self.pids)
        if dead is not None:
            print("probe: broker process %d exited" % dead, file=sys.stderr)
            sys.exit(3)
        if time.time() > self.deadline:
            print("probe: timed out; still missing: %s" % what, file=sys.stderr)
            sys.exit(1)
        time.sleep(0.2)

    def remaining(self):
        return max(0.5, min(5.0, self.deadline - time.time()))


def metadata(a, w):
    try:
        return a.list_topics(timeout=w.remaining())
    except Exception as e:  # KafkaException: transport, timeout
        w.step("metadata (%s)" % e)
        return None


def ready(boot, n, topic, pids, deadline):
    from confluent_kafka import KafkaException, Producer
    from confluent_kafka.admin import NewTopic
    w = Waiter(pids, deadline)
    a = admin(boot)
    while True:
        md = metadata(a, w)
        if md is None:
            continue
        if len(md.brokers) < n:
            w.step("%d of %d brokers in metadata" % (len(md.brokers), n))
            continue
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            fs = a.create_topics([NewTopic(topic, num_partitions=n,
                                           replication_factor=n)],
                                 request_timeout=w.remaining())
            try:
                fs[topic].result()
            except KafkaException as e:
                if "TOPIC_ALREADY_EXISTS" not in str(e):
                    w.step("create topic %s (%s)" % (topic, e))
            continue
        bad = [p.id for p in t.partitions.values()
               if p.leader < 0 or len(p.isrs) < n]
        if len(t.partitions) < n or bad:
            w.step("leaders and full ISR of %s" % topic)
            continue
        break
    errs = []
    pr = Producer(dict(client_props(), **{"bootstrap.servers": boot, "acks": "all",
                   "enable.idempotence": True, "log_level": 0,
                   "error_cb": lambda e: None,
                   "message.timeout.ms": int(max(1.0, deadline - time.time()) * 1000)}))
    for p in range(n):
        pr.produce(topic, b"errgate harness check", partition=p,
                   on_delivery=lambda err, msg: err and errs.append(err))
    left = pr.flush(max(1.0, deadline - time.time()))
    if left or errs:
        print("probe: producing to %s failed: %s" % (topic, errs or "%d undelivered" % left),
              file=sys.stderr)
        sys.exit(1)


def member(boot, bid, pids, deadline):
    w = Waiter(pids, deadline)
    a = admin(boot)
    while True:
        md = metadata(a, w)
        if md is None:
            continue
        if bid not in md.brokers:
            w.step("broker %d in metadata (has %s)" % (bid, sorted(md.brokers)))
            continue
        lag = ["%s/%d" % (t.topic, p.id) for t in md.topics.values()
               for p in t.partitions.values()
               if p.leader >= 0 and bid in p.replicas and bid not in p.isrs]
        if lag:
            w.step("broker %d back in the ISR of %s" % (bid, ", ".join(lag[:5])))
            continue
        return


def main(argv):
    try:
        cmd = argv[1]
        if cmd == "ports":
            ports(int(argv[2]))
        elif cmd == "ready":
            ready(argv[2], int(argv[3]), argv[4],
                  [int(p) for p in argv[5].split(",")], float(argv[6]))
        elif cmd == "member":
            member(argv[2], int(argv[3]),
                   [int(p) for p in argv[4].split(",")], float(argv[5]))
        else:
            raise ValueError(cmd)
    except (IndexError, ValueError) as e:
        print("probe: usage: ports K | ready BOOT N TOPIC PIDS DEADLINE"
              " | member BOOT ID PIDS DEADLINE (%s)" % e, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv)
