"""chaos.py — errgate's seeded chaos runner (`make chaos SEEDS=N`, `make chaos SEED=N`).

    chaos.py [--seeds N | --seed S [--seed S]...] [--first F] [--short]
             [--broker embedded|kafka] [--transactional] [--fence ladder|ladder+dlq]
             [--records N] [--keep] [--verbose] [--out DIR] [--report FILE]

Per seed, every random choice is drawn from the seed (random.Random(seed)):
the ordering (none, key or partition), the records' keys and modes, the
fault schedule, which instance each fault hits, and how long it lasts. What
the seed cannot fix is the machine's timing; a failing seed replays the same
schedule against the same records, which is what Jepsen-style replay means
for real processes.

A seed, in order:
  1. one `errgate broker --brokers 3`; topics src (8 partitions, keyed),
     src.dlq, src.quarantine and the rungs src.retry.{1..5}s (8 each);
  2. one flaky-handler (examples/flaky-handler) on a fixed port, its success
     log `ok <id> <errgate.id>`;
  3. records {"id": "rN", "mode": M} with keys k0..k996; 40% produced before
     the gateways start, the rest in waves (produce.py: idempotent,
     acks=all) while the faults run;
  4. three gateways in one group (gw0..gw2), each with its own spill journal
     (after_ms 1000), the ladder policy spec/chaos/policy.lua shared through
     one file (a reload reaches all of them);
  5. the fault schedule (below), each fault logged with its time;
  6. settle: faults off (request errors cleared, brokers up, handler running
     and not stopped), every instance slot ever used running again, until
     lag is 0 on the source and every rung and every journal is empty;
  7. SIGTERM to every gateway (exit 0 expected), then the checks: committed
     = end offsets on src and the rungs, journals empty, and the auditor
     (audit.py): missing, misrouted, duplicates;
  8. one line: seed=S records=N missing=M misrouted=X dup=D faults=... time=Ts

Faults (counts drawn per seed; a full seed has every kind):
  kill9       kill -9 of a running gateway, restarted 0.5-3 s later
  sigterm     SIGTERM of a running gateway (it must exit 0), restarted 2-5 s later
  join        a fourth gateway (gw3) joins the group
  req_err     COUNT (1-5) injected errors on the next requests of one of
              Produce, Fetch, OffsetCommit, JoinGroup, Heartbeat (retriable
              errors the clients must survive)
  broker_down one of the 3 brokers down for 2-4 s, then up; never the group
              coordinator's (COORDINATOR): librdkafka 2.0.2's mock aborts
              its group coordinator (Assertion '!member->resp' in
              rd_kafka_mock_cgrp_member_add / _sync_set) when members join
              and sync around its down and up (seeds 23 and 37, both with
              broker 2 down). Coordinator loss is exercised by the
              NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE request errors.
              Another broker's down can end the same way, rarely (seed 33,
              broker 1; three runs in 53 on 45e5686): such a run is void,
              and the seed is run again, at most twice (MOCK_ABORT)
  lane_fault  produces to one lane (DLQ, quarantine or the first rung) fail
              for 2-3 s, longer than spill.after (1 s): records spill
  outage      the handler is killed (connections refused: hold) for 2-3 s and
              restarted on its port (it forgets its per-id counters)
  slowdown    the handler is stopped (SIGSTOP) for 1-2.5 s, past the target's
              2 s timeout at the long end (timeouts: the ladder)
  reload      the shared policy file is rewritten as version 2 (or back to
              1) and the gateways see it (file watch, or SIGHUP); or it is
              replaced by a broken policy, SIGHUP sent, and restored 1.5 s
              later (a broken reload must change nothing)
--broker kafka (make chaos BROKER=kafka): the same seeds on a real Apache
Kafka cluster, a fresh one per seed (spec/kafka/cluster.sh up --brokers 3
in the seed's scratch directory, `down` at its end: about 5 s, and seeds
stay independent): replication 3, min.insync.replicas 2; the source topic
created through the Admin API (spec/e2e/topics.py), the lanes and rungs by
the gateways at their start. A seed draws the same records, ordering and
gateway-side counts as on the embedded broker; req_err, broker_down and
lane_fault (the embedded broker's control port) are left out, said in the
seed's line, and these come instead, in an 80 s window (30 s --short;
the records' waves spread over it too, so that the broker faults, about
40-80 s of them in a row, meet records in flight):
  broker_kill9  kill -9 of the broker in a role (the group coordinator's,
                or the leader of a partition of src, src.dlq or
                src.retry.1s: spec/e2e/kafka_admin.py at the moment of the
                fault), restarted 1-5 s later (cluster.sh start: back in
                the ISR); 1-2 per seed
  broker_stop   SIGSTOP of the broker in a role for 10-30 s (past the
                controller's broker session timeout, 4 s: a zombie leader
                whose leaderships move), SIGCONT, then back in the ISR
  rolling       each broker in turn (a seeded order) stopped (SIGTERM, a
                controlled shutdown) and started, back in the ISR before
                the next
These run one after another on a thread of their own, so at most one broker
is ever down or stopped (min ISR 2 of 3); a broker fault drawn while another
runs waits for it. The settle begins when the last has ended.

Anything a gateway does on its own (an exit nobody asked for) is a crash
and fails the seed. On failure the runner prints the seed, what failed and
the timed fault log, keeps the scratch directory, and `make chaos SEED=S`
replays it.

--transactional (make chaos-txn SEEDS=N; needs --broker kafka): the
gateways run with lanes.transactional (instance gwSLOT, so a restarted slot
fences its killed incarnation) and without the spill journal (the two are
refused together); the auditor runs with --no-lane-dup: a record twice in
the DLQ, the quarantine or one rung, as a read_committed reader sees them,
fails the seed (lane_dup in the seed's line). Handler duplicates stay
allowed: the target sees records at least once.

--fence ladder|ladder+dlq (make chaos-fence SEEDS=N [FENCE=ladder+dlq]: the
real cluster, short seeds unless LONG=1): per-key fencing under the same
faults (on the embedded broker the followers' rung writes pass its 5 MiB a
partition, it drops records, and the audit refuses to judge). The gateways run with
ordering "key" and source.fence = MODE; the records are drawn another way:
keys k0..k(N/15 - 1) interleaved at random (about 15 records a key), each
value {"id", "mode", "seq"} with seq the record's place among its key's
records as produced, and a mix with fewer records that fail for good
(FENCE_MIX: under "ladder+dlq" a dead-lettered record parks its key for the
rest of the run, nobody replays). The handler stamps each success
(--log-time), and the auditor runs with --fence MODE: the followers' headers
(errgate.fenced-by naming an earlier record of the key), their outcomes
(under "ladder+dlq" the lane they followed to), and for every key whose
record was parked, no later record of the key reaching its final outcome
before the parked one: inversions, in the seed's line; any fails the seed.
Not with --transactional (a follower rewritten to its rung counts as a rung
duplicate there).

--short: the make-test variant (spec/e2e/test_chaos.sh): 6,000 records, a
shorter fault window with one fault of each kind but a broker down; full
seeds use 50,000 records.
"""
import argparse
import heapq
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zlib

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", "build")
EG = os.path.join(ROOT, BUILD, "errgate")
FLAKY = os.path.join(ROOT, BUILD, "flaky-handler")
PY = "/usr/bin/python3"
POLICY = os.path.join(ROOT, "spec", "chaos", "policy.lua")
BROKEN = os.path.join(ROOT, "spec", "fixtures", "policies", "syntax_error.lua")
AUDIT = os.path.join(ROOT, "spec", "chaos", "audit.py")
PRODUCE = os.path.join(ROOT, "spec", "chaos", "produce.py")
CLUSTER = os.path.join(ROOT, "spec", "kafka", "cluster.sh")
PROBE = os.path.join(ROOT, "spec", "kafka", "probe.py")
TOPICS = os.path.join(ROOT, "spec", "e2e", "topics.py")
KADMIN = os.path.join(ROOT, "spec", "e2e", "kafka_admin.py")

