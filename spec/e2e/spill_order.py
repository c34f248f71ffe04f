#!/usr/bin/env python3
"""spill_order.py LOG — checks a gateway's log for the spill journal's order.

A lane partition's writes begin in the order of their decision lines (a
decision's lane write begins right after it is logged, with no fence and no
transaction); the `spilled` lines are written as each frame is appended to
the journal (sampled under a storm, never reordered). For every lane
partition, the spilled records must appear in the order of their decisions.
Prints "N spilled lines, M lane partitions" and exits 0, or prints the
first pairs out of order and exits 1; exits 2 when there is nothing to
judge (no spilled line)."""
import json
import sys


def main():
    began = {}  # (lane, topic, partition, offset) of a record -> position of its last decision
    spilled = {}  # (lane, topic, partition) -> [(decision position, offset), in spilled-line order]
    n = 0
    for pos, line in enumerate(open(sys.argv[1], errors="replace")):
        if '"decision"' not in line and '"spilled"' not in line:
            continue
        try:
            e = json.loads(line)
        except ValueError:
            continue
        ev = e.get("event")
        if ev == "decision" and e.get("lane"):
            began[(e["lane"], e.get("topic"), e.get("partition"), e.get("offset"))] = pos
        elif ev == "spilled" and e.get("lane"):
            k = (e["lane"], e.get("topic"), e.get("partition"), e.get("offset"))
            if k in began:
                spilled.setdefault(k[:3], []).append((began[k], k[3]))
                n += 1
    if not n:
        print("no spilled line to judge")
        return 2
    bad = []
    for lp, seq in spilled.items():
        for (a, oa), (b, ob) in zip(seq, seq[1:]):
            if b < a:
                bad.append("%s from %s[%s]: offset %s spilled before offset %s, whose write began first"
                           % (lp[0], lp[1], lp[2], ob, oa))
    if bad:
        print("%d out of order; %s" % (len(bad), "; ".join(bad[:5])))
        return 1
    print("%d spilled lines, %d lane partitions" % (n, len(spilled)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
