#!/usr/bin/env bash
# test_ladder.sh — the retry ladder under a partial outage (issue 4): the
# provider answers 503 to 30% of the records (mode outage-8000) for the 8 s
# after it starts, then recovers. With the payments demo policy
# (examples/payments/policy.lua: 2 quick in-place retries, then rungs 1s /
# 2s / 4s, then the DLQ), the demo's retry budget (20%, min 3: most outage
# records climb at once, reason retry_budget) and ordering "none":
#   - every outage record climbs the rungs and succeeds after the recovery
#     (its id is in the handler's success log; none is in the DLQ);
#   - the healthy records keep flowing meanwhile, at >= 90% of the rate of a
#     run without failures (see "Fairness" below);
#   - permanent records (400) reach the DLQ at once: one decision, attempt 1,
#     retry.count=0, error.timestamp before the outage ended and within 1 s
#     of the end of the healthy flow (they are interleaved with ~1100
#     healthy records that take ~3 s, so "within 1 s of the run start"
#     cannot hold for all; what matters is that none waits for the outage);
#   - rung records carry retry.count = the rung's step, previous.topic and
#     the original coordinates; rung partitions are paused for `due` and
#     resumed; errgate_records_laddered_total equals the rung topics' size;
#   - at the end committed = end offsets on the source and every rung topic,
#     every record has exactly one kind of outcome (own accounting:
#     account.py does not know outage-MS or rung topics), 0 lost.
#
# Fairness of the throughput comparison: both runs use the same handler
# build, config shape (policy, rungs subscribed, target concurrency 16),
# and the same number of healthy records. Healthy records are `slow-40`
# (200 after 40 ms), so their rate is bound by the target's concurrency
# (16 / 40 ms = 400/s), like a real provider's latency, rather than by CPU
# noise on a 2-core machine; the outage records compete for the same 16
# connections (their 503 answers are immediate). The rate is measured from
# the handler's success log (timestamped by a tailer as lines appear), over
# the middle 90% of the healthy successes (5th to 95th percentile) in each
# run, so the group join and the last stragglers count in neither. The
# breaker is off here (test_breaker.sh covers it): with retries counted, a
# 30% outage makes more than half of the calls fail, and an open breaker
# holds healthy records by design.
# spec/run.sh: alone
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ladder_lib.sh"
POLICY="$ROOT/examples/payments/policy.lua"
RUNGS=$(rung_topics src 1s 2s 4s)
start_broker $(ladder_topics src 1s 2s 4s) $(ladder_topics base 1s 2s 4s)

gen_records 1700 "slow-40:64 outage-8000:30 permanent:6" >"$T/mixed.tsv"
H=$(grep -c '"mode":"slow-40"' "$T/mixed.tsv")
NOUT=$(grep -c '"mode":"outage-8000"' "$T/mixed.tsv")
NPERM=$(grep -c '"mode":"permanent"' "$T/mixed.tsv")
diag "mixed run: $H healthy (slow-40), $NOUT outage-8000, $NPERM permanent"

# --- baseline: the same number of healthy records, no failures
gen_records "$H" "slow-40:1" | sed 's/"id":"r/"id":"b/' | produce base
handler_at hbase
start_tail tbase "$T/hbase.log"; TBASE=$LASTPID
ladder_config "$T/base.lua" lbase base none "$POLICY" 'retry_budget = { percent = 20, min = 3 },'
start_gateway gwbase "$T/base.lua"
wait_drained lbase base 60 || die "baseline did not drain: lag $(lag lbase base)"
stop_gateway "$GW_PID"
stop_tail tbase "$TBASE"

# --- the outage run: the handler starts right before the gateway
produce src <"$T/mixed.tsv"
# the handler's outage clock starts between these two readings (a loaded
# machine can put a second between them): a success is early only if it
# came before the earliest possible end of the outage
HSTART_LO=$($PY -c 'import time; print(int(time.time() * 1000))')
handler_at hmix
HSTART=$($PY -c 'import time; print(int(time.time() * 1000))')
start_tail tmix "$T/hmix.log"; TMIX=$LASTPID
ladder_config "$T/gw.lua" ladder src none "$POLICY" 'retry_budget = { percent = 20, min = 3 },' \
  'admin = { listen = "127.0.0.1:0" },'
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin address: $(tail -3 "$T/gw.err")"
done_all() { all_committed ladder src $RUNGS && [ "$(awk '{print $2}' "$T/hmix.log" | sort -u | wc -l)" -ge $((H + NOUT)) ]; }
if wait_for 60 done_all; then ok "every record has an outcome and every offset is committed (source and rungs)"
else not_ok "not drained after 60 s: $(awk '{print $2}' "$T/hmix.log" | sort -u | wc -l) of $((H + NOUT)) successes"; fi
LADDERED=$(metric "$ADDR" errgate_records_laddered_total)
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
stop_tail tmix "$TMIX"

