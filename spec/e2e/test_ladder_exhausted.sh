#!/usr/bin/env bash
# test_ladder_exhausted.sh — records that always fail transiently (mode
# `unavailable`, 503 every time) climb the whole ladder of the payments demo
# policy (examples/payments/policy.lua: 2 quick in-place retries, rungs 1s /
# 2s / 4s) and end in the DLQ with reason `exhausted`:
#   - DLQ headers: retry.count=3, errgate.attempts=6 (every attempt, in
#     place and on the rungs), previous.topic = the last rung topic,
#     original.topic/partition/offset and errgate.id = the source record,
#     errgate.action=dlq, error.class=transient; key, value and partition kept;
#   - errgate.history (msgpack, decoded by ladder_lanes.py) lists every
#     attempt in order: retry, retry, then one entry per rung whose `lane`
#     is the rung it was written to, then the DLQ; between two rung entries
#     at least that rung's delay passed (a rung record waits until due) and
#     not much more;
#   - the metrics count the exhausted decisions and the DLQ writes;
#   - healthy records of the same partitions all succeed; all offsets
#     (source and rungs) are committed at the end.
# Then the same policy under ordering = "partition": the ladder would let
# later records pass the failing one, so the gateway waits in place for
# each rung's delay (`ladder_in_place` logged, no record written to a rung
# topic), the record still ends in the DLQ with reason exhausted, and the
# records behind it on its partition succeed only after that. Its DLQ
# record says it climbed 3 rungs (retry.count=3, what the policy saw as
# ctx.retry_count), so that re-deciding it from the DLQ with the same
# policy (`errgate policy test --from-topic`) gives the same decision, as
# it does for the DLQ of the ordering "none" run.
# Breaker and retry budget are off here (test_breaker.sh, test_budget.sh).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ladder_lib.sh"
POLICY="$ROOT/examples/payments/policy.lua"
RUNGS=$(rung_topics src 1s 2s 4s)
ORUNGS=$(rung_topics ord 1s 2s 4s)
start_broker $(ladder_topics src 1s 2s 4s) $(ladder_topics ord 1s 2s 4s)
# same_decisions LANE N: `errgate policy test --from-topic LANE` re-decides
# LANE's N records with the policy and finds every decision the same.
same_decisions() {
  "$EG" policy test "$POLICY" --from-topic "$1" -b "$BOOTSTRAP" >"$T/$1.redecide" 2>&1
  grep -q ": $2 records, $2 same, 0 changed, 0 unreadable$" "$T/$1.redecide"
}
handler_at h
start_tail th "$T/h.log"; TAILPID=$LASTPID

# --- ordering "none": the rungs
gen_records 80 "ok:1 unavailable:1" | produce src
NU=$(gen_records 80 "ok:1 unavailable:1" | grep -c '"mode":"unavailable"')
ladder_config "$T/gw.lua" lx src none "$POLICY" "" 'admin = { listen = "127.0.0.1:0" },'
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin address: $(tail -3 "$T/gw.err")"
dlq_full() { [ "$(grep -c '"event":"decision".*"action":"dlq"' "$T/gw.err")" -ge "$NU" ] && all_committed lx src $RUNGS; }
wait_for 60 dlq_full && ok "all $NU unavailable records were decided to the DLQ and every offset committed" ||
  not_ok "after 60 s: $(grep -c '"action":"dlq"' "$T/gw.err") DLQ decisions of $NU, lag $(lag lx src)"
diag "ordering=none: done after $SECONDS s"
EXHAUSTED=$(metric "$ADDR" errgate_records_retry_exhausted_total)
DEAD=$(metric "$ADDR" errgate_records_dead_lettered_total 'reason="exhausted"')
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
offsets_all lx "$T/offsets.txt" src $RUNGS
check "committed offsets = end offsets on src and the rung topics (16 partitions)" committed_ok "$T/offsets.txt" 16
check "errgate_records_retry_exhausted_total = $NU ($EXHAUSTED)" [ "$EXHAUSTED" = "$NU" ]
check "errgate_records_dead_lettered_total{reason=\"exhausted\"} = $NU ($DEAD)" [ "$DEAD" = "$NU" ]
lanes_read "$T/lanes.jsonl" src src.dlq $RUNGS
check "re-deciding the DLQ with the same policy changes nothing (policy test --from-topic)" same_decisions src.dlq "$NU"

