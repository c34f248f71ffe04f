"""anchor_spring.py — the checks of e2e/test_anchor_spring: what errgate
reads of real Spring Kafka dead letters against what Spring wrote (the
JSON lines spec/anchors/spring's produce modes print), and what Spring's
own code reads of errgate's `spring` profile (read-errgate's lines).

    anchor_spring.py tail SPRING.jsonl TAIL.json...    dlq tail --json rows
    anchor_spring.py stats SPRING.jsonl STATS.out      dlq stats --by code
    anchor_spring.py inbox SPRING.jsonl OUT.json SRC.json LANE_PREFIX...
    anchor_spring.py reverse READ.jsonl LANE.json

Each prints "# ..." lines naming every mismatch and exits 1 on any (or
when it had nothing to compare), 0 otherwise.
"""
import datetime
import json
import sys


def dead_letters(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    return [r for r in rows if r.get("kind") == "dead-letter"]


def spring_view(d):
    """What Spring states of dead letter d: one set whole (DLT names, else the retry topics')."""
    s = d["spring"]
    if s["original_topic"] is not None:
        orig = (s["original_topic"], s["original_partition"], s["original_offset"], s["original_timestamp"])
    else:
        orig = (s["retry_original_topic"], s["retry_original_partition"], s["retry_original_offset"],
                s["retry_original_timestamp_long"])
    if s["exception_fqcn"] is not None or s["exception_message"] is not None:
        outer, msg = s["exception_fqcn"], s["exception_message"]
    elif s["key_exception_fqcn"] is not None:
        outer, msg = s["key_exception_fqcn"], s["key_exception_message"]
    else:
        outer, msg = s["retry_exception_fqcn"], s["retry_exception_message"]
    cause = s["exception_cause_fqcn"] or s["retry_exception_cause_fqcn"] or outer
    attempts = s["attempts"]
    return {"topic": orig[0], "partition": orig[1], "offset": orig[2], "timestamp": orig[3],
            "code": cause.rsplit(".", 1)[-1], "outer": outer, "message": msg,
            "deliveries": attempts - 1 if isinstance(attempts, int) else None}


class Report:
    def __init__(self):
        self.bad, self.n = [], 0

    def want(self, cond, what):
        if not cond:
            self.bad.append(what)

    def done(self, what):
        print("# %d %s checked, %d mismatches" % (self.n, what, len(self.bad)))
        for b in self.bad[:20]:
            print("# " + b)
        return 1 if self.bad or self.n == 0 else 0


def cmd_tail(spring, tails):
    rep = Report()
    rows = {}
    for t in tails:
        for l in open(t):
            if l.strip():
                r = json.loads(l)
                rows[(r["lane"]["topic"], r["lane"]["partition"], r["lane"]["offset"])] = r
    for d in dead_letters(spring):
        rep.n += 1
        sv = spring_view(d)
        r = rows.get((d["topic"], d["partition"], d["offset"]))
        where = "%s[%d]@%d" % (d["topic"], d["partition"], d["offset"])
        if r is None:
            rep.want(False, where + ": no dlq tail row")
            continue
        got = (r["original_topic"], r["original_partition"], r["original_offset"], r["code"], r["message"],
               r["attempts"])
        exp = (sv["topic"], str(sv["partition"]), str(sv["offset"]), sv["code"], sv["message"], sv["deliveries"])
        rep.want(got == exp, "%s: tail %r, Spring wrote %r" % (where, got, exp))
    return rep.done("dead letters against dlq tail --json")


def cmd_stats(spring, stats):
    want = {}
    for d in dead_letters(spring):
        c = spring_view(d)["code"]
        want[c] = want.get(c, 0) + 1
    got = {}
    for l in open(stats):
        f = l.split()
        if len(f) >= 2 and f[1].isdigit() and f[0] != "total":
            got[f[0]] = int(f[1])
    print("# stats %r, Spring wrote %r" % (got, want))
    return 0 if got == want and want else 1


def rfc3339(ms):
    t = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)