offsets_all ladder "$T/offsets.txt" src $RUNGS
check "committed offsets = end offsets on src and every rung topic (16 partitions)" committed_ok "$T/offsets.txt" 16
lanes_read "$T/lanes.jsonl" src src.dlq src.quarantine $RUNGS
check "rung partitions were paused until their head record was due" \
  grep -q '"event":"pause","topic":"src\.retry\.[124]s".*"reasons":"[a-z,]*due' "$T/gw.err"
check "and resumed when it was" grep -q '"event":"resume","topic":"src\.retry\.[124]s".*"reasons":"[a-z,]*due' "$T/gw.err"
check "decisions name the rung and its lane" \
  grep -q '"event":"decision".*"action":"ladder".*"lane":"src\.retry\.1s","rung":1' "$T/gw.err"

pycheck "$T/lanes.jsonl" "$T/tbase.tl" "$T/tmix.tl" "$T/gw.err" "$HSTART" "$LADDERED" "$HSTART_LO" <<'PY'
import json, sys
from ladder_lanes import check, done, events, load, ms
lanes_path, tbase, tmix, gwlog, hstart, laddered, hstart_lo = sys.argv[1:8]
hstart, hstart_lo = int(hstart), int(hstart_lo)
recs = load(lanes_path)
src = {r["v"]["id"]: r for r in recs if r["topic"] == "src"}
mode = {i: r["v"]["mode"] for i, r in src.items()}
by_coord = {"src/%d/%d" % (r["partition"], r["offset"]): i for i, r in src.items()}
healthy = {i for i, m in mode.items() if m == "slow-40"}
outage = {i for i, m in mode.items() if m == "outage-8000"}
perm = {i for i, m in mode.items() if m == "permanent"}

def tail(path):
    out = []
    for line in open(path):
        f = line.split()
        if len(f) >= 3 and f[1] == "ok": out.append((float(f[0]), f[2]))
    return out

# --- throughput of the healthy records over the middle 90% of their successes
def rate(times):
    times = sorted(times)
    k = len(times)
    lo, hi = int(k * 0.05), int(k * 0.95) - 1
    return (hi - lo) / (times[hi] - times[lo]) if k > 20 and times[hi] > times[lo] else 0.0
base, mix = tail(tbase), tail(tmix)
rb = rate([t for t, i in base if i.startswith("b")])
rm = rate([t for t, i in mix if i in healthy])
print("# healthy rate: baseline %.1f/s, during the outage %.1f/s, ratio %.3f" % (rb, rm, rm / rb if rb else 0))
check(rb > 0 and rm >= 0.9 * rb, "healthy records flow at >= 90%% of the no-failure rate (%.1f vs %.1f/s)" % (rm, rb))
first_ok = {}
for t, i in mix:
    first_ok.setdefault(i, t)
hts = sorted(first_ok[i] for i in healthy if i in first_ok) or [0]
healthy_done = hts[-1]
h95 = hts[int(len(hts) * 0.95) - 1]
print("# healthy flow: 95%% by +%d ms, all by +%d ms; the outage ended at +8000 ms (handler start)"
      % (h95 * 1000 - hstart, healthy_done * 1000 - hstart))
h5 = hts[int(len(hts) * 0.05)]
during = sum(1 for e in events(gwlog, "decision") if h5 * 1000 <= ms(e["ts"]) <= h95 * 1000)
print("# %d failure decisions during the measured window" % during)
check(h95 * 1000 < hstart + 8000 and during >= 100,
      "the measured healthy flow ran during the outage, among %d failure decisions (the comparison means something)" % during)

# --- outcomes (account.py knows neither outage-MS nor rungs: our own accounting)
dlq = [r for r in recs if r["topic"] == "src.dlq"]
quar = [r for r in recs if r["topic"] == "src.quarantine"]
dlq_ids = [r["v"]["id"] for r in dlq]
ok_ids = set(first_ok)
check(len(src) == len(healthy) + len(outage) + len(perm) and outage and perm,
      "source holds the mixed records (%d healthy, %d outage, %d permanent)" % (len(healthy), len(outage), len(perm)))
check(healthy <= ok_ids, "every healthy record succeeded (%d missing)" % len(healthy - ok_ids))
check(outage <= ok_ids, "every outage record succeeded after the recovery (%d missing: %s)"
      % (len(outage - ok_ids), sorted(outage - ok_ids)[:5]))
