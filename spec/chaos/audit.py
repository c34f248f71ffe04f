"""audit.py — the chaos runner's checker of histories (spec/chaos/chaos.py).

    audit.py --bootstrap B --source src --rungs T1,T2.. --dlq D --quarantine Q
             --group G --handler-log FILE --gateway-logs GLOB --policies ID,ID
             [--marks FILE] --out RESULT.json

Reads what actually happened, after the run has settled: every record of the
source, rung and lane topics (python3-confluent-kafka, raw header bytes), the
handler's success log (`ok <id> <errgate.id>` per 200, in the order the
handler answered) and the gateways' decision logs. A source record's value
is {"id": ..., "mode": ...}; its mode says where it must end:

    ok, slow-N, transient-N  -> a handler success
    permanent                -> the DLQ          (error.class permanent)
    semantic                 -> the quarantine   (error.class semantic)
    duplicate                -> ignored          (an `ignore` decision)

A record is its coordinates (topic/partition/offset, its errgate.id): when
the source producer wrote a value twice (source_duplicates), each copy is
accounted for. Counted, and written as one JSON object to --out:
  - missing: source records with no outcome at all (missing_trace: what
    the gateway logs say of the first ten);
  - misrouted: records whose outcomes are of another kind than their mode
    asks for, or of two kinds; handler successes whose errgate.id names
    another record; lane or rung records of a record never produced, on another
    partition number than their source, with changed key or value, or
    whose DESIGN §4 headers do not name their origin (original.*,
    errgate.id, original.consumer.group, previous.topic the source or the
    rung below, retry.count the rungs climbed (--in-place: any count on a
    lane record straight from the source, rungs waited in place count), errgate.policy one of the ids
    the run loaded, class, reason, timestamp); each with a few examples;
  - dup: deliveries beyond the first (handler successes and lane records of
    an id already there, ignore decisions repeated): at-least-once, not loss;
  - dup_by: the handler's duplicate successes attributed to a fault.
    --marks holds lines "BYTES LABEL": the size of the handler log when the
    runner injected fault LABEL. A duplicate is counted for the first fault
    injected after the record's first success and before the duplicate (the
    fault that interrupted it before its offset was committed: a kill, a
    rebalance, a lost commit); "settle" is the mark of the end of the
    faults, "none" a duplicate with no fault in between. This is a fair,
    not an exact, attribution: a fault's rebalance comes a little later.
  - lane_dup: lane records of an id already in that lane (the DLQ, the
    quarantine, or one rung; rung_dup the rungs' share), read_committed.
    With --no-lane-dup (chaos.py --transactional, lanes.transactional) any
    is a failure: each failed record is in each of its lanes exactly once.
Exit status 0 when missing = misrouted = 0 (and lane_dup = 0 with
--no-lane-dup), else 1; 2 when a topic cannot be read.
"""
import argparse
import bisect
import glob
import json
import os
import re
import sys
import uuid

WANT = {"ok": "handler", "permanent": "dlq", "semantic": "quarantine", "duplicate": "ignored"}
CLASS_OF = {"dlq": "permanent", "quarantine": "semantic"}


def expected(mode):
    """The kind of outcome a record of this mode must end with."""
    if mode.startswith(("transient-", "slow-")):
        return "handler"
    return WANT.get(mode, "?")


def read_topics(bootstrap, topics):
    """Every record of each topic, low to high watermark of every partition,
    as (topic, partition, offset, key bytes, value bytes, {header: bytes})."""
    from confluent_kafka import Consumer, TopicPartition
    # read_committed (librdkafka's default, said here): what every errgate
    # reader sees; aborted transactions' records are never delivered
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "chaos-audit-" + uuid.uuid4().hex,
                  "enable.auto.commit": False, "enable.partition.eof": False, "isolation.level": "read_committed"})
    md = c.list_topics(timeout=20)
    want, ends = [], {}
    for t in topics:
        if t not in md.topics:
            continue
        for p in md.topics[t].partitions:
            lo, hi = c.get_watermark_offsets(TopicPartition(t, p), timeout=20)
            if lo != 0:
                raise RuntimeError("%s[%d] low watermark %d: the broker dropped records" % (t, p, lo))
            if hi > 0:
                want.append(TopicPartition(t, p, 0))
                ends[(t, p)] = hi
    out = []
    left = dict(ends)
    if want:
        c.assign(want)
    idle = 0
    while left and idle < 200:
        msgs = c.consume(num_messages=2000, timeout=0.1)
        if not msgs:
            idle += 1
            # a transactional topic ends in a commit or abort marker, which a
            # read_committed consumer steps over without receiving: its end is
            # reached when its position is
            for tp in c.position([TopicPartition(t, p) for (t, p) in left]):
                if tp.offset >= left[(tp.topic, tp.partition)]:
                    del left[(tp.topic, tp.partition)]
            continue
        idle = 0
        for m in msgs:
            if m.error():
                continue
            tp = (m.topic(), m.partition())
            hdrs = {}
            for k, v in m.headers() or []:
                hdrs[k] = v or b""
            out.append((m.topic(), m.partition(), m.offset(), m.key(), m.value(), hdrs))
            if tp in left and m.offset() + 1 >= left[tp]:
                del left[tp]
    c.close()
    if left:
        raise RuntimeError("could not read to the end of %s" % sorted(left))
    return out


