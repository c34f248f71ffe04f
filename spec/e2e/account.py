"""account.py — the accounting oracle of errgate's end-to-end tests.

Reads what actually happened (the source topic, the DLQ and quarantine lanes
as kcat JSON, the handler's success log, the gateway's decision logs) and
checks DESIGN's guarantees against what each record's mode says must happen:
every produced record has exactly one kind of durable outcome, none is
missing, lane records carry the §4 headers and sit on their source's
partition number, key and value bytes are unchanged. Prints TAP lines and
'# duplicates: N' (deliveries beyond the first: at-least-once, not loss).
"""
import argparse, glob, json, re, sys

EXPECT = {"ok": "handler", "permanent": "dlq", "semantic": "quarantine", "duplicate": "ignored"}

def expected(mode):
    if mode.startswith("transient-") or mode.startswith("ratelimit-") or mode.startswith("slow-"):
        return "handler"
    if mode.startswith("explicit-permanent"):
        return "dlq"
    if mode.startswith("json-semantic"):
        return "quarantine"
    return EXPECT.get(mode, "?")

def load_json_lines(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                out.append(json.loads(line))
    return out

def headers(rec):
    h = rec.get("headers") or []
    return {h[i]: h[i + 1] for i in range(0, len(h), 2)}

n = 0
failed = 0
def check(cond, desc):
    global n, failed
    n += 1
    if not cond:
        failed += 1
    print(("ok" if cond else "not ok") + " %d - %s" % (n, desc))

ap = argparse.ArgumentParser()
ap.add_argument("--src", required=True)
ap.add_argument("--dlq", required=True)
ap.add_argument("--quarantine", required=True)
ap.add_argument("--handler-log", required=True)
ap.add_argument("--gateway-logs", required=True, help="glob")
ap.add_argument("--group", required=True)
ap.add_argument("--policy", default="default@1", help="name@version; the +sha suffix is checked for shape")
ap.add_argument("--policies", default="", help="comma-separated full ids (name@version+sha): errgate.policy must be one of them")
ap.add_argument("--lane-partitions", type=int, default=0)
a = ap.parse_args()

src = load_json_lines(a.src)
by_coord, by_id, mode_of = {}, {}, {}
for r in src:
    v = json.loads(r["payload"])
    by_coord["%s/%d/%d" % (r["topic"], r["partition"], r["offset"])] = v["id"]
    by_id[v["id"]] = r
    mode_of[v["id"]] = v["mode"]
total = len(src)

handler_ids, handler_lines, wrong_ids = set(), 0, []
with open(a.handler_log) as f:
    for line in f:
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "ok":
            handler_ids.add(parts[1]); handler_lines += 1
            # guarantee 6: every delivery, retries and redeliveries included,
            # carries the record's stable errgate.id (topic/partition/offset)
            s = by_id.get(parts[1])
            want = s and "%s/%d/%d" % (s["topic"], s["partition"], s["offset"])
            if want and (len(parts) < 3 or parts[2] != want):
                wrong_ids.append((parts[1], parts[2] if len(parts) > 2 else None, want))

ignored_ids, log_lines, bad_json = set(), 0, 0
for path in glob.glob(a.gateway_logs):
    with open(path) as f:
        for line in f:
            log_lines += 1
            try:
                e = json.loads(line)
            except ValueError:
                bad_json += 1
                continue
            if e.get("event") == "decision" and e.get("action") == "ignore":
                ignored_ids.add(by_coord.get(e["id"], "?" + e["id"]))

lanes = {}
lane_dups = 0
header_problems = []
for lane, path in (("dlq", a.dlq), ("quarantine", a.quarantine)):
    ids = set()
    for r in load_json_lines(path):
        h = headers(r)
        rid = json.loads(r["payload"])["id"]
        if rid in ids:
            lane_dups += 1
        ids.add(rid)
        s = by_id.get(rid)
        if s is None:
            header_problems.append("%s: unknown record %s" % (lane, rid)); continue
        coord = "%s/%d/%d" % (s["topic"], s["partition"], s["offset"])
        want = {"original.topic": s["topic"], "original.partition": str(s["partition"]),
                "original.offset": str(s["offset"]), "errgate.id": coord,
                "original.consumer.group": a.group, "previous.topic": s["topic"],
                "retry.count": "0"}
        for k, v in want.items():
            if h.get(k) != v:
                header_problems.append("%s %s: %s=%r, want %r" % (lane, rid, k, h.get(k), v))
        if a.policies:
            if h.get("errgate.policy") not in a.policies.split(","):
                header_problems.append("%s %s: errgate.policy=%r, not one of %s" % (lane, rid, h.get("errgate.policy"), a.policies))
        elif not re.match(re.escape(a.policy) + r"\+[0-9a-f]{8}$", h.get("errgate.policy", "")):
            header_problems.append("%s %s: errgate.policy=%r, want %s+<sha8>" % (lane, rid, h.get("errgate.policy"), a.policy))
        for k in ("error.class", "error.code", "error.message", "errgate.reason", "original.timestamp"):
            if not h.get(k):
                header_problems.append("%s %s: %s missing" % (lane, rid, k))
        if not re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", h.get("error.timestamp", "")):
            header_problems.append("%s %s: error.timestamp %r" % (lane, rid, h.get("error.timestamp")))
        if r.get("key") != s.get("key") or r["payload"] != s["payload"]:
            header_problems.append("%s %s: key or value changed" % (lane, rid))
        if a.lane_partitions and r["partition"] != s["partition"] % a.lane_partitions:
            header_problems.append("%s %s: on partition %d, source %d" % (lane, rid, r["partition"], s["partition"]))
        want_class = "semantic" if lane == "quarantine" else "permanent"
        if h.get("error.class") != want_class:
            header_problems.append("%s %s: error.class %r" % (lane, rid, h.get("error.class")))
    lanes[lane] = ids

outcome = {}
overlaps = 0
for name, ids in (("handler", handler_ids), ("dlq", lanes["dlq"]),
                  ("quarantine", lanes["quarantine"]), ("ignored", ignored_ids)):
    for i in ids:
        if i in outcome:
            overlaps += 1
        outcome[i] = name

missing = [i for i in by_id if i not in outcome]
wrong = [(i, mode_of[i], outcome[i]) for i in by_id if i in outcome and outcome[i] != expected(mode_of[i])]
strays = [i for i in outcome if i not in by_id]
counts = {k: sum(1 for v in outcome.values() if v == k) for k in ("handler", "dlq", "quarantine", "ignored")}
print("# records %d: handler %d, dlq %d, quarantine %d, ignored %d" % (
    total, counts["handler"], counts["dlq"], counts["quarantine"], counts["ignored"]))
check(total > 0, "source topic holds the produced records (%d)" % total)
check(sum(counts.values()) == total and not missing,
      "succeeded + dlq + quarantine + ignored = %d exactly (missing %d: %s)" % (total, len(missing), missing[:5]))
check(handler_lines > 0 and not wrong_ids, "every delivery carried the record's errgate.id (%d deliveries, %d wrong: %s)"
      % (handler_lines, len(wrong_ids), wrong_ids[:3]))
check(overlaps == 0, "no record has two kinds of outcome (%d overlaps)" % overlaps)
check(not wrong, "every record's outcome matches its mode (%d wrong: %s)" % (len(wrong), wrong[:5]))
check(not strays, "no outcome for a record never produced (%d)" % len(strays))
check(not header_problems, "lane records carry DESIGN §4 headers, unchanged key/value, source partition (%d problems: %s)"
      % (len(header_problems), header_problems[:3]))
check(bad_json == 0 and log_lines > 0, "every gateway log line is JSON (%d lines, %d bad)" % (log_lines, bad_json))
dups = handler_lines - len(handler_ids) + lane_dups
print("# duplicates: %d (handler %d, lanes %d)" % (dups, handler_lines - len(handler_ids), lane_dups))
sys.exit(1 if failed else 0)
