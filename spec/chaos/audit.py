"""audit.py — the chaos runner's checker of histories (spec/chaos/chaos.py).

    audit.py --bootstrap B --source src --rungs T1,T2.. --dlq D --quarantine Q
             --group G --handler-log FILE --gateway-logs GLOB --policies ID,ID
             [--marks FILE] [--fence ladder|ladder+dlq] --out RESULT.json

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
  - with --fence MODE (chaos.py --fence, source.fence = MODE under ordering
    "key"): a lane or rung record with errgate.fenced-by (a follower: it
    followed a parked record of its key without a target call) must carry
    error.class, error.kind and errgate.reason `fenced` and name another
    source record of its own key (same partition); retry.count 0 when it came
    from the source. One behind a later record of its key is counted
    (followed_later), not judged: a copy read again after its key moved on
    may follow; the first outcome's order is what the order check judges. A record that ever followed
    is exempt from the rung-below and rungs-climbed header checks (a
    released follower climbs from the rung it waited on). Under
    "ladder+dlq" a follower's outcome is the lane it followed to (the DLQ or
    the quarantine: nobody replays in a chaos run); under "ladder" a
    follower outside a rung is misrouted.
    A record that reached the target and, later, has a follower's DLQ or
    quarantine record (a copy read again after a rebalance, fenced by a later
    dead letter of its key) is a duplicate, counted (fenced_after_success);
    a follower's lane record before its success is misrouted.
    Then the per-key order check. A record's final outcome is its first
    handler success (the handler's --log-time stamp, µs), its first DLQ or
    quarantine record (its error.timestamp header: the time the lane record
    was built, ms, kept through the spill journal; or the gateway's first
    dlq or quarantine decision for it when earlier: a lane write lost with a
    kill -9 is made again by the next owner, while under "ladder" the
    decision already released the fence, and the target saw the key in order)
    or its first ignore decision (the decision log's ts, ms). A record was parked when it has a
    rung record (a ladder head, or a follower waiting on a rung) or, under
    "ladder+dlq", a DLQ or quarantine record. For every key and every parked
    record A of it, each later record B of the key (a higher offset) whose
    outcome came before A's is an inversion (compared in µs when both are
    handler successes, else in whole milliseconds: a tie is not an
    inversion). inversions (pairs), keys_inverted and the first examples;
    seq_disorder counts keys whose records' `seq` field (the producer's
    per-key sequence) is not increasing in offset order (the source's own
    order, said, not judged).
Exit status 0 when missing = misrouted = 0 (and lane_dup = 0 with
--no-lane-dup, inversions = 0 with --fence), else 1; 2 when a topic cannot be
read.
"""
import argparse
import bisect
import calendar
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


def iso_ms(ts):
    """Milliseconds since the epoch of an RFC 3339 UTC time with
    milliseconds (2026-11-28T18:03:59.123Z), or None."""
    m = re.match(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{3})Z$", ts or "")
    if not m:
        return None
    f = [int(x) for x in m.groups()]
    return calendar.timegm((f[0], f[1], f[2], f[3], f[4], f[5], 0, 0, 0)) * 1000 + f[6]


def before(b, a):
    """True when outcome time b (µs, precise) is strictly before a: in µs
    when both are precise (handler successes), else in whole milliseconds."""
    if b[1] and a[1]:
        return b[0] < a[0]
    return b[0] // 1000 < a[0] // 1000


