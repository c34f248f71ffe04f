#!/usr/bin/python3
"""anchor_streams_connect.py — checks for e2e/test_anchor_streams_connect:
what errgate read of real Kafka Streams, Kafka Connect and share-group dead
letters against what the anchor tool (spec/anchors/streams-connect) says it
wrote (its JSON lines: {anchor, case, source, dlq}).

    anchor_streams_connect.py tail ANCHOR.jsonl TAIL.json...
        dlq tail --json: per dead letter, original topic/partition/offset =
        the source record's, code = the exception class's simple name
        (share group: none), message = the recorded message, time = the
        dead letter's timestamp (Streams and Connect: the source's),
        attempts = the share group's delivery count
    anchor_streams_connect.py stats ANCHOR.jsonl STATS.out...
        dlq stats --by code: one row per class with its count
    anchor_streams_connect.py inbox ANCHOR.jsonl OUT.json
        inbox mode (profile_reader.py's dump of the source topics and the
        lanes): one outcome per dead letter; replayed ones back on their
        source topic and partition with key, value and replay headers;
        the others on their lane with the source's coordinates as
        original.*, original.timestamp the source's for Streams and Connect
        and absent for the share group, error.code and error.message as
        recorded
Exit status 0 when every check holds; each mismatch is printed as "# ...".
"""
import datetime
import json
import sys

CLASS_HEADER = {"streams": "__streams.errors.exception", "connect": "__connect.errors.exception.class.name"}
MESSAGE_HEADER = {"streams": "__streams.errors.message", "connect": "__connect.errors.exception.message",
                  "share-group": "__dlq.errors.message"}
REPLAYED = {("streams", "processing"), ("connect", "task_put"), ("share-group", "rejected")}
LANE = {("streams", "deserialization"): "anchor-streams-dlq.quarantine",
        ("connect", "converter"): "anchor-connect-dlq.quarantine",
        ("share-group", "released"): "dlq.anchor-share.dlq"}


def headers(r):
    return {n: bytes.fromhex(v).decode("utf-8", "replace") if v is not None else None for n, v in r["headers"]}


def anchors(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def rfc3339(ms):
    t = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)


def expected(a):
    """(code, message) errgate should read from anchor row a."""
    h = headers(a["dlq"])
    cls = h.get(CLASS_HEADER.get(a["anchor"], ""))
    return (cls.rsplit(".", 1)[-1] if cls else None), h.get(MESSAGE_HEADER[a["anchor"]])


def tail(rows, files):
    bad = []
    got = {}
    for f in files:
        for l in open(f):
            t = json.loads(l)
            got[(t["lane"]["topic"], t["lane"]["partition"], t["lane"]["offset"])] = t
    for a in rows:
        d, s = a["dlq"], a["source"]
        t = got.get((d["topic"], d["partition"], d["offset"]))
        if not t:
            bad.append("no tail line for %s/%d/%d" % (d["topic"], d["partition"], d["offset"]))
            continue
        code, msg = expected(a)
        want = {"original_topic": s["topic"], "original_partition": str(s["partition"]),
                "original_offset": str(s["offset"]), "code": code, "message": msg, "time": rfc3339(d["timestamp"])}
        if a["anchor"] == "share-group":
            want["attempts"] = int(headers(d)["__dlq.errors.delivery.count"])
        elif d["timestamp"] != s["timestamp"]:
            bad.append("%s %s: the anchor's dead letter is not stamped with its source's time" % (a["anchor"], a["case"]))
        for k, v in want.items():
            if t.get(k) != v:
                bad.append("%s %s: tail %s = %r, want %r" % (a["anchor"], a["case"], k, t.get(k), v))
    return bad


def stats(rows, files):
    text = "".join(open(f).read() for f in files)
    want = {}
    for a in rows:
        code = expected(a)[0] or "-"
        want[code] = want.get(code, 0) + 1
    bad = []
    for code, n in want.items():
        if not any(l.split()[:2] == [code, str(n)] for l in text.splitlines()):
            bad.append("stats: no row %s %d" % (code, n))
    return bad


def inbox(rows, out):
    recs = json.load(open(out))
    bad = []
    for a in rows:
        s, key = a["source"], a["source"]["key"]
        code, msg = expected(a)
        on_source = [r for r in recs if r["topic"] == s["topic"] and r["key"] == key]
        lanes = [r for r in recs if r["key"] == key and r["topic"] not in (s["topic"],)]
        name = "%s %s" % (a["anchor"], a["case"])
        if (a["anchor"], a["case"]) in REPLAYED:
            copies = [r for r in on_source if r["offset"] != s["offset"]]
            if len(copies) != 1 or lanes:
                bad.append("%s: %d replayed copies, %d lane records" % (name, len(copies), len(lanes)))
                continue
            r, h = copies[0], headers(copies[0])
            if r["partition"] != s["partition"]:
                bad.append("%s: replayed to partition %d, not %d" % (name, r["partition"], s["partition"]))
            if h.get("errgate.replays") != "1" or not (h.get("replay.from-dlq") or "").startswith(a["dlq"]["topic"] + ".retry.replay/"):
                bad.append("%s: replay headers %r" % (name, {k: h.get(k) for k in ("errgate.replays", "replay.from-dlq")}))
            if (h.get("original.topic"), h.get("original.partition"), h.get("original.offset")) != (
                    s["topic"], str(s["partition"]), str(s["offset"])):
                bad.append("%s: replayed copy's origin %r" % (name, [h.get("original." + k) for k in ("topic", "partition", "offset")]))
            if h.get("error.code") != (code or "recorded") or h.get("error.message") != msg:
                bad.append("%s: replayed copy's error %r %r" % (name, h.get("error.code"), h.get("error.message")))
        else:
            lane = LANE[(a["anchor"], a["case"])]
            mine = [r for r in lanes if r["topic"] == lane]
            if len(mine) != 1 or len(on_source) != 1 or len(lanes) != 1:
                bad.append("%s: %d records on %s, %d elsewhere, %d on the source" % (name, len(mine), lane, len(lanes) - len(mine), len(on_source)))
                continue
            h = headers(mine[0])
            want = {"original.topic": s["topic"], "original.partition": str(s["partition"]),
                    "original.offset": str(s["offset"]), "error.code": code or "recorded", "error.message": msg,
                    "original.timestamp": None if a["anchor"] == "share-group" else rfc3339(s["timestamp"])}
            if a["anchor"] == "share-group":
                want["original.consumer.group"] = headers(a["dlq"])["__dlq.errors.group"]
            for k, v in want.items():
                if h.get(k) != v:
                    bad.append("%s: lane %s = %r, want %r" % (name, k, h.get(k), v))
            if mine[0]["key"] != key:
                bad.append("%s: lane key %r" % (name, mine[0]["key"]))
    return bad


def main(argv):
    if len(argv) < 4 or argv[1] not in ("tail", "stats", "inbox"):
        sys.stderr.write(__doc__)
        return 2
    rows = anchors(argv[2])
    if len(rows) != 6:
        print("# the anchor wrote %d dead letters, not 6" % len(rows))
        return 1
    bad = {"tail": tail, "stats": stats}[argv[1]](rows, argv[3:]) if argv[1] != "inbox" else inbox(rows, argv[3])
    for b in bad:
        print("# " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