def cmd_inbox(spring, out, src, prefixes):
    """Every dead letter has one outcome: an IllegalStateException replayed to its original topic and
    partition (key, value kept), a timeout on PREFIX.dlq, a deserialization failure on
    PREFIX.quarantine with errgate's original.* (the timestamp as RFC 3339) equal to Spring's."""
    rep = Report()
    rows = json.load(open(out))
    srcrows = {(r["topic"], r["partition"], r["offset"]): r for r in json.load(open(src))}
    seen = {}
    for r in rows:
        h = {n: bytes.fromhex(v).decode("utf-8", "replace") if v is not None else None for n, v in r["headers"]}
        r["h"] = h
    for d in dead_letters(spring):
        rep.n += 1
        sv = spring_view(d)
        where = "%s[%d]@%d" % (d["topic"], d["partition"], d["offset"])
        if sv["code"] == "IllegalStateException":
            want_topic = sv["topic"]
        elif sv["code"].endswith("TimeoutException"):
            want_topic = d["topic"] + ".dlq"
        else:
            want_topic = d["topic"] + ".quarantine"
        def of_this(r):
            h = r["h"]
            if r["topic"] == sv["topic"]:  # a replayed copy, back on the original topic: same key
                return "replay.from-dlq" in h and r["key"] == d["key"]
            return (h.get("original.topic"), h.get("original.partition"), h.get("original.offset")) == (
                sv["topic"], str(sv["partition"]), str(sv["offset"])) and not r["topic"].endswith(".retry.replay")
        mine = [r for r in rows if of_this(r)]
        hits = [r for r in mine if r["topic"] == want_topic]
        for r in mine:
            rep.want(r["topic"] == want_topic, "%s: also on %s" % (where, r["topic"]))
        if len(hits) != 1:
            rep.want(False, "%s: %d copies on %s (want 1)" % (where, len(hits), want_topic))
            continue
        r = hits[0]
        h = r["h"]
        rep.want(r["key"] == d["key"], "%s: key %r, Spring's %r" % (where, r["key"], d["key"]))
        if want_topic == sv["topic"]:
            rep.want(r["partition"] == sv["partition"], "%s: replayed to partition %d, original %d" %
                     (where, r["partition"], sv["partition"]))
            s = srcrows.get((sv["topic"], sv["partition"], sv["offset"]))
            rep.want(s is not None and s["key"] == r["key"], "%s: the replayed key is not the source record's" % where)
        else:
            got = (h.get("original.topic"), h.get("original.partition"), h.get("original.offset"),
                   h.get("original.timestamp"), h.get("error.code"), h.get("error.message"))
            exp = (sv["topic"], str(sv["partition"]), str(sv["offset"]), rfc3339(sv["timestamp"]), sv["code"],
                   sv["message"])
            rep.want(got == exp, "%s: lane %r, Spring wrote %r" % (where, got, exp))
    return rep.done("dead letters through inbox mode")