PARTS = 8
RUNGS = ["1s", "2s", "3s", "4s", "5s"]
SPILL_AFTER_MS = 1000
GROUP = "chaos"
BROKERS = 3
# the mock's coordinator for GROUP: rd_kafka_mock_cluster_get_coord hashes
# the group id (CRC-32) over the brokers, ids 1..BROKERS in order
COORDINATOR = zlib.crc32(GROUP.encode()) % BROKERS + 1
FAULT_KINDS = ["kill9", "sigterm", "join", "req_err", "broker_down", "lane_fault", "outage", "slowdown", "reload",
               "broker_kill9", "broker_stop", "rolling"]
# the faults only the embedded broker's control port can make, and those
# only a real cluster (--broker kafka) can
EMBEDDED_ONLY = ("req_err", "broker_down", "lane_fault")
KAFKA_ONLY = ("broker_kill9", "broker_stop", "rolling")
# the roles a real-cluster broker fault picks its victim by (kafka_admin.py):
# the group coordinator's broker, or the leader of a partition of the
# source, the DLQ or the first rung
ROLES = ["coordinator", "src", "src.dlq", "src.retry.1s"]
REQ_ERRORS = {
    "Produce": ["NOT_ENOUGH_REPLICAS", "NOT_LEADER_FOR_PARTITION", "_TRANSPORT"],
    "Fetch": ["NOT_LEADER_FOR_PARTITION", "_TRANSPORT"],
    "OffsetCommit": ["REBALANCE_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR"],
    "JoinGroup": ["COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR"],
    "Heartbeat": ["COORDINATOR_NOT_AVAILABLE", "REBALANCE_IN_PROGRESS"],
}
# the record mixes: under ordering "partition" every record of a partition
# waits for the one before it (a transient one for its rung delays, in
# place), so that mix has few slow and transient records
MIX = {
    "free": [("ok", 52), ("slow-20", 12), ("transient-1", 10), ("transient-2", 5),
             ("permanent", 8), ("semantic", 6), ("duplicate", 7)],
    "partition": [("ok", 8200), ("slow-2", 300), ("transient-1", 8), ("permanent", 600),
                  ("semantic", 450), ("duplicate", 450)],
}
# --fence: records that fail for good are rarer (under "ladder+dlq" each
# parks its key for the rest of the run), transient ones (parked on a rung,
# then released) as common as in "free"
FENCE_MIX = [("ok", 62), ("slow-20", 10), ("transient-1", 12), ("transient-2", 5), ("permanent", 4),
             ("semantic", 3), ("duplicate", 4)]
# --fence: records per key, on average (keys interleaved at random)
FENCE_PER_KEY = 15


class SeedFailed(Exception):
    pass


# librdkafka 2.0.2's mock aborts in its group coordinator when a member's
# JoinGroup or SyncGroup arrives while it still holds that member's earlier
# one (spec/README.md, Chaos and soak): the embedded broker's own defect, not the
# gateway's. A seed that ends so is void, reported, and run again, at most
# VOID_RERUNS times; a seed still void after them fails. (make chaos SEEDS=50
# on 45e5686 voided seed 33 twice and seed 43 once: seed 33's schedule ends
# so in about half of its runs.)
MOCK_ABORT = "rdkafka_mock_cgrp.c"
VOID_RERUNS = 2


def now():
    return time.monotonic()