def order_check(src, first, parked, fence):
    """The per-key order check (--fence): src coordinates -> record, first
    coordinates -> (µs, precise, kind) of its final outcome, parked the
    coordinates of records that were parked. Returns the result's fields."""
    by_key = {}
    for c, s in src.items():
        if s["key"] is not None:
            by_key.setdefault((s["p"], s["key"]), []).append(c)
    inversions, bad_keys, examples, seq_disorder, parked_keys = 0, 0, [], 0, 0
    for (p, key), cs in by_key.items():
        cs.sort(key=lambda c: src[c]["o"])
        seqs = [src[c]["seq"] for c in cs if src[c]["seq"] is not None]
        seq_disorder += any(seqs[i] >= seqs[i + 1] for i in range(len(seqs) - 1))
        inv = 0
        heads = [i for i, c in enumerate(cs) if c in parked and c in first]
        parked_keys += bool(heads)
        for i in heads:
            a = cs[i]
            for b in cs[i + 1:]:
                if b in first and before(first[b], first[a]):
                    inv += 1
                    if len(examples) < 8:
                        examples.append("key %s: %s (%s, offset %d) %s at %d us before the parked %s (%s, offset %d) "
                                        "%s at %d us" % (key.decode("utf-8", "replace"), src[b]["id"], src[b]["mode"],
                                                         src[b]["o"], first[b][2], first[b][0], src[a]["id"],
                                                         src[a]["mode"], src[a]["o"], first[a][2], first[a][0]))
        inversions += inv
        bad_keys += inv > 0
    return {"fence": fence, "inversions": inversions, "keys_inverted": bad_keys, "inversion_examples": examples,
            "keys": len(by_key), "keys_parked": parked_keys, "parked_records": len(parked),
            "seq_disorder": seq_disorder}


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
        src[coord] = {"p": p, "o": o, "key": k, "value": v, "mode": d["mode"], "id": d["id"], "seq": d.get("seq")}

    outcomes = {}  # coordinates -> set of kinds
    # --fence: coordinates -> (µs, precise, kind) of the record's first
    # outcome of each sort (the earliest wins below), and the records parked
    first, first_lane, first_ignore, parked = {}, {}, {}, set()
    followers = set()  # coordinates of records with a fenced lane or rung record
    followed_later = set()  # followers of a later record of their key (counted, not judged)
    kind_ms = {}  # (coordinates, lane kind) -> ms of its first record there
    if a.fence:
        for t, p, o, k, v, h in recs:
            if t != a.source and "errgate.fenced-by" in h and text(h, "errgate.id") in src:
                followers.add(text(h, "errgate.id"))
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
            if rid not in first and len(parts) > 3 and parts[3].isdigit():
                first[rid] = (int(parts[3]), True, "handler")
            if rid in seen:
                dup["handler"] += 1
                i = bisect.bisect_left(mark_pos, seen[rid])
                label = marks[i][1] if i < len(marks) and mark_pos[i] <= start else "none"
                dup_by[label] = dup_by.get(label, 0) + 1
            else:
                seen[rid] = pos
            outcomes.setdefault(rid, set()).add("handler")

    # ignore decisions (the only durable trace of an ignored record); with
    # --fence also the times of the DLQ and quarantine decisions (decisions
    # are never rate-limited in the log)
    decided = {}  # coordinates -> ms of its first dlq or quarantine decision
    for path in glob.glob(a.gateway_logs):
        for line in open(path, errors="replace"):
            if a.fence and '"decision"' in line and ('"dlq"' in line or '"quarantine"' in line):
                try:
                    e = json.loads(line)
                except ValueError:
                    e = {}
                ms = iso_ms(e.get("ts"))
                if e.get("event") == "decision" and e.get("action") in ("dlq", "quarantine") and ms is not None \
                        and e.get("reason") != "fenced":  # a record's own dead letter, not a follower's
                    rid = e.get("id")
                    decided[rid] = min(ms, decided.get(rid, ms))
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
            ms = iso_ms(e.get("ts"))
            if ms is not None and (rid not in first_ignore or ms * 1000 < first_ignore[rid][0]):
                first_ignore[rid] = (ms * 1000, False, "ignored")
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
        fenced = a.fence and "errgate.fenced-by" in h
        if t in rungs or (a.fence == "ladder+dlq" and (t == a.dlq or t == a.quarantine)):
            parked.add(rid)
        if fenced:
            # a follower: no target call, no rung climbed, named after the
            # parked record of its key it followed
            by = text(h, "errgate.fenced-by")
            head = src.get(by)
            for hk in ("error.class", "error.kind", "errgate.reason"):
                if text(h, hk) != "fenced":
                    problem("fence header", "%s %s: %s=%r, want 'fenced'" % (where, rid, hk, text(h, hk)))
            if head is None or head["key"] != s["key"] or head["p"] != s["p"] or head["o"] == s["o"]:
                problem("fence header", "%s %s: errgate.fenced-by %r is not another record of its key" % (
                    where, rid, by))
            elif head["o"] > s["o"]:
                # behind a later record of its key: a copy of a record read
                # again (at least once) after the key moved on is fine; the
                # first one's is an inversion, judged by the order check
                followed_later.add(rid)
            if climbed is None or (prev == a.source and count != "0") or not (count or "").isdigit():
                problem("fence header", "%s %s: retry.count %r, previous.topic %r" % (where, rid, count, prev))
            if a.fence == "ladder" and t not in rungs:
                problem("follower outside a rung under \"ladder\"", "%s %s" % (where, rid))
        elif climbed is None:
            problem("lane header", "%s %s: previous.topic %r" % (where, rid, prev))
        elif rid in followers:
            # once a follower: a released follower climbs from the rung it
            # waited on, so the rung below and the count of rungs passed are
            # not its history; a rung record's count is still its rung's
            if not (count or "").isdigit() or (t in rungs and count != str(want_count)):
                problem("lane header", "%s %s: retry.count %r, previous.topic %r (a former follower)" % (
                    where, rid, count, prev))
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
            if not fenced and text(h, "error.class") != "transient":
                problem("rung record not transient", "%s %s: error.class %r" % (where, rid, text(h, "error.class")))
            continue
        kind = "dlq" if t == a.dlq else "quarantine"
        ms = iso_ms(text(h, "error.timestamp"))
        if ms is not None and rid in decided and not fenced:
            ms = min(ms, decided[rid])
        if ms is not None and (rid not in first_lane or ms * 1000 < first_lane[rid][0]):
            first_lane[rid] = (ms * 1000, False, kind)
        if fenced:
            kind = "fenced-" + kind  # its outcome: the lane it followed to
        if ms is not None:
            kind_ms[(rid, kind)] = min(ms, kind_ms.get((rid, kind), ms))
        elif text(h, "error.class") != CLASS_OF[kind]:
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
    fenced_after_success = 0
    for c, kinds in outcomes.items():
        want = expected(src[c]["mode"])
        fk = [kd for kd in kinds if kd.startswith("fenced-")]
        if a.fence == "ladder+dlq" and fk:
            want = fk[0]  # followed a dead-lettered record of its key: no replay in a chaos run
            # its own outcome first (a success, an ignore, its own dead
            # letter), then a copy read again (at least once) followed a
            # later fence: a duplicate, counted; the other way round
            # (followed, then reached its outcome) is misrouted
            t_f = min(kind_ms.get((c, k), 1 << 62) for k in fk)
            others = kinds - set(fk)
            at = {"handler": first[c][0] // 1000 if c in first else None,
                  "ignored": first_ignore[c][0] // 1000 if c in first_ignore else None}
            if others and all((at.get(k) if k in at else kind_ms.get((c, k))) is not None and
                              (at.get(k) if k in at else kind_ms.get((c, k))) <= t_f for k in others):
                fenced_after_success += 1
                kinds = others
                want = expected(src[c]["mode"])
        if kinds != {want}:
            problem("wrong or double outcome", "%s %s mode %s: %s, want %s" % (
                c, src[c]["id"], src[c]["mode"], sorted(kinds), want))
    order = {}
    if a.fence:
        for c in src:
            # the earliest outcome of the kinds it ended with (an outcome of
            # another kind is misrouted, counted above)
            cands = [d[c] for d in (first, first_lane, first_ignore) if c in d]
            if cands:
                first[c] = min(cands)
        order = order_check(src, first, parked, a.fence)
        order["followers"] = len(followers)
        order["followed_later"] = len(followed_later)
        order["fenced_after_success"] = fenced_after_success
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
            "rung_records": sum(1 for r in recs if r[0] in rungs), **order}


def main():
    ap = argparse.ArgumentParser()
    for opt in ("bootstrap", "source", "dlq", "quarantine", "group", "handler-log", "gateway-logs", "out"):
        ap.add_argument("--" + opt, required=True)
    ap.add_argument("--rungs", default="")
    ap.add_argument("--policies", required=True)
    ap.add_argument("--marks", default="")
    ap.add_argument("--in-place", action="store_true", help='ordering "partition": ladders wait in place')
    ap.add_argument("--lane-partitions", type=int, required=True)
    ap.add_argument("--fence", choices=["ladder", "ladder+dlq"], default=None,
                    help="source.fence: check followers' headers and every key's outcomes in offset order")
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
    os._exit(0 if res["missing"] == 0 and res["misrouted"] == 0 and not (a.no_lane_dup and res["lane_dup"])
             and not res.get("inversions") else 1)


if __name__ == "__main__":
    main()