def cmd_reverse(read, lane):
    """Spring's reading of errgate's spring profile (read-errgate's "read" lines) against errgate's own
    headers on the same lane records, and the records Spring's recoverer republished: its defaults append
    the kafka_dlt-original-* once more (the lane's coordinates, after errgate's), replace the exception
    headers; with setAppendOriginalHeaders(false) each is there once and is errgate's."""
    rep = Report()
    rows = [json.loads(l) for l in open(read) if l.strip()]
    lanes = {(r["topic"], r["partition"], r["offset"]): r for r in json.load(open(lane))}
    reads = [r for r in rows if r["kind"] == "read" and (r["topic"], r["partition"], r["offset"]) in lanes]
    again = [r for r in rows if r["kind"] == "republished"]
    for r in reads:
        rep.n += 1
        e = lanes[(r["topic"], r["partition"], r["offset"])]["errgate"]
        s = r["spring"]
        where = "%s[%d]@%d" % (r["topic"], r["partition"], r["offset"])
        for k, v in s.items():
            rep.want(not isinstance(v, dict), "%s: Spring cannot read %s: %r" % (where, k, v))
        ts = e.get("original.timestamp")
        got = (s["original_topic"], s["original_partition"], s["original_offset"], s["original_consumer_group"],
               s["exception_fqcn"], s["exception_message"], s["original_timestamp_type"])
        exp = (e["original.topic"], int(e["original.partition"]), int(e["original.offset"]),
               e.get("original.consumer.group"), e["error.code"], e["error.message"], "CreateTime")
        rep.want(got == exp, "%s: Spring read %r, errgate wrote %r" % (where, got, exp))
        rep.want(ts is not None and rfc3339(s["original_timestamp"]) == ts,
                 "%s: timestamp %r vs %r" % (where, s["original_timestamp"], ts))
        rep.want(s["exception_stacktrace"] and s["exception_stacktrace"].startswith(e["error.code"] + ": "),
                 "%s: stack trace %r" % (where, s["exception_stacktrace"]))
        rep.want((s["received_topic"], s["received_partition"], s["offset"]) == (r["topic"], r["partition"], r["offset"]),
                 "%s: the message headers' own coordinates" % where)
        mine = [a for a in again if a["key"] == r["key"] and a["topic"].startswith(r["topic"] + "-dlt")]
        rep.want(len(mine) == 2, "%s: %d republished copies (want 2)" % (where, len(mine)))
        for a in mine:
            c = a["counts"]
            first = a["topic"].endswith("-dlt-first")
            for n in ("kafka_dlt-exception-fqcn", "kafka_dlt-exception-message", "kafka_dlt-exception-stacktrace",
                      "kafka_dlt-exception-cause-fqcn"):
                rep.want(c.get(n) == 1, "%s -> %s: %s %d times" % (where, a["topic"], n, c.get(n, 0)))
            for n in ("kafka_dlt-original-topic", "kafka_dlt-original-partition", "kafka_dlt-original-offset",
                      "kafka_dlt-original-timestamp", "kafka_dlt-original-timestamp-type",
                      "kafka_dlt-original-consumer-group"):
                rep.want(c.get(n) == (1 if first else 2), "%s -> %s: %s %d times" % (where, a["topic"], n, c.get(n, 0)))
            for n, k in c.items():
                if not n.startswith("kafka_dlt-"):
                    rep.want(k == 1, "%s -> %s: %s %d times" % (where, a["topic"], n, k))
            # errgate's statement survives: first values (append) or the only ones (first)
            hv = {}
            for n, v in a["headers"]:
                hv.setdefault(n, bytes.fromhex(v))
            rep.want(hv.get("kafka_dlt-original-topic", b"").decode() == e["original.topic"] and
                     int.from_bytes(hv.get("kafka_dlt-original-offset", b"\0" * 8), "big") == int(e["original.offset"]),
                     "%s -> %s: errgate's original topic/offset not first" % (where, a["topic"]))
            s2 = a["spring"]
            want_last = (e["original.topic"], int(e["original.partition"])) if first else (r["topic"], r["partition"])
            rep.want((s2["original_topic"], s2["original_partition"]) == want_last,
                     "%s -> %s: last original %r, want %r" % (where, a["topic"],
                                                             (s2["original_topic"], s2["original_partition"]), want_last))
            rep.want(s2["exception_cause_fqcn"] == "java.lang.IllegalStateException" and
                     s2["exception_message"] == "DLT handler failed; still failing after triage",
                     "%s -> %s: Spring's own exception headers %r" % (where, a["topic"], s2["exception_message"]))
            rep.want(a["value"] == r["value"], "%s -> %s: value changed" % (where, a["topic"]))
    return rep.done("errgate lane records read by Spring")


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    cmd = argv[1]
    if cmd == "tail":
        return cmd_tail(argv[2], argv[3:])
    if cmd == "stats":
        return cmd_stats(argv[2], argv[3])
    if cmd == "inbox":
        return cmd_inbox(argv[2], argv[3], argv[4], argv[5:])
    if cmd == "reverse":
        return cmd_reverse(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