early = [i for i in outage if i in first_ok and first_ok[i] * 1000 < hstart_lo + 8000 - 300]
check(not early, "no outage record succeeded before the provider recovered (%d)" % len(early))
check(set(dlq_ids) == perm, "the DLQ holds exactly the permanent records (%d, want %d; extra %s)"
      % (len(set(dlq_ids)), len(perm), sorted(set(dlq_ids) - perm)[:5]))
check(not quar, "nothing was quarantined (%d)" % len(quar))
check(not (ok_ids & perm), "no permanent record succeeded (%d)" % len(ok_ids & perm))
check(not (ok_ids - healthy - outage), "no success for a record never produced (%d)" % len(ok_ids - healthy - outage))
print("# duplicates: %d (handler %d, dlq %d)" % (len(mix) - len(ok_ids) + len(dlq_ids) - len(set(dlq_ids)),
                                                len(mix) - len(ok_ids), len(dlq_ids) - len(set(dlq_ids))))

# --- permanent records: at once
decisions = {}
for e in events(gwlog, "decision"):
    decisions.setdefault(by_coord.get(e["id"], e["id"]), []).append(e)
bad = []
for r in dlq:
    h, rid = r["headers"], r["v"]["id"]
    s, d = src.get(rid), decisions.get(rid, [])
    t = ms(h.get("error.timestamp", "1970-01-01T00:00:00.000Z"))
    if (h.get("retry.count"), h.get("previous.topic"), h.get("errgate.reason")) != ("0", "src", "permanent"):
        bad.append("%s: retry.count=%s previous.topic=%s reason=%s" % (rid, h.get("retry.count"), h.get("previous.topic"), h.get("errgate.reason")))
    elif len(d) != 1 or d[0]["attempt"] != 1 or d[0]["action"] != "dlq":
        bad.append("%s: decisions %s" % (rid, [(x["attempt"], x["action"]) for x in d]))
    elif not (t < hstart + 8000 and t <= healthy_done * 1000 + 1000):
        bad.append("%s: dead-lettered at +%d ms (outage ends +8000, healthy flow +%d)" % (rid, t - hstart, healthy_done * 1000 - hstart))
    elif s is None or h.get("original.offset") != str(s["offset"]) or r["partition"] != s["partition"]:
        bad.append("%s: original.offset %s, partition %d" % (rid, h.get("original.offset"), r["partition"]))
check(dlq and not bad, "permanent records were dead-lettered at once: one decision, attempt 1, retry.count=0, "
      "during the healthy flow (%d bad: %s)" % (len(bad), bad[:3]))

# --- rung records
step = {"src.retry.1s": ("1", "src"), "src.retry.2s": ("2", "src.retry.1s"), "src.retry.4s": ("3", "src.retry.2s")}
rung_recs = [r for r in recs if r["topic"] in step]
counts = {t: sum(1 for r in rung_recs if r["topic"] == t) for t in step}
print("# rung records: %s; errgate_records_laddered_total %s" % (counts, laddered))
bad = []
for r in rung_recs:
    h, rid = r["headers"], r["v"]["id"]
    want_count, want_prev = step[r["topic"]]
    s = src.get(rid)
    if rid not in outage:
        bad.append("%s in %s is not an outage record" % (rid, r["topic"]))
    elif (h.get("retry.count"), h.get("previous.topic"), h.get("errgate.action")) != (want_count, want_prev, "ladder"):
        bad.append("%s in %s: retry.count=%s previous.topic=%s action=%s" % (rid, r["topic"], h.get("retry.count"), h.get("previous.topic"), h.get("errgate.action")))
    elif (h.get("original.topic"), h.get("original.partition"), h.get("original.offset"), h.get("errgate.id")) != \
         ("src", str(s["partition"]), str(s["offset"]), "src/%d/%d" % (s["partition"], s["offset"])):
        bad.append("%s in %s: original %s/%s/%s" % (rid, r["topic"], h.get("original.topic"), h.get("original.partition"), h.get("original.offset")))
    elif r["partition"] != s["partition"] or r["key"] != s["key"] or r["value"] != s["value"]:
        bad.append("%s in %s: partition/key/value changed" % (rid, r["topic"]))
    elif not r["history"] or r["history"][-1].get("lane") != r["topic"]:
        bad.append("%s in %s: history %s %s" % (rid, r["topic"], r["history"], r["history_error"]))
check(counts["src.retry.1s"] > 0, "outage records climbed the ladder (%d on the first rung)" % counts["src.retry.1s"])
check(not bad, "rung records: retry.count = step, previous.topic, original coordinates, same partition/key/value, "
      "history naming the rung (%d bad: %s)" % (len(bad), bad[:3]))
check(laddered != "?" and int(float(laddered)) == len(rung_recs),
      "errgate_records_laddered_total (%s) = records in the rung topics (%d)" % (laddered, len(rung_recs)))
done()
PY
[ "$FAILED" = 0 ]
