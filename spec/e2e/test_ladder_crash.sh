#!/usr/bin/env bash
# test_ladder_crash.sh — at-least-once across a crash while records sit in
# the retry ladder: a test policy climbs rungs 2s / 4s / 8s (then DLQ,
# exhausted) on 503s; the provider is down for 10 s for some records
# (outage-10000) and always for others (unavailable). The gateway is killed
# with SIGKILL once rung topics hold records it has not finished
# (committed < end on a rung) and again while records are on the later
# rungs, and restarted each time. In the end: every record has exactly one
# kind of outcome — ok and outage records succeeded, permanent ones are in
# the DLQ (reason permanent), unavailable ones in the DLQ (reason exhausted,
# retry.count=3) — none is missing, committed = end offsets on the source
# and every rung topic. Duplicates (a success or a lane record repeated
# after a crash) are allowed and counted.
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ladder_lib.sh"
RUNGS=$(rung_topics src 2s 4s 8s)
start_broker $(ladder_topics src 2s 4s 8s)
gen_records 600 "ok:50 outage-10000:25 unavailable:15 permanent:10" | produce src
handler_at h
ladder_config "$T/gw.lua" lcrash src none "$FIXTURES/ladder_2s_4s_8s.lua"

# rung_lag TOPIC...: total lag of the group on TOPICs (records not finished)
rung_lag() { "$EG" offsets -b "$BOOTSTRAP" -g lcrash "$@" 2>/dev/null | awk '$1=="total"{print $4}'; }
in_rungs() { local n; n=$(rung_lag "$@"); [ -n "$n" ] && [ "$n" -gt 0 ]; }
# crash NAME WHAT SECONDS COND...: start the gateway NAME, wait up to SECONDS
# for COND (WHAT it shows), let half a second pass, SIGKILL the gateway and
# check that records were left unfinished in the rungs.
crash() {
  local n=$1 what=$2 secs=$3 l; shift 3
  start_gateway "$n" "$T/gw.lua"
  wait_for "$secs" "$@" || diag "$n: never saw $what"
  sleep 0.5
  l=$(rung_lag $RUNGS)
  kill -9 "$GW_PID"; wait "$GW_PID" 2>/dev/null
  diag "$n killed after $SECONDS s: $l rung records unfinished, $(grep -c '"action":"ladder"' "$T/$n.err") ladder decisions"
  check "$n was killed with records unfinished in the rungs ($what; rung lag ${l:-?})" [ "${l:-0}" -gt 0 ]
}
first_rung() { grep -q '"event":"pause","topic":"src\.retry\.2s".*"reasons":"due"' "$T/gw1.err" && in_rungs $RUNGS; }
later_rungs() { grep -q '"lane":"src\.retry\.[48]s"' "$T/gw2.err" && in_rungs src.retry.4s src.retry.8s; }
crash gw1 "records waiting on the 2s rung" 30 first_rung
crash gw2 "records on the 4s and 8s rungs" 45 later_rungs

start_gateway gw3 "$T/gw.lua"
NDEAD=$(gen_records 600 "ok:50 outage-10000:25 unavailable:15 permanent:10" | grep -cE '"mode":"(unavailable|permanent)"')
finished() { all_committed lcrash src $RUNGS && [ "$(cat "$T"/gw*.err | grep -c '"event":"decision".*"action":"dlq"')" -ge "$NDEAD" ]; }
if wait_for 90 finished; then ok "after 2 kills and restarts every record is finished and committed (after $SECONDS s)"
else not_ok "after 90 s: lag $(rung_lag src $RUNGS)"; fi
stop_gateway "$GW_PID"
check "the last gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
offsets_all lcrash "$T/offsets.txt" src $RUNGS
check "committed offsets = end offsets on src and every rung topic (16 partitions)" committed_ok "$T/offsets.txt" 16
lanes_read "$T/lanes.jsonl" src src.dlq src.quarantine $RUNGS

pycheck "$T/lanes.jsonl" "$T/h.log" <<'PY'
import sys
from ladder_lanes import check, done, load
recs = load(sys.argv[1])
src = {r["v"]["id"]: r for r in recs if r["topic"] == "src"}
mode = {i: r["v"]["mode"] for i, r in src.items()}
expect = {"ok": "handler", "outage-10000": "handler", "permanent": "dlq", "unavailable": "dlq"}
lines = [l.split() for l in open(sys.argv[2]) if l.startswith("ok ")]
succeeded = {f[1] for f in lines}
dlq = [r for r in recs if r["topic"] == "src.dlq"]
dlq_ids = {r["v"]["id"] for r in dlq}
quar = [r for r in recs if r["topic"] == "src.quarantine"]
rung = [r for r in recs if r["topic"].startswith("src.retry.")]
outcome, overlaps = {}, []
for name, ids in (("handler", succeeded), ("dlq", dlq_ids)):
    for i in ids:
        if i in outcome: overlaps.append(i)
        outcome[i] = name
missing = sorted(i for i in src if i not in outcome)
wrong = sorted((i, mode[i], outcome[i]) for i in src if i in outcome and outcome[i] != expect[mode[i]])
print("# records %d: succeeded %d, dlq %d, in rungs over time %d" % (len(src), len(succeeded & set(src)), len(dlq_ids), len(rung)))
check(len(src) == 600, "the source holds the 600 records (%d)" % len(src))
check(not missing, "0 lost: every record succeeded or is in the DLQ (%d missing: %s)" % (len(missing), missing[:5]))
check(not overlaps, "no record both succeeded and dead-lettered (%d: %s)" % (len(overlaps), overlaps[:5]))
check(not wrong, "every outcome matches the record's mode (%d wrong: %s)" % (len(wrong), wrong[:5]))
check(not quar and not (set(outcome) - set(src)), "no quarantined record, no outcome for a record never produced")
bad = []
for r in dlq:
    h, i = r["headers"], r["v"]["id"]
    s = src.get(i)
    want = ("exhausted", "3", "src.retry.8s") if mode.get(i) == "unavailable" else ("permanent", "0", "src")
    got = (h.get("errgate.reason"), h.get("retry.count"), h.get("previous.topic"))
    if s is None or got != want or h.get("original.offset") != str(s["offset"]) or \
       h.get("original.partition") != str(s["partition"]) or h.get("original.topic") != "src":
        bad.append("%s (%s): %s, original %s/%s" % (i, mode.get(i), got, h.get("original.partition"), h.get("original.offset")))
check(not bad, "DLQ records: unavailable ones exhausted after the 8s rung (retry.count=3), permanent ones at once, "
      "original coordinates kept across the crashes (%d bad: %s)" % (len(bad), bad[:3]))
dup_ok = len(lines) - len(succeeded)
dup_dlq = len(dlq) - len(dlq_ids)
rung_keys = [(r["topic"], r["v"]["id"]) for r in rung]
dup_rung = len(rung_keys) - len(set(rung_keys))
print("# duplicates: %d (handler %d, dlq %d, rung records %d)" % (dup_ok + dup_dlq + dup_rung, dup_ok, dup_dlq, dup_rung))
done()
PY
[ "$FAILED" = 0 ]
