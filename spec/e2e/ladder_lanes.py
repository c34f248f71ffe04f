"""ladder_lanes.py — read lane topics with their raw header bytes (for the
retry-ladder, breaker and budget end-to-end tests).

    ladder_lanes.py BOOTSTRAP OUT.jsonl TOPIC...

Reads every record of each TOPIC, from the low to the high watermark of
every partition, and writes one JSON object per record to OUT.jsonl:
{topic, partition, offset, timestamp, key, value, headers: {name: text},
history: [...] | null, history_error: str | null}. `dump` in lib.sh goes
through kcat -J, which mangles binary header bytes; errgate.history is
msgpack, so this reads with python3-confluent-kafka and decodes the header
with the small msgpack decoder below (Debian's python3 has no msgpack
module here). Header values other than the history are decoded as UTF-8
with replacement; a repeated header name keeps its last value, and the
number of values per name is in `header_counts`.
Exits 1 with a one-line message when the broker cannot be read.

As a module (pycheck in ladder_lib.sh puts this folder on PYTHONPATH) it
also gives the tests' Python checks TAP output numbered on from the shell's
(check, done), log and header helpers (events, ms) and lane reading (load).
"""
import datetime
import json
import os
import struct
import sys

from confluent_kafka import Consumer, TopicPartition


class MsgpackError(ValueError):
    pass


def unpack(buf):
    """Decodes one msgpack object that fills buf exactly (the subset
    errgate.history uses, plus the other fixed forms for robustness)."""
    obj, off = _unpack(buf, 0)
    if off != len(buf):
        raise MsgpackError("%d trailing bytes" % (len(buf) - off))
    return obj


def _take(buf, off, n):
    if off + n > len(buf):
        raise MsgpackError("truncated at byte %d" % off)
    return buf[off:off + n], off + n


def _unpack(buf, off):
    b, off = _take(buf, off, 1)
    t = b[0]
    if t <= 0x7F:
        return t, off
    if t >= 0xE0:
        return t - 0x100, off
    if 0xA0 <= t <= 0xBF:
        return _str(buf, off, t & 0x1F)
    if 0x90 <= t <= 0x9F:
        return _array(buf, off, t & 0x0F)
    if 0x80 <= t <= 0x8F:
        return _map(buf, off, t & 0x0F)
    fixed = {0xC0: None, 0xC2: False, 0xC3: True}
    if t in fixed:
        return fixed[t], off
    ints = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q",
            0xCA: ">f", 0xCB: ">d"}
    if t in ints:
        fmt = ints[t]
        raw, off = _take(buf, off, struct.calcsize(fmt))
        return struct.unpack(fmt, raw)[0], off
    lens = {0xD9: ">B", 0xDA: ">H", 0xDB: ">I", 0xC4: ">B", 0xC5: ">H", 0xC6: ">I",
            0xDC: ">H", 0xDD: ">I", 0xDE: ">H", 0xDF: ">I"}
    if t in lens:
        fmt = lens[t]
        raw, off = _take(buf, off, struct.calcsize(fmt))
        n = struct.unpack(fmt, raw)[0]
        if t in (0xD9, 0xDA, 0xDB):
            return _str(buf, off, n)
        if t in (0xC4, 0xC5, 0xC6):
            raw, off = _take(buf, off, n)
            return raw.hex(), off
        if t in (0xDC, 0xDD):
            return _array(buf, off, n)
        return _map(buf, off, n)
    raise MsgpackError("unsupported type byte 0x%02x at %d" % (t, off - 1))


def _str(buf, off, n):
    raw, off = _take(buf, off, n)
    return raw.decode("utf-8"), off


def _array(buf, off, n):
    out = []
    for _ in range(n):
        v, off = _unpack(buf, off)
        out.append(v)
    return out, off


def _map(buf, off, n):
    out = {}
    for _ in range(n):
        k, off = _unpack(buf, off)
        v, off = _unpack(buf, off)
        out[k] = v
    return out, off


def self_test():
    # [{"t": 1700000000000, "class": "transient", "lane": "x"}] by hand
    enc = (b"\x91\x83\xa1t\xcf" + struct.pack(">Q", 1700000000000) + b"\xa5class\xa9transient"
           + b"\xa4lane\xd9\x01x")
    assert unpack(enc) == [{"t": 1700000000000, "class": "transient", "lane": "x"}], unpack(enc)
    assert unpack(b"\x93\x01\xcc\xff\xcd\x01\x00") == [1, 255, 256]
    for bad in (b"\x91", b"\x92\x01", b"\xc1", b"\x01\x02"):
        try:
            unpack(bad)
        except MsgpackError:
            continue
        raise AssertionError("accepted %r" % bad)