pycheck "$T/lanes.jsonl" "$T/h.log" <<'PY'
import sys
from ladder_lanes import check, done, load
recs = load(sys.argv[1])
src = {r["v"]["id"]: r for r in recs if r["topic"] == "src"}
unavail = {i for i, r in src.items() if r["v"]["mode"] == "unavailable"}
okrec = {i for i, r in src.items() if r["v"]["mode"] == "ok"}
succeeded = {l.split()[1] for l in open(sys.argv[2]) if l.startswith("ok ")}
dlq = [r for r in recs if r["topic"] == "src.dlq"]
check(okrec and okrec <= succeeded, "every ok record succeeded (%d of %d)" % (len(okrec & succeeded), len(okrec)))
check(not (unavail & succeeded), "no unavailable record succeeded")
ids = [r["v"]["id"] for r in dlq]
check(sorted(ids) == sorted(unavail), "the DLQ holds each unavailable record once (%d records, %d distinct, want %d)"
      % (len(ids), len(set(ids)), len(unavail)))
for t, n in (("src.retry.1s", 1), ("src.retry.2s", 2), ("src.retry.4s", 3)):
    got = sorted(r["v"]["id"] for r in recs if r["topic"] == t)
    check(got == sorted(unavail), "every unavailable record passed %s once (%d records)" % (t, len(got)))

bad_h, bad_hist, bad_gap = [], [], []
delays = [1000, 2000, 4000]
gaps = []
for r in dlq:
    h, rid = r["headers"], r["v"]["id"]
    s = src[rid]
    want = {"retry.count": "3", "errgate.attempts": "6", "previous.topic": "src.retry.4s", "original.topic": "src",
            "original.partition": str(s["partition"]), "original.offset": str(s["offset"]),
            "errgate.id": "src/%d/%d" % (s["partition"], s["offset"]), "errgate.reason": "exhausted",
            "errgate.action": "dlq", "error.class": "transient", "error.code": "http_503",
            "original.consumer.group": "lx"}
    diff = {k: h.get(k) for k, v in want.items() if h.get(k) != v}
    if diff or r["key"] != s["key"] or r["value"] != s["value"] or r["partition"] != s["partition"]:
        bad_h.append("%s: %s" % (rid, diff or "key/value/partition changed"))
    if any(r["header_counts"].get(k) != 1 for k in ("retry.count", "errgate.attempts", "error.class")):
        bad_h.append("%s: error headers appended, not replaced: %s" % (rid, r["header_counts"]))
    hist = r["history"] or []
    actions = [e.get("action") for e in hist]
    lanes = [e.get("lane") for e in hist]
    if r["history_error"] or actions != ["retry", "retry", "ladder", "ladder", "ladder", "dlq"] or \
       lanes != [None, None, "src.retry.1s", "src.retry.2s", "src.retry.4s", "src.dlq"] or \
       any(e.get("class") != "transient" or e.get("code") != "http_503" for e in hist):
        bad_hist.append("%s: %s %s" % (rid, r["history_error"], hist))
        continue
    t = [e["t"] for e in hist]
    if t != sorted(t):
        bad_hist.append("%s: times go backwards %s" % (rid, t))
    for k, d in enumerate(delays):
        gap = t[3 + k] - t[2 + k]
        gaps.append(gap - d)
        if not (d - 10 <= gap <= d + 1500):
            bad_gap.append("%s: %d ms between the %d ms rung's write and its next attempt" % (rid, gap, d))
check(dlq and not bad_h, "DLQ headers: retry.count=3, errgate.attempts=6 (the first, 2 in place, one per rung), "
      "previous.topic=src.retry.4s, original coordinates, reason exhausted, "
      "error headers replaced (%d bad: %s)" % (len(bad_h), bad_h[:3]))
check(dlq and not bad_hist, "errgate.history: retry, retry, a ladder entry per rung naming its lane, the DLQ (%d bad: %s)"
      % (len(bad_hist), bad_hist[:2]))
if gaps:
    print("# a rung attempt came %d..%d ms after the rung's delay" % (min(gaps), max(gaps)))
check(dlq and not bad_gap, "each rung attempt came after the rung's delay and within 1.5 s of it (%d bad: %s)"
      % (len(bad_gap), bad_gap[:3]))
done()
PY