class Plan:
    """Everything a seed decides, drawn from random.Random(seed) in a fixed order."""

    def __init__(self, seed, records, short, broker="embedded", fence=None):
        rng = random.Random(seed)
        self.seed, self.short, self.broker, self.fence = seed, short, broker, fence
        self.transactional = False  # --transactional (run_seed sets it)
        self.ordering = rng.choices(["none", "key", "partition"], weights=[3, 1, 1])[0]
        if fence:
            # keyed records with their per-key sequence, ordering "key"
            self.ordering = "key"
            modes, weights = [m for m, _ in FENCE_MIX], [w for _, w in FENCE_MIX]
            nkeys, seq = max(1, records // FENCE_PER_KEY), {}
            self.records = []
            for i, m in enumerate(rng.choices(modes, weights=weights, k=records), 1):
                k = rng.randrange(nkeys)
                seq[k] = seq.get(k, 0) + 1
                self.records.append("k%d\t{\"id\":\"r%d\",\"mode\":\"%s\",\"seq\":%d}\n" % (k, i, m, seq[k]))
        else:
            mix = MIX["partition" if self.ordering == "partition" else "free"]
            modes, weights = [m for m, _ in mix], [w for _, w in mix]
            self.records = ["k%d\t{\"id\":\"r%d\",\"mode\":\"%s\"}\n" % (rng.randrange(997), i, m)
                            for i, m in enumerate(rng.choices(modes, weights=weights, k=records), 1)]
        # the faults: kind, time offset from the gateways' start, parameters
        window = 10.0 if short else 24.0
        counts = {"kill9": rng.randint(1, 3), "sigterm": 1, "join": 1, "req_err": rng.randint(2, 4),
                  "broker_down": 0 if short else 1, "lane_fault": rng.randint(1, 2), "outage": 1,
                  "slowdown": 1, "reload": rng.randint(2, 4), "broker_kill9": 0, "broker_stop": 0, "rolling": 0}
        if short:
            counts.update(kill9=1, req_err=2, lane_fault=1, reload=2)
        if broker == "kafka":
            # the same records and gateway-side counts as the embedded seed
            # (drawn above, in the same order); the control port's faults
            # replaced by the real cluster's, which take longer (a broker
            # start waits for the ISR): a longer window
            counts.update({k: 0 for k in EMBEDDED_ONLY})
            counts.update(broker_kill9=1 if short else rng.randint(1, 2), broker_stop=1, rolling=0 if short else 1)
            window = 30.0 if short else 80.0
        kinds = [k for k in FAULT_KINDS for _ in range(counts[k])]
        rng.shuffle(kinds)
        self.faults = []
        self.window = window
        reloads = 0
        for i, kind in enumerate(kinds):
            t = 2.0 + window * (i + rng.random() * 0.8) / len(kinds)
            f = {"kind": kind, "t": round(t, 2), "pick": rng.random()}
            f.update(fault_params(rng, kind, self.ordering, reloads == 0))
            reloads += kind == "reload"
            self.faults.append(f)
        # the records produced while the faults run, in 6 waves
        self.head = int(records * 0.4)
        self.waves = [round(2.0 + window * w / 6, 2) for w in range(6)]


def fault_params(rng, kind, ordering, first_reload):
    """A fault's parameters, drawn from rng (see the table at the top)."""
    if kind == "kill9":
        return {"back": round(rng.uniform(0.5, 3.0), 2)}
    if kind == "sigterm":
        return {"back": round(rng.uniform(2.0, 5.0), 2)}
    if kind == "req_err":
        api = rng.choice(sorted(REQ_ERRORS))
        return {"api": api, "err": rng.choice(REQ_ERRORS[api]), "count": rng.randint(1, 5)}
    if kind == "broker_down":
        b = rng.randint(1, BROKERS)  # the same draws as before: other seeds keep their schedules
        return {"broker": b if b != COORDINATOR else b % BROKERS + 1, "back": round(rng.uniform(2.0, 4.0), 2)}
    if kind == "lane_fault":
        lanes = ["src.dlq", "src.quarantine"] + ([] if ordering == "partition" else ["src.retry.1s"])
        return {"topic": rng.choice(lanes), "secs": rng.randint(2, 3),
                "err": rng.choice(["LEADER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PART"])}
    if kind in ("outage", "slowdown"):
        return {"back": round(rng.uniform(2.0, 3.0) if kind == "outage" else rng.uniform(1.0, 2.5), 2)}
    if kind == "broker_kill9":
        return {"role": rng.choice(ROLES), "part": rng.randrange(PARTS), "back": round(rng.uniform(1.0, 5.0), 2)}
    if kind == "broker_stop":
        # a zombie: SIGSTOP past the controller's broker session timeout
        # (9 s): its leaderships move, and it comes back fenced
        return {"role": rng.choice(ROLES), "part": rng.randrange(PARTS), "back": round(rng.uniform(10.0, 30.0), 2)}
    if kind == "rolling":
        order = [1, 2, 3]
        rng.shuffle(order)
        return {"order": order}
    if kind == "reload":
        # the first reload changes the policy, so every seed loads two versions
        return {"how": "file" if first_reload else rng.choice(["file", "sighup", "broken"])}
    return {}


class Run:
    """One seed's processes and scratch directory; every process it starts it stops."""

    def __init__(self, plan, out_dir, verbose):
        self.plan, self.verbose = plan, verbose
        self.dir = tempfile.mkdtemp(prefix="errgate-chaos.%d." % plan.seed, dir=out_dir)
        self.flog = []  # the timed fault log
        self.t0 = now()
        self.gws = {}  # slot -> {"proc", "name"}; proc None while down
        self.terminating = {}  # slot -> (proc, name, deadline, why): SIGTERM sent
        self.starts = {}
        self.handler = None
        self.stopped = False  # handler SIGSTOPped
        self.producers = []
        self.failures = []
        self.group = GROUP
        self.protected = set()  # slots no kill9 or sigterm may pick (the soak's observed instance)
        self.marks = open(os.path.join(self.dir, "marks.txt"), "w")
        self.lock = threading.Lock()  # the fault log and the marks: the broker worker writes them too
        self.kafka = plan.broker == "kafka"
        self.broker = None
        self.control = None
        # the real cluster's broker faults run one after another on a thread
        # of their own (a broker start waits for the ISR: tens of seconds),
        # so that at most one broker is ever down or stopped
        self.bq = []
        self.bcond = threading.Condition()
        self.bthread = None
        self.abort = threading.Event()
        self.frozen = None  # the broker SIGSTOPped now
        self.cluster_error = None
        self.cluster_ops = None  # the cluster.sh start/stop running now
        self.unplanned = 0  # brokers found dead that no fault of ours had stopped
        self.ours_down = set()  # brokers a fault of ours has down now
        self.noticed = set()  # pids of brokers seen dead unplanned (said once)

    # ---- logging and helpers ------------------------------------------------
    def log(self, what):
        line = "t=%6.2fs %s" % (now() - self.t0, what)
        with self.lock:
            self.flog.append(line)
            if self.verbose:
                print("#   " + line, flush=True)

    def mark(self, label):
        """Notes the handler log's size now, for the attribution of duplicates."""
        try:
            size = os.path.getsize(os.path.join(self.dir, "ok.log"))
        except OSError:
            size = 0
        with self.lock:
            self.marks.write("%d %s\n" % (size, label))
            self.marks.flush()

    def path(self, name):
        return os.path.join(self.dir, name)

    def spawn(self, name, args):
        out = open(self.path(name + ".out"), "w")
        err = open(self.path(name + ".err"), "w")
        return subprocess.Popen(args, stdout=out, stderr=err, stdin=subprocess.DEVNULL)

    def wait_line(self, name, prefix, limit):
        end = now() + limit
        while now() < end:
            for line in open(self.path(name + ".out")):
                if line.startswith(prefix):
                    return line[len(prefix):].strip()
            time.sleep(0.05)
        raise SeedFailed("%s printed no %s in %d s: %s" % (name, prefix, limit, self.tail(name + ".err")))

    def tail(self, name, n=3):
        try:
            return " | ".join(l.rstrip() for l in open(self.path(name), errors="replace").readlines()[-n:])
        except OSError:
            return "(no %s)" % name

    def ctl(self, *words):
        """One command on the broker's control socket; the reply line."""
        host, port = self.control.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall((" ".join(str(w) for w in words) + "\n").encode())
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                buf += chunk
        reply = buf.decode().strip()
        if not reply.startswith("ok"):
            raise SeedFailed("broker refused %r: %s" % (" ".join(map(str, words)), reply))
        return reply

    # ---- processes ----------------------------------------------------------
    def start_broker(self):
        if self.kafka:
            return self.start_cluster()
        topics = ["src", "src.dlq", "src.quarantine"] + ["src.retry." + r for r in RUNGS]
        args = [EG, "broker", "--brokers", str(BROKERS)]
        for t in topics:
            args += ["--topic", "%s:%d" % (t, PARTS)]
        self.broker = self.spawn("broker", args)
        self.bootstrap = self.wait_line("broker", "bootstrap.servers=", 15)
        self.control = self.wait_line("broker", "control=", 15)

    # ---- the real cluster (--broker kafka) --------------------------------------
    def start_cluster(self):
        """spec/kafka/cluster.sh up --brokers 3 in the scratch directory; the
        source topic through the Admin API (topics.py: replication 3, min ISR
        2); the gateways create their lanes and rungs at start."""
        self.kdir = self.path("kafka")
        r = subprocess.run([CLUSTER, "up", "--dir", self.kdir, "--brokers", str(BROKERS)],
                           stdout=subprocess.PIPE, stderr=open(self.path("cluster-up.err"), "w"), text=True,
                           timeout=300)
        if r.returncode != 0:
            raise SeedFailed("the Kafka cluster did not start: %s" % self.tail("cluster-up.err", 5))
        env = dict(l.split("=", 1) for l in r.stdout.splitlines() if "=" in l)
        self.bootstrap = env["bootstrap.servers"]
        self.kports = {b: int(env["broker.%d.port" % b]) for b in range(1, BROKERS + 1)}
        r = subprocess.run([PY, TOPICS, self.bootstrap, "src:%d" % PARTS], capture_output=True, text=True,
                           timeout=120)
        if r.returncode != 0:
            raise SeedFailed("topics.py: %s" % r.stderr.strip()[-400:])
        self.bthread = threading.Thread(target=self.broker_worker, daemon=True)
        self.bthread.start()

    def kpid(self, b):
        """Broker b's running pid (cluster.sh keeps it in broker-N/pid), or None."""
        try:
            return int(open(os.path.join(self.kdir, "broker-%d" % b, "pid")).read().strip())
        except (OSError, ValueError):
            return None

    def cluster(self, *words, limit=240):
        """cluster.sh WORDS --dir DIR on the broker worker; its stderr in cluster-ops.err."""
        with open(self.path("cluster-ops.err"), "a") as err:
            err.write("--- t=%.2f %s\n" % (now() - self.t0, " ".join(map(str, words))))
            err.flush()
            p = subprocess.Popen([CLUSTER] + [str(w) for w in words] + ["--dir", self.kdir],
                                 stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL)
            self.cluster_ops = p
            try:
                rc = p.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                p.terminate()
                rc = p.wait()
            self.cluster_ops = None
        if rc != 0 and not self.abort.is_set():
            raise RuntimeError("cluster.sh %s exited %s: %s" % (" ".join(map(str, words)), rc,
                                                                 self.tail("cluster-ops.err", 4)))

    def victim(self, f):
        """The broker a fault's role names now (kafka_admin.py), or a fallback by partition."""
        args = ["coordinator", self.bootstrap, self.group] if f["role"] == "coordinator" else \
            ["leader", self.bootstrap, f["role"], str(f["part"])]
        try:
            r = subprocess.run([PY, KADMIN] + args, capture_output=True, text=True, timeout=40)
            b = int(r.stdout.strip())
            if 1 <= b <= BROKERS:
                return b, ("coordinator of %s" % self.group if f["role"] == "coordinator"
                           else "leader of %s[%d]" % (f["role"], f["part"]))
        except (subprocess.TimeoutExpired, ValueError):
            pass
        return f["part"] % BROKERS + 1, "%s unresolved, by partition" % f["role"]

    def broker_fault(self, f, label):
        """Queues a broker fault for the worker (it may start after the one before ends)."""
        with self.bcond:
            self.bq.append((f, label))
            self.bcond.notify()

    def broker_idle(self):
        with self.bcond:
            return not self.bq and not getattr(self, "bbusy", False)

    def broker_worker(self):
        while not self.abort.is_set():
            with self.bcond:
                while not self.bq and not self.abort.is_set():
                    self.bcond.wait(0.2)
                if self.abort.is_set():
                    return
                f, label = self.bq.pop(0)
                self.bbusy = True
            try:
                self.broker_do(f, label)
            except Exception as e:  # a cluster that does not come back: the seed fails
                self.cluster_error = "%s: %s" % (label, e)
                self.log("CLUSTER %s" % self.cluster_error)
                return
            finally:
                with self.bcond:
                    self.bbusy = False

    def alive(self, pid):
        try:
            st = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]
            return st != "Z"
        except (OSError, IndexError, TypeError):
            return False

    def revive(self, why):
        """A broker that exited when no fault of the runner's had it down
        (another process's signal: this machine's pids wrap at 32768, and a
        stale pid elsewhere can name a broker of ours) is said, counted and
        started again before the next broker fault, so that the rule of one
        broker down at a time holds from then on."""
        for b in range(1, BROKERS + 1):
            pid = self.kpid(b)
            if not self.alive(pid):
                self.unplanned += 1
                self.noticed.add(pid)
                self.log("UNPLANNED: broker %d (pid %s) is not running, no fault of the runner's stopped it (%s); "
                         "starting it" % (b, pid, why))
                t = now()
                self.cluster("start", "--broker", b)
                self.log("broker %d started, back in the ISR after %.1f s" % (b, now() - t))

    def broker_do(self, f, label):
        kind = f["kind"]
        self.revive("before " + label)
        self.mark(label)
        if kind == "broker_kill9":
            b, why = self.victim(f)
            pid = self.kpid(b)
            self.ours_down.add(b)
            os.kill(pid, signal.SIGKILL)
            self.log("%s: kill -9 broker %d (%s, pid %d)" % (label, b, why, pid))
            if self.abort.wait(f["back"]):
                return
            t = now()
            self.mark(label + "/start")
            self.cluster("start", "--broker", b)
            self.ours_down.discard(b)
            self.log("%s: broker %d started, back in the ISR after %.1f s" % (label, b, now() - t))
        elif kind == "broker_stop":
            b, why = self.victim(f)
            pid = self.kpid(b)
            self.frozen = pid
            os.kill(pid, signal.SIGSTOP)
            self.log("%s: SIGSTOP broker %d (%s, pid %d) for %.1f s" % (label, b, why, pid, f["back"]))
            self.abort.wait(f["back"])
            self.mark(label + "/cont")
            os.kill(pid, signal.SIGCONT)
            self.frozen = None
            self.log("%s: SIGCONT broker %d" % (label, b))
            if self.abort.is_set():
                return
            t = now()
            r = subprocess.run([PY, PROBE, "member", "127.0.0.1:%d" % self.kports[b], str(b), str(pid),
                                str(time.time() + 180)], capture_output=True, text=True, timeout=200)
            if r.returncode != 0:
                raise RuntimeError("broker %d not back in the ISR 180 s after SIGCONT: %s" % (b, r.stderr.strip()[-300:]))
            self.log("%s: broker %d back in the ISR after %.1f s" % (label, b, now() - t))
        elif kind == "rolling":
            self.log("%s: rolling restart, brokers %s" % (label, f["order"]))
            for b in f["order"]:
                if self.abort.is_set():
                    return
                t = now()
                self.mark("%s/stop%d" % (label, b))
                self.ours_down.add(b)
                self.cluster("stop", "--broker", b)
                self.log("%s: broker %d stopped (SIGTERM) in %.1f s" % (label, b, now() - t))
                t = now()
                self.mark("%s/start%d" % (label, b))
                self.cluster("start", "--broker", b)
                self.ours_down.discard(b)
                self.log("%s: broker %d started, back in the ISR after %.1f s" % (label, b, now() - t))

    def stop_cluster(self):
        self.abort.set()
        if self.frozen:
            try:
                os.kill(self.frozen, signal.SIGCONT)
            except OSError:
                pass
        p = self.cluster_ops
        if p is not None and p.poll() is None:
            p.terminate()
        if self.bthread is not None:
            self.bthread.join(timeout=120)
        if getattr(self, "kdir", None) and os.path.exists(os.path.join(self.kdir, "cluster.state")):
            subprocess.run([CLUSTER, "down", "--dir", self.kdir], stdout=subprocess.DEVNULL,
                           stderr=open(self.path("cluster-down.err"), "w"), timeout=300)

    def start_handler(self, port=0):
        n = getattr(self, "handler_n", 0) + 1
        self.handler_n = n
        # --log-time: each success stamped (µs), for the per-key order audit
        self.handler = self.spawn("handler%d" % n, [FLAKY, "--port", str(port), "--log", self.path("ok.log"),
                                                    "--log-time"])
        addr = self.wait_line("handler%d" % n, "listening=", 15)
        self.handler_addr = addr

    def produce(self, lines, name):
        """Produces lines ("key<TAB>value") to src in the background (produce.py)."""
        f = self.path(name + ".tsv")
        with open(f, "w") as o:
            o.writelines(lines)
        p = subprocess.Popen([PY, PRODUCE, self.bootstrap, "src", f],
                             stdout=subprocess.DEVNULL, stderr=open(self.path(name + ".err"), "w"))
        self.producers.append((name, p))

    def write_configs(self, admin=False):
        shutil.copy(POLICY, self.path("policy.lua"))
        self.policy_text = {1: open(POLICY).read()}
        self.policy_text[2] = self.policy_text[1].replace('version = "1"', 'version = "2"')
        with open(self.path("policy2.lua"), "w") as f:
            f.write(self.policy_text[2])
        self.policy_ids = set()
        for name in ("policy.lua", "policy2.lua"):
            out = subprocess.run([EG, "policy", "check", self.path(name)], capture_output=True, text=True).stdout
            self.policy_ids.update(l.split()[1] for l in out.splitlines() if l.startswith("policy"))
        self.policy_version = 1
        for slot in range(4):
            os.makedirs(self.path("spill%d" % slot), exist_ok=True)
            with open(self.path("gw%d.lua" % slot), "w") as f:
                f.write("""return {
  group = "%(group)s",
  source = { topics = { "src" }, ordering = "%(ordering)s", max_inflight = 500%(fence)s },
  target = { http = { url = "http://%(handler)s/", timeout = 2000, concurrency = 16 } },
  policy = "%(policy)s",
  lanes = { dlq = "{topic}.dlq", quarantine = "{topic}.quarantine", retry = "{topic}.retry.{rung}",
            %(lane_extra)s },
  commit_interval = 200,
  shutdown_timeout = 5000,
  kafka = { ["bootstrap.servers"] = "%(bootstrap)s", ["session.timeout.ms"] = 6000,
            ["heartbeat.interval.ms"] = 500 },
  %(admin)s
}
""" % {"group": self.group, "ordering": self.plan.ordering, "handler": self.handler_addr,
                    "policy": self.path("policy.lua"), "spill": self.path("spill%d" % slot),
                    "after": SPILL_AFTER_MS, "bootstrap": self.bootstrap,
                    "lane_extra": 'transactional = true, instance = "gw%d"' % slot if self.plan.transactional
                    else 'spill = { dir = "%s", after = %d }' % (self.path("spill%d" % slot), SPILL_AFTER_MS),
                    "admin": 'admin = { listen = "127.0.0.1:0" },' if admin else "",
                    "fence": ', fence = "%s"' % self.plan.fence if self.plan.fence else ""})

    def start_gw(self, slot):
        n = self.starts.get(slot, 0) + 1
        self.starts[slot] = n
        name = "gw%d.%d" % (slot, n)
        p = self.spawn(name, [EG, "run", "-c", self.path("gw%d.lua" % slot)])
        self.gws[slot] = {"proc": p, "name": name}
        self.log("start %s (pid %d)" % (name, p.pid))

    def running(self):
        return sorted(s for s, g in self.gws.items() if g["proc"] and g["proc"].poll() is None)

    def check_alive(self):
        """An exit nobody asked for is a crash; a SIGTERM must end in exit 0.
        The embedded broker's own end (librdkafka's mock can abort on an
        assertion of its group coordinator) voids the seed at once."""
        if self.broker is not None and self.broker.poll() is not None:
            raise SeedFailed("the embedded broker exited (%s): %s" % (self.broker.returncode, self.tail("broker.err", 2)))
        if self.cluster_error:
            raise SeedFailed("the Kafka cluster: %s" % self.cluster_error)
        if self.kafka and self.bthread is not None:
            for b in range(1, BROKERS + 1):
                pid = self.kpid(b)
                if b not in self.ours_down and pid not in self.noticed and not self.alive(pid):
                    self.noticed.add(pid)
                    self.log("UNPLANNED: broker %d (pid %s) exited, no fault of the runner's (noticed)" % (b, pid))
        for slot in list(self.terminating):
            p, name, deadline, why = self.terminating[slot]
            if p.poll() is None and now() < deadline:
                continue
            del self.terminating[slot]
            if p.poll() is None:
                self.stack(p.pid, name)
                p.kill()
                p.wait()
                rc = "none: still running 30 s after SIGTERM (stacks in %s.stack), killed" % name
            else:
                rc = p.returncode
            self.log("%s exited %s after SIGTERM (%s)" % (name, rc, why))
            if rc != 0:
                self.failures.append("%s: %s exited %s after SIGTERM: %s" % (why, name, rc, self.tail(name + ".err")))
        for slot, g in self.gws.items():
            p = g["proc"]
            if p is not None and p.poll() is not None:
                self.failures.append("crash: %s exited %d on its own: %s" % (g["name"], p.returncode, self.tail(g["name"] + ".err")))
                self.log("CRASH %s exit %d" % (g["name"], p.returncode))
                g["proc"] = None

    def stack(self, pid, name):
        """Every thread's stack of a hung process, into NAME.stack (gdb, when installed)."""
        if shutil.which("gdb"):
            with open(self.path(name + ".stack"), "w") as f:
                subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
                               stdout=f, stderr=subprocess.STDOUT, timeout=60)

    def started(self, slot):
        """True once the gateway has logged its start (its policy is loaded)."""
        try:
            return '"event":"start"' in open(self.path(self.gws[slot]["name"] + ".err"), errors="replace").read()
        except OSError:
            return False

    def term_gw(self, slot, why):
        """Sends SIGTERM; check_alive collects the exit status (0 expected)."""
        g = self.gws[slot]
        p, g["proc"] = g["proc"], None
        p.send_signal(signal.SIGTERM)
        self.terminating[slot] = (p, g["name"], now() + 30, why)

    def wait_terminated(self, slots):
        while any(s in self.terminating for s in slots):
            time.sleep(0.05)
            self.check_alive()

    # ---- faults ---------------------------------------------------------------
    def pick(self, f, candidates):
        return candidates[int(f["pick"] * len(candidates))] if candidates else None

    def fault(self, f, queue, seq):
        kind = f["kind"]
        label = "%s#%d" % (kind, seq)
        self.mark(label)
        if kind in ("kill9", "sigterm"):
            slot = self.pick(f, [s for s in self.running() if s not in self.protected])
            if slot is None:
                self.log("%s: no gateway running, skipped" % label)
                return False
            g = self.gws[slot]
            if kind == "kill9":
                g["proc"].kill()
                g["proc"].wait()
                g["proc"] = None
                self.log("%s: kill -9 %s" % (label, g["name"]))
            else:
                self.log("%s: SIGTERM %s" % (label, g["name"]))
                self.term_gw(slot, label)
            heapq.heappush(queue, (f["t"] + f["back"], next(self.seqno), {"kind": "restart", "slot": slot}))
        elif kind == "join":
            slot = 3 if 3 not in self.gws else None
            if slot is None:
                return False
            self.start_gw(slot)
            self.log("%s: gw3 joins" % label)
        elif kind == "req_err":
            self.ctl("request-errors", f["api"], f["count"], f["err"])
            self.log("%s: request-errors %s %d %s" % (label, f["api"], f["count"], f["err"]))
        elif kind == "broker_down":
            self.ctl("broker-down", f["broker"])
            self.log("%s: broker %d down" % (label, f["broker"]))
            heapq.heappush(queue, (f["t"] + f["back"], next(self.seqno), {"kind": "broker_up", "broker": f["broker"]}))
        elif kind == "lane_fault":
            self.ctl("topic-fault", f["topic"], f["secs"], f["err"])
            self.log("%s: topic-fault %s %ds %s" % (label, f["topic"], f["secs"], f["err"]))
        elif kind == "outage":
            self.handler.kill()
            self.handler.wait()
            self.log("%s: handler killed (target down)" % label)
            heapq.heappush(queue, (f["t"] + f["back"], next(self.seqno), {"kind": "handler_up"}))
        elif kind == "slowdown":
            self.handler.send_signal(signal.SIGSTOP)
            self.stopped = True
            self.log("%s: handler stopped (SIGSTOP)" % label)
            heapq.heappush(queue, (f["t"] + f["back"], next(self.seqno), {"kind": "handler_cont"}))
        elif kind in KAFKA_ONLY:
            busy = "" if self.broker_idle() else " (after the broker fault before it)"
            self.broker_fault(f, label)
            self.log("%s: queued%s" % (label, busy))
        elif kind == "reload":
            how = f["how"]
            if how == "broken":
                # a gateway still starting would load the broken file and
                # refuse to start (exit 2, as it must): wait for their start
                end = now() + 30
                while now() < end and not all(self.started(s) for s in self.running()):
                    time.sleep(0.1)
                shutil.copy(BROKEN, self.path("policy.lua.new"))
                os.replace(self.path("policy.lua.new"), self.path("policy.lua"))
                self.log("%s: broken policy written, SIGHUP to %s" % (label, self.hup()))
                time.sleep(1.5)
                self.write_policy(self.policy_version)
                self.log("%s: policy %d restored" % (label, self.policy_version))
            else:
                self.write_policy(3 - self.policy_version)
                sent = self.hup() if how == "sighup" else "watch"
                self.log("%s: policy version %d written (%s)" % (label, self.policy_version, sent))
        return True

    def write_policy(self, version):
        with open(self.path("policy.lua.new"), "w") as f:
            f.write(self.policy_text[version])
        os.replace(self.path("policy.lua.new"), self.path("policy.lua"))
        self.policy_version = version

    def hup(self):
        """SIGHUP to every gateway that has begun to log (a signal before
        main() runs has its default action, as in any program)."""
        sent = []
        for s in self.running():
            if os.path.getsize(self.path(self.gws[s]["name"] + ".err")) > 0:
                self.gws[s]["proc"].send_signal(signal.SIGHUP)
                sent.append(s)
        return sent

    def follow_up(self, ev):
        kind = ev["kind"]
        if kind == "restart":
            self.wait_terminated([ev["slot"]])  # its journal is locked until it exits
            self.start_gw(ev["slot"])
        elif kind == "broker_up":
            self.ctl("broker-up", ev["broker"])
            self.log("broker %d up" % ev["broker"])
        elif kind == "handler_up":
            self.start_handler(int(self.handler_addr.rsplit(":", 1)[1]))
            self.log("handler restarted")
        elif kind == "handler_cont":
            self.handler.send_signal(signal.SIGCONT)
            self.stopped = False
            self.log("handler continued (SIGCONT)")
        elif kind == "wave":
            self.produce(ev["lines"], "wave%d" % ev["n"])
            self.log("wave %d: %d records produced" % (ev["n"], len(ev["lines"])))

    # ---- the seed ---------------------------------------------------------------
    def offsets(self, topics):
        """{(topic, partition): (committed or None, end)} of the group."""
        r = subprocess.run([EG, "offsets", "-b", self.bootstrap, "-g", self.group] + topics,
                           capture_output=True, text=True, timeout=60)
        out = {}
        for line in r.stdout.splitlines():
            f = line.split()
            if len(f) >= 4 and f[0] != "total" and f[1].isdigit():
                out[(f[0], int(f[1]))] = (int(f[2]) if f[2].lstrip("-").isdigit() and int(f[2]) >= 0 else None, int(f[3]))
        return out

    def all_committed(self):
        offs = self.offsets(["src"] + ["src.retry." + r for r in RUNGS])
        bad = {k: v for k, v in offs.items() if v[1] > 0 and v[0] != v[1]}
        return len(offs) == PARTS * (1 + len(RUNGS)) and not bad, bad, offs

    def journals(self):
        """{slot: frames} of every journal that is not empty."""
        left = {}
        for slot in range(4):
            r = subprocess.run([EG, "spill", "ls", self.path("spill%d" % slot)], capture_output=True, text=True)
            for line in r.stdout.splitlines():
                if line.startswith("total"):
                    frames = int(line.split()[3])
                    if frames:
                        left[slot] = frames
        return left

    def run(self):
        plan = self.plan
        self.seqno = iter(range(1, 1 << 30))
        self.start_broker()
        self.start_handler()
        self.write_configs()
        self.produce(plan.records[:plan.head], "head")
        self.t0 = now()
        self.mark("start")
        for slot in range(3):
            self.start_gw(slot)
        queue = []
        for i, f in enumerate(plan.faults):
            heapq.heappush(queue, (f["t"], next(self.seqno), f))
        rest = plan.records[plan.head:]
        step = (len(rest) + len(plan.waves) - 1) // len(plan.waves)
        for n, t in enumerate(plan.waves):
            heapq.heappush(queue, (t, next(self.seqno), {"kind": "wave", "n": n + 1, "lines": rest[n * step:(n + 1) * step]}))
        done = {}
        while queue:
            t, _, ev = heapq.heappop(queue)
            while now() - self.t0 < t:
                time.sleep(min(0.1, t - (now() - self.t0)))
                self.check_alive()
            self.check_alive()
            if ev["kind"] in FAULT_KINDS:
                done[ev["kind"]] = done.get(ev["kind"], 0) + 1
                if not self.fault(ev, queue, done[ev["kind"]]):
                    done[ev["kind"]] -= 1
            else:
                self.follow_up(ev)
        self.faults_done = done
        self.settle()

    def settle(self):
        if self.kafka:
            # the broker faults still queued or running end first: every
            # broker up, continued and back in the ISR
            self.log("settle: waiting for the broker faults to end")
            end = now() + 600
            while not self.broker_idle():
                self.check_alive()
                if now() > end:
                    raise SeedFailed("the broker faults did not end in 600 s")
                time.sleep(0.2)
            try:
                self.revive("at the settle")
            except RuntimeError as e:
                raise SeedFailed("the Kafka cluster: %s" % e)
            self.check_alive()
        self.mark("settle")
        self.log("settle: faults off")
        if not self.kafka:
            for api in sorted(REQ_ERRORS):
                self.ctl("clear-request-errors", api)
            for b in (1, 2, 3):
                self.ctl("broker-up", b)
        if self.stopped:
            self.handler.send_signal(signal.SIGCONT)
            self.stopped = False
        if self.handler.poll() is not None:
            self.start_handler(int(self.handler_addr.rsplit(":", 1)[1]))
        for name, p in self.producers:
            rc = p.wait(timeout=120)
            if rc != 0:
                raise SeedFailed("producer %s exited %d: %s" % (name, rc, self.tail(name + ".err")))
        self.wait_terminated(list(self.terminating))
        for slot in sorted(self.gws):
            if self.gws[slot]["proc"] is None:
                self.start_gw(slot)
        limit = (90 if self.plan.short else 150) * (2 if self.kafka else 1)
        end = now() + limit
        quiet = 0
        while now() < end:
            self.check_alive()
            ok, bad, offs = self.all_committed()
            journals = self.journals()
            quiet = quiet + 1 if ok and not journals else 0
            if quiet >= 2:
                break
            time.sleep(1)
        else:
            self.failures.append("not settled after %d s: lag on %s, journals %s" % (
                limit, sorted(bad.items())[:6], self.journals()))
        self.log("settled, stopping the gateways")
        for slot in self.running():
            self.term_gw(slot, "final stop")
        self.wait_terminated(list(self.terminating))
        self.check_alive()
        ok, bad, offs = self.all_committed()
        if not ok:
            self.failures.append("committed != end after the stop: %s" % sorted(bad.items())[:6])
        left = self.journals()
        if left:
            self.failures.append("spill journals not empty: %s" % left)
        self.handler.send_signal(signal.SIGTERM)
        self.handler.wait(timeout=10)
        self.audit()

    def audit(self):
        res_path = self.path("audit.json")
        r = subprocess.run([PY, AUDIT, "--bootstrap", self.bootstrap, "--source", "src", "--dlq", "src.dlq",
                            "--quarantine", "src.quarantine", "--rungs", ",".join("src.retry." + x for x in RUNGS),
                            "--group", self.group, "--handler-log", self.path("ok.log"),
                            "--gateway-logs", self.path("gw*.err"), "--policies", ",".join(sorted(self.policy_ids)),
                            "--marks", self.path("marks.txt"), "--lane-partitions", str(PARTS), "--out", res_path]
                           + (["--in-place"] if self.plan.ordering == "partition" else [])
                           + (["--no-lane-dup"] if self.plan.transactional else [])
                           + (["--fence", self.plan.fence] if self.plan.fence else []),
                           capture_output=True, text=True, timeout=300)
        if r.returncode == 2 or not os.path.exists(res_path):
            raise SeedFailed("audit could not read the topics: %s" % r.stderr.strip()[-400:])
        self.result = json.load(open(res_path))
        if self.result["records"] != len(self.plan.records):
            self.failures.append("the source holds %d records, %d were produced" % (self.result["records"], len(self.plan.records)))
        if self.result["missing"] or self.result["misrouted"]:
            self.failures.append("audit: missing %d %s, misrouted %d %s" % (
                self.result["missing"], self.result["missing_ids"], self.result["misrouted"],
                json.dumps(self.result["problems"])[:1500]))
        if self.plan.fence and self.result.get("inversions"):
            self.failures.append("audit: %d per-key order inversions in %d keys: %s" % (
                self.result["inversions"], self.result["keys_inverted"],
                json.dumps(self.result["inversion_examples"])[:1500]))
        if self.plan.transactional and self.result.get("lane_dup"):
            self.failures.append("audit: %d lane duplicates (%d in rungs) under lanes.transactional" % (
                self.result["lane_dup"], self.result["rung_dup"]))

    def sanitizer_reports(self):
        """A sanitizer report in any process's stderr fails the seed (make test SAN=1)."""
        for name in sorted(os.listdir(self.dir)):
            if name.endswith(".err"):
                text = open(self.path(name), errors="replace").read()
                if re.search(r"ERROR: (Address|Leak)Sanitizer|runtime error:", text):
                    self.failures.append("sanitizer report in %s" % name)

    def close(self):
        if self.kafka:
            # the broker worker first (a broker stopped by SIGSTOP is continued)
            self.abort.set()
        for p in [g["proc"] for g in self.gws.values()] + [t[0] for t in self.terminating.values()]:
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        for name, p in self.producers:
            if p.poll() is None:
                p.kill()
                p.wait()
        for p in (self.handler, getattr(self, "broker", None)):
            if p is not None and p.poll() is None:
                if p is self.handler and self.stopped:
                    p.send_signal(signal.SIGCONT)
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if self.kafka:
            self.stop_cluster()
        self.marks.close()