# ---- helpers for the tests' Python checks ---------------------------------

_tap = {"n": int(os.environ.get("TAP_START", "0")), "failed": False}


def check(cond, desc):
    """Prints one TAP line numbered after the shell's; returns cond."""
    _tap["n"] += 1
    print(("ok" if cond else "not ok") + " %d - %s" % (_tap["n"], desc))
    if not cond:
        _tap["failed"] = True
    return cond


def done():
    """Hands the TAP number back to the shell and exits 1 if a check failed."""
    if os.environ.get("TAP_END"):
        with open(os.environ["TAP_END"], "w") as f:
            f.write(str(_tap["n"]))
    sys.exit(1 if _tap["failed"] else 0)


def ms(ts):
    """RFC 3339 UTC with milliseconds (log ts, error.timestamp) -> ms since the epoch."""
    t = datetime.datetime.strptime(ts[:23], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
    return int(round(t.timestamp() * 1000))


def events(path, name=None):
    """The JSON log lines of a gateway log (those of event `name` when given)."""
    out = []
    for line in open(path, errors="replace"):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if isinstance(e, dict) and (name is None or e.get("event") == name):
            out.append(e)
    return out


def load(path):
    """The records ladder_lanes.py wrote to path, with the value's JSON as `v`."""
    recs = []
    for line in open(path):
        r = json.loads(line)
        try:
            r["v"] = json.loads(r["value"])
        except ValueError:
            r["v"] = {}
        recs.append(r)
    return recs


def record_json(m):
    hdrs, counts, hist, herr = {}, {}, None, None
    for name, val in m.headers() or []:
        counts[name] = counts.get(name, 0) + 1
        if name == "errgate.history":
            try:
                hist = unpack(val or b"")
            except MsgpackError as e:
                herr = str(e)
            continue
        hdrs[name] = (val or b"").decode("utf-8", "replace")
    return {"topic": m.topic(), "partition": m.partition(), "offset": m.offset(), "timestamp": m.timestamp()[1],
            "key": (m.key() or b"").decode("utf-8", "replace"),
            "value": (m.value() or b"").decode("utf-8", "replace"),
            "headers": hdrs, "header_counts": counts, "history": hist, "history_error": herr}


def read_topics(bootstrap, topics, convert, who, group):
    """Every record of the topics, from their low to their high watermark as
    they are now, as convert(message), in the order read; exits naming who
    when a topic cannot be read or the read stops before the end."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "enable.auto.commit": False, "enable.partition.eof": False})
    todo, assign = {}, []
    for topic in topics:
        tm = c.list_topics(topic, timeout=10).topics.get(topic)
        if tm is None or tm.error is not None:
            sys.exit("%s: cannot read topic %s: %s" % (who, topic, tm.error if tm else "missing"))
        for p in sorted(tm.partitions):
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if hi > lo:
                todo[(topic, p)] = hi
                assign.append(TopicPartition(topic, p, lo))
    out = []
    if assign:
        c.assign(assign)
    idle = 0
    while todo and idle < 100:  # 10 s without a message
        m = c.poll(0.1)
        if m is None:
            idle += 1
            continue
        idle = 0
        if m.error():
            sys.exit("%s: %s[%d]: %s" % (who, m.topic(), m.partition(), m.error()))
        key = (m.topic(), m.partition())
        if key not in todo:
            continue
        out.append(convert(m))
        if m.offset() + 1 >= todo[key]:
            del todo[key]
    c.close()
    if todo:
        sys.exit("%s: read stopped before the end of %s" % (who, ", ".join("%s[%d]" % k for k in sorted(todo))))
    return out


def main():
    self_test()
    bootstrap, out_path, topics = sys.argv[1], sys.argv[2], sys.argv[3:]
    out = read_topics(bootstrap, topics, record_json, "ladder_lanes.py", "ladder-lanes-reader")
    out.sort(key=lambda r: (topics.index(r["topic"]), r["partition"], r["offset"]))
    with open(out_path, "w") as f:
        for r in out:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