# --- ordering "partition": the same policy waits in place
diag "ordering=partition: start after $SECONDS s"
for p in 0 1 2 3; do
  { printf 'u%d\t{"id":"ou%d","mode":"unavailable"}\n' "$p" "$p"
    for j in 1 2 3; do printf 'k%d\t{"id":"oo%d-%d","mode":"ok"}\n' "$j" "$p" "$j"; done; } |
    kcat -P -b "$BOOTSTRAP" -t ord -p "$p" -K $'\t' -X acks=all 2>>"$T/kcat-produce.err" || die "kcat produce -p $p failed"
done
ladder_config "$T/ord.lua" lxp ord partition "$POLICY"
start_gateway gwp "$T/ord.lua"
ord_done() { [ "$(grep -c '"event":"decision".*"action":"dlq"' "$T/gwp.err")" -ge 4 ] && all_committed lxp ord; }
wait_for 45 ord_done && ok "ordering=partition: the 4 unavailable records were dead-lettered and ord committed" ||
  not_ok "ordering=partition: after 45 s $(grep -c '"action":"dlq"' "$T/gwp.err") DLQ decisions, lag $(lag lxp ord)"
diag "ordering=partition: done after $SECONDS s"
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
stop_tail th "$TAILPID"
offsets_all lxp "$T/ord_offsets.txt" ord $ORUNGS
check "committed offsets = end offsets on ord" committed_ok "$T/ord_offsets.txt" 16
check "no record was written to a rung topic under ordering=partition" \
  awk '$1 ~ /^ord\.retry\./ { n++; if ($4 != 0) bad++ } END { exit !(n == 12 && !bad) }' "$T/ord_offsets.txt"
n_inplace=$(grep -c '"event":"ladder_in_place"' "$T/gwp.err")
check "ladder_in_place logged for each rung of each record (12, got $n_inplace)" [ "$n_inplace" = 12 ]
lanes_read "$T/ord.jsonl" ord ord.dlq
check "ordering=partition: re-deciding the DLQ with the same policy changes nothing (policy test --from-topic)" \
  same_decisions ord.dlq 4

pycheck "$T/ord.jsonl" "$T/th.tl" <<'PY'
import sys
from ladder_lanes import check, done, load, ms
recs = load(sys.argv[1])
src = {r["v"]["id"]: r for r in recs if r["topic"] == "ord"}
dlq = {r["v"]["id"]: r for r in recs if r["topic"] == "ord.dlq"}
ok_at = {}
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) >= 3 and f[1] == "ok":
        ok_at.setdefault(f[2], float(f[0]) * 1000)
bad, counts = [], []
for p in range(4):
    r = dlq.get("ou%d" % p)
    s = src["ou%d" % p]
    if r is None:
        bad.append("ou%d not in the DLQ" % p); continue
    h = r["headers"]
    want = {"errgate.reason": "exhausted", "previous.topic": "ord", "original.topic": "ord",
            "original.partition": str(s["partition"]), "original.offset": str(s["offset"]), "error.class": "transient"}
    diff = {k: h.get(k) for k, v in want.items() if h.get(k) != v}
    if diff:
        bad.append("ou%d: %s" % (p, diff))
    if h.get("retry.count") != "3":
        counts.append("ou%d: retry.count=%s" % (p, h.get("retry.count")))
    hist = r["history"] or []
    actions = [e.get("action") for e in hist]
    if actions != ["retry"] * 5 + ["dlq"]:
        bad.append("ou%d: history actions %s" % (p, actions))
    else:
        t = [e["t"] for e in hist]
        for k, d in enumerate((1000, 2000, 4000)):
            if t[3 + k] - t[2 + k] < d - 10:
                bad.append("ou%d: waited %d ms in place for the %d ms rung" % (p, t[3 + k] - t[2 + k], d))
    dead_at = ms(h.get("error.timestamp", "1970-01-01T00:00:00.000Z"))
    for j in (1, 2, 3):
        i = "oo%d-%d" % (p, j)
        if i not in ok_at:
            bad.append("%s never succeeded" % i)
        elif ok_at[i] < dead_at - 50:
            bad.append("%s succeeded %d ms before ou%d left its partition" % (i, dead_at - ok_at[i], p))
check(len(dlq) == 4 and not bad, "ordering=partition: each failing record waited in place through every rung, "
      "went to the DLQ as exhausted, and the records behind it waited (%d problems: %s)" % (len(bad), bad[:3]))
check(len(dlq) == 4 and not counts, "ordering=partition: the DLQ records say how far they climbed, retry.count=3 "
      "(the policy saw ctx.retry_count 3; %d differ: %s)" % (len(counts), counts[:4]))
done()
PY
[ "$FAILED" = 0 ]