def run_seed(seed, args):
    records = args.records or (6000 if args.short else 50000)
    plan = Plan(seed, records, args.short, args.broker, args.fence)
    plan.transactional = args.transactional
    start = now()
    run = Run(plan, args.out, args.verbose)
    err = None
    try:
        run.run()
    except SeedFailed as e:
        err = str(e)
    except Exception as e:  # the runner's own failure: still report the seed
        err = "runner error: %r" % (e,)
    finally:
        run.close()
    run.sanitizer_reports()
    elapsed = now() - start
    res = getattr(run, "result", {})
    failures = run.failures + ([err] if err else [])
    faults = getattr(run, "faults_done", {})
    line = "seed=%d records=%s missing=%s misrouted=%s dup=%s faults=%s time=%ds" % (
        seed, res.get("records", "?"), res.get("missing", "?"), res.get("misrouted", "?"), res.get("dup", "?"),
        ",".join("%s:%d" % (k, faults[k]) for k in FAULT_KINDS if faults.get(k)), round(elapsed))
    if plan.transactional:
        line += " transactional lane_dup=%s" % res.get("lane_dup", "?")
    if plan.fence:
        line += " fence=%s inversions=%s keys_inverted=%s parked=%s followers=%s" % (
            plan.fence, res.get("inversions", "?"), res.get("keys_inverted", "?"), res.get("parked_records", "?"),
            res.get("followers", "?"))
    if plan.broker == "kafka":
        # the control port's faults cannot be made on a real cluster: said
        line += " broker=kafka left_out=" + ",".join(EMBEDDED_ONLY)
        if run.unplanned:
            line += " unplanned_broker_exits=%d" % run.unplanned
    print(line, flush=True)
    detail = "#   ordering=%s outcomes=%s rung_records=%s source_duplicates=%s dup_parts=%s dup_by=%s" % (
        plan.ordering, res.get("outcomes"), res.get("rung_records"), res.get("source_duplicates"),
        res.get("dup_parts"), res.get("dup_by"))
    if plan.fence:
        detail += " keys=%s keys_parked=%s seq_disorder=%s followed_later=%s fenced_after_success=%s" % (
            res.get("keys"), res.get("keys_parked"), res.get("seq_disorder"), res.get("followed_later"),
            res.get("fenced_after_success"))
    with open(os.path.join(run.dir, "seed.txt"), "w") as f:
        f.write(line + "\n" + detail + "\n" + "\n".join(run.flog) + "\n")
    with open(args.report, "a") as f:
        f.write(line + "\n" + detail + "\n")
    if args.verbose:
        print(detail, flush=True)
    void = bool(err) and err.startswith("the embedded broker exited") and MOCK_ABORT in err and not run.failures
    if void:
        print("# VOID seed=%d: the embedded broker aborted in librdkafka's mock group coordinator (%s); "
              "scratch kept in %s" % (seed, err, run.dir), flush=True)
    elif failures:
        print("# FAILED seed=%d (replay: make chaos SEED=%d); scratch kept in %s" % (seed, seed, run.dir))
        for f in failures:
            print("#   failure: " + f)
        print("#   fault log:")
        for l in run.flog:
            print("#     " + l)
        sys.stdout.flush()
    elif not args.keep:
        shutil.rmtree(run.dir, ignore_errors=True)
    return "void" if void else "fail" if failures else "pass", elapsed, res


