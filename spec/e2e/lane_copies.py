#!/usr/bin/python3
"""lane_copies.py — where the lane duplicates of a real-cluster run come from.

  lane_copies.py LANE_DUMP... -- GATEWAY_LOG...

LANE_DUMP: kcat -J lines of the lanes (spec/e2e/lib.sh's dump); a lane
record's source record is its errgate.id header. GATEWAY_LOG: the gateways'
JSON logs, with every decision line written (log.decisions = "all").

A source record's lane copies beyond the first are explained when the
gateway says why it wrote that record again:
  - it decided the record again (a second decision line with a lane
    action: the record was redelivered, at-least-once), or
  - it reported a lane write of the record that it could not confirm and
    wrote again (lane_write_failed for that record: a timed-out or failed
    delivery that may have landed anyway, DESIGN §2.3), or a delivery
    report without an offset (ack_without_offset, DESIGN §2.1: not a
    confirmation, so written again; that line names the lane partition,
    not the record, so it explains one copy on that lane partition).
A copy nothing explains was written twice by the producer itself (the
idempotent producer's retries are meant to be deduplicated by the broker).
Lines the log's rate limit dropped (log_suppressed) are counted, never
assumed. Prints '# ...' lines; exit 1 when a copy is unexplained.
"""
import collections
import json
import sys


def headers(rec):
    h = rec.get("headers") or []
    return {h[i]: h[i + 1] for i in range(0, len(h), 2)}


def main(argv):
    if "--" not in argv:
        sys.stderr.write(__doc__)
        return 2
    cut = argv.index("--")
    dumps, logs = argv[1:cut], argv[cut + 1:]
    copies = collections.Counter()   # errgate.id -> lane records
    lane_part = {}                    # errgate.id -> "lane[partition]"
    for path in dumps:
        for line in open(path, encoding="utf-8", errors="replace"):
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            i = headers(r).get("errgate.id")
            copies[i] += 1
            lane_part[i] = "%s[%d]" % (r["topic"], r["partition"])
    decisions = collections.Counter()
    rewrites = collections.Counter()
    no_offset = collections.Counter()  # lane[partition] -> ack_without_offset lines
    errors = collections.Counter()
    suppressed = collections.Counter()
    for path in logs:
        for line in open(path, encoding="utf-8", errors="replace"):
            try:
                e = json.loads(line)
            except ValueError:
                continue
            ev = e.get("event")
            if ev == "decision" and e.get("lane"):
                decisions[e["id"]] += 1
            elif ev == "lane_write_failed":
                rewrites["%s/%d/%d" % (e["topic"], e["partition"], e["offset"])] += 1
                errors[e.get("error")] += 1
            elif ev == "ack_without_offset":
                no_offset[e.get("msg", "").split(":")[0]] += 1
            elif ev == "log_suppressed":
                suppressed[e.get("suppressed_event")] += e.get("suppressed", 0)
    extra = {i: c - 1 for i, c in copies.items() if c > 1}
    total_no_offset = sum(no_offset.values())
    by_decision = by_rewrite = by_no_offset = 0
    unexplained = []
    for i, n in sorted(extra.items()):
        d = min(n, max(decisions[i] - 1, 0))
        w = min(n - d, rewrites[i])
        o = min(n - d - w, no_offset[lane_part[i]])
        no_offset[lane_part[i]] -= o
        by_decision, by_rewrite, by_no_offset = by_decision + d, by_rewrite + w, by_no_offset + o
        if n - d - w - o > 0:
            unexplained.append((i, n + 1, decisions[i], rewrites[i]))
    print("# lane records %d of %d source records; %d written more than once (%d extra copies): "
          "decided again (redelivered) %d, rewritten after a reported lane failure %d, after a report without "
          "an offset %d, unexplained %d %s"
          % (sum(copies.values()), len(copies), len(extra), sum(extra.values()), by_decision, by_rewrite,
             by_no_offset, sum(u[1] - 1 for u in unexplained), unexplained[:5]))
    print("# lane_write_failed by error: %s; ack_without_offset lines: %d; suppressed by the log's rate limit: %s"
          % (dict(errors) or "none", total_no_offset,
             dict(suppressed) or "none"))
    if unexplained and (suppressed["lane_write_failed"] or suppressed["ack_without_offset"]):
        print("# (some lane_write_failed/ack_without_offset lines were suppressed: unexplained copies may be those)")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