def text(h, k):
    return h[k].decode("utf-8", "replace") if k in h else None


def audit(a):
    topics = [a.source, a.dlq, a.quarantine] + [t for t in a.rungs.split(",") if t]
    recs = read_topics(a.bootstrap, topics)
    policies = set(p for p in a.policies.split(",") if p)
    rungs = [t for t in a.rungs.split(",") if t]
    problems = {}

    def problem(kind, what):
        problems.setdefault(kind, []).append(what)

    # a record is its coordinates (its errgate.id): the source producer may
    # write a value twice (an idempotent retry the embedded broker does not
    # deduplicate), and each copy is a record of its own to account for
    src, ids = {}, set()
    for t, p, o, k, v, h in recs:
        if t != a.source:
            continue
        d = json.loads(v)
        coord = "%s/%d/%d" % (t, p, o)
        ids.add(d["id"])
        src[coord] = {"p": p, "o": o, "key": k, "value": v, "mode": d["mode"], "id": d["id"]}

    outcomes = {}  # coordinates -> set of kinds
    dup = {"handler": 0, "lanes": 0, "ignored": 0}

    # handler successes, with the attribution of duplicates to fault windows
    marks = []
    if a.marks and os.path.exists(a.marks):
        for line in open(a.marks):
            f = line.split(None, 1)
            if len(f) == 2:
                marks.append((int(f[0]), f[1].strip()))
    marks.sort(key=lambda m: m[0])
    mark_pos = [m[0] for m in marks]
    dup_by = {}
    seen = {}  # id -> where its first success ends in the log
    pos = 0
    with open(a.handler_log, "rb") as f:
        for raw in f:
            start, pos = pos, pos + len(raw)
            parts = raw.decode("utf-8", "replace").split()
            if len(parts) < 2 or parts[0] != "ok":
                continue
            rid = parts[2] if len(parts) > 2 else None
            s = src.get(rid)
            if s is None or s["id"] != parts[1]:
                problem("delivery without the record's errgate.id", "%s: errgate.id %s is %s" % (
                    parts[1], rid, s and s["id"]))
                continue
            if rid in seen:
                dup["handler"] += 1
                i = bisect.bisect_left(mark_pos, seen[rid])
                label = marks[i][1] if i < len(marks) and mark_pos[i] <= start else "none"
                dup_by[label] = dup_by.get(label, 0) + 1
            else:
                seen[rid] = pos
            outcomes.setdefault(rid, set()).add("handler")

    # ignore decisions (the only durable trace of an ignored record)
    for path in glob.glob(a.gateway_logs):
        for line in open(path, errors="replace"):
            if '"decision"' not in line or '"ignore"' not in line:
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("event") != "decision" or e.get("action") != "ignore":
                continue
            rid = e.get("id")
            if rid not in src:
                problem("ignore decision for a record never produced", e.get("id"))
                continue
            if "ignored" in outcomes.get(rid, ()):
                dup["ignored"] += 1
            outcomes.setdefault(rid, set()).add("ignored")

    # lane and rung records: provenance and headers
    lane_seen = set()
    rung_seen, rung_dup = set(), 0  # (rung, errgate.id): lane_dup counts these with the DLQ and quarantine copies
    for t, p, o, k, v, h in recs:
        if t == a.source:
            continue
        where = "%s/%d/%d" % (t, p, o)
        rid = text(h, "errgate.id")
        s = src.get(rid)
        if s is None:
            problem("lane record of a record never produced", "%s errgate.id %r" % (where, rid))
            continue
        want = {"original.topic": a.source, "original.partition": str(s["p"]),
                "original.offset": str(s["o"]),
                "original.consumer.group": a.group}
        for hk, hv in want.items():
            if text(h, hk) != hv:
                problem("lane header", "%s %s: %s=%r, want %r" % (where, rid, hk, text(h, hk), hv))
        # retry.count is the rungs climbed: 0 from the source, k from the k-th
        # rung; a rung record's own count is its rung's number
        prev, count = text(h, "previous.topic"), text(h, "retry.count")
        climbed = 0 if prev == a.source else rungs.index(prev) + 1 if prev in rungs else None
        want_count = rungs.index(t) + 1 if t in rungs else climbed
        if climbed is None:
            problem("lane header", "%s %s: previous.topic %r" % (where, rid, prev))
        elif prev == a.source and a.in_place and t not in rungs and (count or "").isdigit():
            pass  # ordering "partition": rungs waited in place count too
        elif count != str(want_count) or (t in rungs and want_count != climbed + 1):
            problem("lane header", "%s %s: retry.count %r, previous.topic %r" % (where, rid, count, prev))
        if text(h, "errgate.policy") not in policies:
            problem("lane header", "%s %s: errgate.policy %r not loaded by the run" % (where, rid, text(h, "errgate.policy")))
        for hk in ("error.class", "error.code", "errgate.reason", "original.timestamp"):
            if not h.get(hk):
                problem("lane header", "%s %s: %s missing" % (where, rid, hk))
        if not re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", text(h, "error.timestamp") or ""):
            problem("lane header", "%s %s: error.timestamp %r" % (where, rid, text(h, "error.timestamp")))
        if k != s["key"] or v != s["value"]:
            problem("lane key or value changed", "%s %s" % (where, rid))
        if p != s["p"] % a.lane_partitions:
            problem("lane record on another partition", "%s %s: source partition %d" % (where, rid, s["p"]))
        if t in rungs:
            if (t, rid) in rung_seen:
                rung_dup += 1
            rung_seen.add((t, rid))
            if text(h, "error.class") != "transient":
                problem("rung record not transient", "%s %s: error.class %r" % (where, rid, text(h, "error.class")))
            continue
        kind = "dlq" if t == a.dlq else "quarantine"
        if text(h, "error.class") != CLASS_OF[kind]:
            problem("lane record of the wrong class", "%s %s: error.class %r, reason %r" % (
                where, rid, text(h, "error.class"), text(h, "errgate.reason")))
        if (kind, rid) in lane_seen:
            dup["lanes"] += 1
        lane_seen.add((kind, rid))
        outcomes.setdefault(rid, set()).add(kind)

    lost = sorted(c for c in src if c not in outcomes)
    missing = ["%s (%s %s)" % (c, src[c]["id"], src[c]["mode"]) for c in lost]
    # what the gateways logged about the first missing records (their
    # decisions name them by errgate.id), for the post-mortem
    trace = {c: [] for c in lost[:10]}
    if trace:
        # the lane and rung records carrying its id: a rung record present but
        # never served is the consumer's loss, one absent the lane write's
        for t, p, o, k, v, h in recs:
            rid = text(h, "errgate.id") if t != a.source else None
            if rid in trace:
                trace[rid].append("record in %s/%d/%d" % (t, p, o))
        for path in sorted(glob.glob(a.gateway_logs)):
            for line in open(path, errors="replace"):
                for c in trace:
                    if '"id":"%s"' % c in line and len(trace[c]) < 5:
                        trace[c].append("%s: %s" % (os.path.basename(path), line.strip()[:400]))
    for c, kinds in outcomes.items():
        want = expected(src[c]["mode"])
        if kinds != {want}:
            problem("wrong or double outcome", "%s %s mode %s: %s, want %s" % (
                c, src[c]["id"], src[c]["mode"], sorted(kinds), want))
    misrouted = sum(len(v) for v in problems.values())
    counts = {}
    for kinds in outcomes.values():
        for kd in kinds:
            counts[kd] = counts.get(kd, 0) + 1
    return {"records": len(ids), "source_duplicates": len(src) - len(ids),
            "missing": len(missing), "missing_ids": missing[:10], "missing_trace": trace,
            "misrouted": misrouted, "problems": {k: v[:5] for k, v in problems.items()},
            "problem_counts": {k: len(v) for k, v in problems.items()},
            "dup": sum(dup.values()), "dup_parts": dup, "lane_dup": dup["lanes"] + rung_dup, "rung_dup": rung_dup, "dup_by": dup_by, "outcomes": counts,
            "rung_records": sum(1 for r in recs if r[0] in rungs)}


def main():
    ap = argparse.ArgumentParser()
    for opt in ("bootstrap", "source", "dlq", "quarantine", "group", "handler-log", "gateway-logs", "out"):
        ap.add_argument("--" + opt, required=True)
    ap.add_argument("--rungs", default="")
    ap.add_argument("--policies", required=True)
    ap.add_argument("--marks", default="")
    ap.add_argument("--in-place", action="store_true", help='ordering "partition": ladders wait in place')
    ap.add_argument("--lane-partitions", type=int, required=True)
    ap.add_argument("--no-lane-dup", action="store_true",
                    help="lanes.transactional: a record twice in a lane (DLQ, quarantine, or one rung) fails")
    a = ap.parse_args()
    try:
        res = audit(a)
    except Exception as e:  # a broker that cannot be read: not a verdict
        print("audit: %s" % e, file=sys.stderr)
        sys.stderr.flush()
        os._exit(2)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    sys.stdout.flush()
    # os._exit: python3-confluent-kafka can abort in interpreter finalization
    # after records with null header values (PLATFORM.md, spill_lib.sh)
    os._exit(0 if res["missing"] == 0 and res["misrouted"] == 0 and not (a.no_lane_dup and res["lane_dup"]) else 1)


if __name__ == "__main__":
    main()
