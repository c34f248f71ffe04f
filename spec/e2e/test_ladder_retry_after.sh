#!/usr/bin/env bash
# test_ladder_retry_after.sh — Retry-After on the ladder (issue 4), with the
# payments demo policy (429 -> class throttled -> the first rung at once; a
# rung waits at least the provider's Retry-After, capped at 1 h):
#   - ratelimit-3000 records (429 with Retry-After: 3, then 200): the
#     decision climbs to src.retry.1s with delay_ms 3000; the rung record
#     carries error.retry-after-ms=3000 and errgate.not-before = the
#     decision time + 3 s; it is tried again no earlier than that (and
#     within 1.5 s of it), and succeeds;
#   - ratelimit-500 records (Retry-After: 1 = the rung's own delay): no
#     errgate.not-before; tried again after the rung's 1 s;
#   - a rung partition is served in offset order: a record is tried no
#     earlier than its own due time and that of every record before it in
#     its partition (a 3 s Retry-After holds back the records behind it);
#   - healthy records of the same partitions succeed at once; every offset
#     (source and rungs) is committed at the end.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ladder_lib.sh"
POLICY="$ROOT/examples/payments/policy.lua"
RUNGS=$(rung_topics src 1s 2s 4s)
start_broker $(ladder_topics src 1s 2s 4s)
gen_records 60 "ok:2 ratelimit-3000:1 ratelimit-500:1" | produce src
handler_at h
start_tail th "$T/h.log"; TAILPID=$LASTPID
ladder_config "$T/gw.lua" lra src none "$POLICY"
start_gateway gw "$T/gw.lua"
all_ok() { all_committed lra src $RUNGS && [ "$(awk '{print $2}' "$T/h.log" | sort -u | wc -l)" -ge 60 ]; }
wait_for 40 all_ok && ok "every record succeeded and every offset is committed (source and rungs)" ||
  not_ok "after 40 s: $(awk '{print $2}' "$T/h.log" | sort -u | wc -l) of 60 succeeded"
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
stop_tail th "$TAILPID"
offsets_all lra "$T/offsets.txt" src $RUNGS
check "committed offsets = end offsets on src and every rung topic" committed_ok "$T/offsets.txt" 16
lanes_read "$T/lanes.jsonl" src src.dlq $RUNGS

pycheck "$T/lanes.jsonl" "$T/th.tl" "$T/gw.err" <<'PY'
import sys
from ladder_lanes import check, done, events, load, ms
recs = load(sys.argv[1])
src = {r["v"]["id"]: r for r in recs if r["topic"] == "src"}
mode = {i: r["v"]["mode"] for i, r in src.items()}
coord = {"src/%d/%d" % (r["partition"], r["offset"]): i for i, r in src.items()}
ok_at = {}
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) >= 3 and f[1] == "ok":
        ok_at.setdefault(f[2], float(f[0]) * 1000)
dec = {}
for e in events(sys.argv[3], "decision"):
    dec.setdefault(coord.get(e["id"]), []).append(e)
rung = {r["v"]["id"]: r for r in recs if r["topic"] == "src.retry.1s"}
check(not [r for r in recs if r["topic"] in ("src.dlq", "src.retry.2s", "src.retry.4s")],
      "nothing went past the first rung or to the DLQ")
check({i for i, m in mode.items() if m == "ok"} <= set(ok_at) and not any(dec.get(i) for i, m in mode.items() if m == "ok"),
      "healthy records succeeded without a failure")
# a rung partition is served in offset order: a record is due at
# max(its timestamp + 1 s, its errgate.not-before), and is served no earlier
# than every record before it in its partition
served = {}
for p in {r["partition"] for r in rung.values()}:
    latest = 0
    for r in sorted((r for r in rung.values() if r["partition"] == p), key=lambda r: r["offset"]):
        due = max(r["timestamp"] + 1000, int(r["headers"].get("errgate.not-before", "0")))
        latest = max(latest, due)
        served[r["v"]["id"]] = (due, latest)
bad3, bad1, waits, behind = [], [], [], 0
for i, m in sorted(mode.items()):
    if m == "ok":
        continue
    d, r = dec.get(i, []), rung.get(i)
    bad = bad3 if m == "ratelimit-3000" else bad1
    if len(d) != 1 or r is None or i not in ok_at:
        bad.append("%s: %d decisions, in rung %s, succeeded %s" % (i, len(d), r is not None, i in ok_at))
        continue
    d, h = d[0], r["headers"]
    t_dec = ms(d["ts"])
    due, latest = served[i]
    behind += latest > due
    waits.append(ok_at[i] - latest)
    want = ("ladder", "throttled", "src.retry.1s", 3000 if m == "ratelimit-3000" else 1000, 429)
    got = (d["action"], d.get("class"), d.get("lane"), d.get("delay_ms"), d.get("status"))
    if got != want:
        bad.append("%s: decision %s" % (i, got))
    elif m == "ratelimit-3000" and (h.get("error.retry-after-ms") != "3000" or
                                    abs(int(h.get("errgate.not-before", "0")) - (t_dec + 3000)) > 100):
        bad.append("%s: retry-after-ms=%s not-before=%s (decision at %d)" % (i, h.get("error.retry-after-ms"), h.get("errgate.not-before"), t_dec))
    elif m == "ratelimit-500" and (h.get("error.retry-after-ms") != "1000" or "errgate.not-before" in h):
        bad.append("%s: retry-after-ms=%s not-before=%s" % (i, h.get("error.retry-after-ms"), h.get("errgate.not-before")))
    elif not (latest - 20 <= ok_at[i] <= latest + 1500):
        bad.append("%s: tried again %+d ms from when it was due to be served" % (i, ok_at[i] - latest))
if waits:
    print("# rung records tried again %d..%d ms after they were due to be served; %d waited behind an earlier "
          "record's not-before" % (min(waits), max(waits), behind))
check(not bad3 and any(m == "ratelimit-3000" for m in mode.values()),
      "Retry-After 3 s: ladder with delay_ms 3000, errgate.not-before = decision + 3 s, tried again no earlier "
      "and within 1.5 s (%d bad: %s)" % (len(bad3), bad3[:3]))
check(not bad1 and any(m == "ratelimit-500" for m in mode.values()),
      "Retry-After 1 s (= the rung's delay): no errgate.not-before, tried again after the rung's 1 s, in offset "
      "order behind earlier records (%d bad: %s)" % (len(bad1), bad1[:3]))
done()
PY
[ "$FAILED" = 0 ]