def main():
    ap = argparse.ArgumentParser(description="errgate's seeded chaos runner")
    ap.add_argument("--seeds", type=int, default=0, help="run seeds FIRST..FIRST+N-1")
    ap.add_argument("--first", type=int, default=1)
    ap.add_argument("--seed", type=int, action="append", default=[], help="run this seed (repeatable)")
    ap.add_argument("--records", type=int, default=0)
    ap.add_argument("--broker", choices=["embedded", "kafka"], default="embedded",
                    help="kafka: a real 3-broker Apache Kafka cluster per seed (spec/kafka/cluster.sh), "
                         "with broker kill -9, SIGSTOP and rolling restarts instead of the control port's faults")
    ap.add_argument("--transactional", action="store_true",
                    help="lanes.transactional on the real cluster (--broker kafka): no spill, zero lane duplicates")
    ap.add_argument("--fence", choices=["ladder", "ladder+dlq"], default=None,
                    help="source.fence under ordering \"key\": keyed records with per-key sequences, "
                         "and the audit's per-key order check")
    ap.add_argument("--short", action="store_true", help="the make-test variant: 6,000 records, a shorter schedule")
    ap.add_argument("--keep", action="store_true", help="keep every scratch directory")
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--out", default=None, help="where scratch directories go (default /tmp)")
    ap.add_argument("--report", default=None,
                    help="every seed's line and details (ordering, outcomes, duplicates by kind and by fault) "
                         "are appended here (default chaos-report.txt beside the scratch directories)")
    args = ap.parse_args()
    if args.transactional and args.broker != "kafka":
        ap.error("--transactional needs --broker kafka: the embedded broker has no real transactions")
    if args.transactional and args.fence:
        ap.error("--fence with --transactional: not built (a follower rewritten to its rung is a rung duplicate)")
    args.report = args.report or os.path.join(args.out or tempfile.gettempdir(), "chaos-report.txt")
    for exe in (EG, FLAKY):
        if not os.access(exe, os.X_OK):
            sys.exit("chaos: no %s (run make first)" % exe)
    seeds = args.seed or list(range(args.first, args.first + (args.seeds or 1)))
    passed, slowest, total = 0, (0, None), {"missing": 0, "misrouted": 0, "dup": 0}
    failed, voided = [], []
    for s in seeds:
        status, elapsed, res = run_seed(s, args)
        reruns = 0
        while status == "void" and reruns < VOID_RERUNS:  # a void run shows nothing: run it again
            reruns += 1
            status, elapsed, res = run_seed(s, args)
        if reruns:
            voided.append(str(s) if reruns == 1 else "%dx%d" % (s, reruns))
        passed += status == "pass"
        if status != "pass":
            failed.append(str(s))
        for k in total:
            total[k] += res.get(k) or 0
        if elapsed > slowest[0]:
            slowest = (elapsed, s)
    print("summary: passed=%d/%d missing=%d misrouted=%d dup=%d slowest=seed %s %ds%s%s" % (
        passed, len(seeds), total["missing"], total["misrouted"], total["dup"], slowest[1], round(slowest[0]),
        " void_rerun=" + ",".join(voided) if voided else "", " failed=" + ",".join(failed) if failed else ""),
        flush=True)
    print("# details (ordering, outcomes, duplicates by kind and by fault): %s" % args.report)
    sys.exit(0 if passed == len(seeds) else 1)


if __name__ == "__main__":
    main()
