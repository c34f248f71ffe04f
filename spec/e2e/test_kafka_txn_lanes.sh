#!/usr/bin/env bash
# test_kafka_txn_lanes.sh — exactly-once lanes (lanes.transactional) on a
# real cluster of 3 brokers (replication 3, min ISR 2): a dead-letter storm
# with a retry ladder (2s / 4s / 8s, then the DLQ) is interrupted twice:
# run 1 kills -9 the gateway mid-storm and starts it again (same instance:
# its transactional.id fences the dead one's open transaction); run 2
# kills -9 the broker that is the transaction coordinator of the gateway's
# transactional.id mid-storm (the coordinator moves to a replica), then a
# second process with the same lanes.instance fences the first (exit 1). In
# run 1 a second instance also joins the group mid-storm (a rebalance whose
# revoke commits in a transaction). After
# each run, a read_committed reader of every lane (DLQ, quarantine, every
# rung) sees each failed record exactly once per lane it belongs to (0
# duplicates, 0 lost), no successful record in any lane, and the group's
# committed offsets = end offsets on the source and every rung. A
# read_uncommitted reader shows what the aborted transactions left behind
# (diagnostic only: how many depends on timing). The target itself sees
# records at least once (the handler's log may repeat ids).
# Last, the cost: the same storm's dead letters (no ladder) with and
# without transactions, records/s and the commit latency, printed as
# diagnostics (no threshold: timing on a shared machine).
# The embedded broker has no real transactions: the gateway refuses the
# mode there (e2e/test_txn_refused checks that, and the config refusals).
# spec/run.sh: kafka only
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ladder_lib.sh"
[ "$BROKER" = kafka ] || die "a real-cluster test: run it with BROKER=kafka"
N=${TXN_RECORDS:-600}
MIX="ok:30 unavailable:20 permanent:50"
KA() { $PY "$ROOT/spec/e2e/kafka_admin.py" "$1" "$BOOTSTRAP" "${@:2}"; }
CL() { "$ROOT/spec/kafka/cluster.sh" "$@" --dir "$KAFKA_DIR" >>"$T/cluster-ops.out" 2>>"$T/cluster-ops.err"; }

start_broker --brokers 3 $(ladder_topics s1 2s 4s 8s) $(ladder_topics s2 2s 4s 8s) \
  --topic b0:4 --topic b0.dlq:4 --topic b1:4 --topic b1.dlq:4
handler_at h
gen_records "$N" "$MIX" | produce s1
gen_records "$N" "$MIX" | produce s2
NDEAD=$(gen_records "$N" "$MIX" | grep -cvE '"mode":"ok"')

# txn_config FILE GROUP SRC INSTANCE: the ladder config, transactional.
txn_config() {
  ladder_config "$1" "$2" "$3" none "$FIXTURES/ladder_2s_4s_8s.lua"
  sed -i "s/retry = \"{topic}.retry.{rung}\" }/retry = \"{topic}.retry.{rung}\", transactional = true, instance = \"$4\" }/" "$1"
  grep -q 'transactional = true' "$1" || die "txn_config: no lanes.transactional in $1"
}
dlq_decisions() { [ "$(cat "$@" 2>/dev/null | grep -c '"action":"dlq"')" -ge "$NDEAD" ]; }
rung_lag() { "$EG" offsets -b "$BOOTSTRAP" -g "$1" "${@:2}" 2>/dev/null | awk '$1=="total"{print $4}'; }

# verify RUN SRC GROUP: the read_committed lanes of SRC and its committed offsets.
verify() {
  local run=$1 s=$2 g=$3 rungs
  rungs=$(rung_topics "$s" 2s 4s 8s)
  offsets_all "$g" "$T/$run.offsets" "$s" $rungs
  check "$run: committed offsets = end offsets on $s and every rung (16 partitions)" committed_ok "$T/$run.offsets" 16
  $PY "$ROOT/spec/e2e/txn_lanes.py" "$BOOTSTRAP" read_committed "$T/$run.committed.jsonl" "$s" "$s.dlq" \
    "$s.quarantine" $rungs 2>"$T/$run.read.err" || die "$run: read_committed: $(cat "$T/$run.read.err")"
  $PY "$ROOT/spec/e2e/txn_lanes.py" "$BOOTSTRAP" read_uncommitted "$T/$run.all.jsonl" "$s.dlq" $rungs \
    2>>"$T/$run.read.err" || die "$run: read_uncommitted: $(cat "$T/$run.read.err")"
  pycheck "$T/$run.committed.jsonl" "$T/$run.all.jsonl" "$s" "$run" <<'PY'
import collections, sys
from ladder_lanes import check, done, load
recs, everything, s, run = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3], sys.argv[4]
src = {r["v"]["id"]: r["v"]["mode"] for r in recs if r["topic"] == s}
lanes = {s + ".dlq": ("unavailable", "permanent")}
for rung in ("2s", "4s", "8s"):
    lanes["%s.retry.%s" % (s, rung)] = ("unavailable",)
copies = collections.Counter((r["topic"], r["v"].get("id")) for r in recs if r["topic"] != s)
check(len(src) > 0 and all(m in ("ok", "unavailable", "permanent") for m in src.values()),
      "%s: the source holds %d records of the test's modes" % (run, len(src)))
for lane, modes in sorted(lanes.items()):
    want = {i for i, m in src.items() if m in modes}
    got = {i for (t, i) in copies if t == lane}
    dups = sorted((i, n) for (t, i), n in copies.items() if t == lane and n > 1)
    lost = sorted(want - got)
    # a record of another mode whose call timed out (a commit that blocks the loop while the
    # coordinator moves outlasts a request's timeout) is laddered too: once, like the others
    timed_out = {r["v"].get("id") for r in recs if r["topic"] == lane and r["headers"].get("error.code") == "timeout"}
    extra = sorted(got - want - timed_out)
    if got - want:
        print("# %s %s: %d records of other modes after a target timeout" % (run, lane, len(got - want)))
    aborted = sum(1 for r in everything if r["topic"] == lane) - sum(n for (t, _), n in copies.items() if t == lane)
    print("# %s %s: %d committed, %d more records read_uncommitted (aborted transactions)"
          % (run, lane, sum(n for (t, _), n in copies.items() if t == lane), aborted))
    check(not dups and not lost and not extra,
          "%s: read_committed %s holds each of its %d failed records exactly once (%d duplicated %s, %d lost %s, "
          "%d not its own %s)" % (run, lane, len(want), len(dups), dups[:3], len(lost), lost[:3], len(extra), extra[:3]))
quar = [r for r in recs if r["topic"] == s + ".quarantine"]
check(not quar, "%s: nothing quarantined (%d)" % (run, len(quar)))
hdr = [r for r in recs if r["topic"] == s + ".dlq" and src.get(r["v"].get("id")) == "unavailable"
       and r["headers"].get("retry.count") != "3"]
check(not hdr, "%s: every exhausted dead letter climbed the 3 rungs (retry.count 3; %d not)" % (run, len(hdr)))
done()
PY
}

# ---- run 1: kill -9 the gateway mid-storm, restart it -----------------------------------
txn_config "$T/g1.lua" txn1 s1 a
start_gateway gw1 "$T/g1.lua"
wait_for 60 grep -q '"event":"lanes_transactional"' "$T/gw1.err" || die "gw1 started no transactions: $(tail -3 "$T/gw1.err")"
storm() { [ "$(grep -c '"action":"dlq"' "$T/gw1.err")" -ge 60 ] && [ "$(rung_lag txn1 $(rung_topics s1 2s 4s 8s))" -gt 0 ]; }
wait_for 60 storm || diag "gw1: the storm did not reach 60 dead letters with records in the rungs"
kill -9 "$GW_PID"; wait "$GW_PID" 2>/dev/null
unfinished() { left=$(rung_lag txn1 s1 $(rung_topics s1 2s 4s 8s)); [ -n "$left" ]; }
left=""
wait_for 30 unfinished || diag "errgate offsets did not answer for txn1 in 30 s"
diag "gw1 killed after $(grep -c '"action":"dlq"' "$T/gw1.err") dlq decisions, $SECONDS s; ${left:-?} records of s1 and its rungs unfinished"
check "gw1 was killed in the middle of the storm (${left:-?} records unfinished)" test "${left:-0}" -gt 0
start_gateway gw2 "$T/g1.lua"
GW2=$GW_PID
# a second instance joins the group mid-storm: the first one's revoke commits in a transaction
wait_for 60 grep -q '"event":"assign"' "$T/gw2.err" || diag "gw2: no assignment in 60 s"
txn_config "$T/g1b.lua" txn1 s1 a2
start_gateway gw2b "$T/g1b.lua"
GW2B=$GW_PID
wait_for 60 grep -q '"event":"revoke"' "$T/gw2.err" || diag "gw2: no revoke in 60 s after gw2b joined"
finished1() { all_committed txn1 s1 $(rung_topics s1 2s 4s 8s) && dlq_decisions "$T/gw1.err" "$T/gw2.err" "$T/gw2b.err"; }
if wait_for 120 finished1; then ok "run 1: the restarted instance finished the storm (after $SECONDS s)"
else not_ok "run 1: not finished in 120 s: lag $(lag txn1 s1), rungs $(rung_lag txn1 $(rung_topics s1 2s 4s 8s))"; fi
stop_gateway "$GW2B"
check "run 1: gw2b (instance a2, joined mid-storm) exits 0 (exit $RC)" [ "$RC" = 0 ]
stop_gateway "$GW2"
check "run 1: gw2 exits 0 (exit $RC)" [ "$RC" = 0 ]
verify run1 s1 txn1

# ---- run 2: kill -9 the transaction coordinator's broker mid-storm ----------------------
txn_config "$T/g2.lua" txn2 s2 b
start_gateway gw3 "$T/g2.lua"
wait_for 60 grep -q '"event":"lanes_transactional"' "$T/gw3.err" || die "gw3 started no transactions: $(tail -3 "$T/gw3.err")"
# at its assignment, before its first transaction: the storm's first commits meet a dead coordinator
wait_for 60 grep -q '"event":"assign"' "$T/gw3.err" || diag "gw3: no assignment in 60 s"
coord=$(KA txn-coordinator errgate.txn2.b 2>/dev/null) || die "no transaction coordinator for errgate.txn2.b"
kill -9 "$(kafka_broker_pid "$coord")"
diag "killed broker $coord (transaction coordinator of errgate.txn2.b) after $(grep -c '"action":"dlq"' "$T/gw3.err") dlq decisions"
finished2() { all_committed txn2 s2 $(rung_topics s2 2s 4s 8s) && dlq_decisions "$T/gw3.err"; }
if wait_for 180 finished2; then ok "run 2: the gateway finished the storm on the 2 brokers left (after $SECONDS s)"
else not_ok "run 2: not finished in 180 s: lag $(lag txn2 s2), rungs $(rung_lag txn2 $(rung_topics s2 2s 4s 8s))"; fi
# a second process with the same lanes.instance fences the first: it stops, exit 1, nothing more committed
# (gw4's init_transactions fences gw3's producer; gw3 finds out at its next
# transaction: 40 new records, over every partition, give both work)
GW3=$GW_PID
start_gateway gw4 "$T/g2.lua"
wait_for 60 grep -q '"event":"lanes_transactional"' "$T/gw4.err" || die "gw4 started no transactions: $(tail -3 "$T/gw4.err")"
gen_records 40 "permanent:1 ok:1" | sed 's/"id":"r/"id":"f/' | produce s2
gone3() { ! kill -0 "$GW3" 2>/dev/null; }
if wait_for 90 gone3; then ok "gw3 stopped by itself once gw4 took its transactional.id"
else not_ok "gw3 still runs 90 s after gw4 took its transactional.id"; kill -TERM "$GW3"; fi
RC=0; wait "$GW3" || RC=$?
check "the fenced gw3 exits 1 (exit $RC) naming the fence" \
  exits_with 1 "$RC" 'FENCED' "$(grep -E '"event":"(lane_txn_fatal|lane_producer_fatal|stop)"' "$T/gw3.err")"
finished4() { all_committed txn2 s2 $(rung_topics s2 2s 4s 8s); }
wait_for 120 finished4 || diag "gw4: s2 not all committed 120 s after the fence: lag $(lag txn2 s2)"
newcoord=$(KA txn-coordinator errgate.txn2.b 2>/dev/null)
check "the transaction coordinator moved (broker $coord -> ${newcoord:-?})" test -n "$newcoord" -a "$newcoord" != "$coord"
stop_gateway "$GW_PID"
check "run 2: gw4 exits 0 (exit $RC)" [ "$RC" = 0 ]
diag "run 2: $(grep -c '"event":"lane_txn_aborted"' "$T/gw3.err") transactions aborted while the coordinator moved; gw3's summary: $(grep -oE '"txn_(commits|aborts|commit_ms_mean|commit_ms_max)":[0-9.]+' "$T/gw3.err" | tr '\n' ' ')"
verify run2 s2 txn2
CL start --broker "$coord" || diag "broker $coord did not come back: $(tail -3 "$T/cluster-ops.err")"

# ---- the cost: dead letters with and without transactions (diagnostics) ---------------
NB=${TXN_BENCH_RECORDS:-10000}
gen_records "$NB" "permanent:1" | produce b0
gen_records "$NB" "permanent:1" | produce b1
bench_config() {
  cat >"$1" <<CFG
return {
  group = "$2",
  source = { topics = { "$3" }, ordering = "none", max_inflight = 5000 },
  target = { http = { url = "$HANDLER_URL", timeout = "2s", concurrency = 32 } },
  policy = "$FIXTURES/ladder_2s_4s_8s.lua",
  lanes = { dlq = "{topic}.dlq" $4 },
  commit_interval = "1s",
  log = { decisions = { per_second = 1 } },
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
}
CFG
}
bench_run() {
  start_gateway "$1" "$2"
  drained_or_gone() { ! kill -0 "$GW_PID" 2>/dev/null || lag_is_zero "$3" "$4"; }
  wait_for 180 drained_or_gone "$@" || diag "$1: not drained in 180 s (lag $(lag "$3" "$4"))"
  local cpu sum
  # utime + stime of the whole process (start-up and group join included), in clock ticks
  cpu=$(awk -v t="$(getconf CLK_TCK)" -v n="$NB" '{ printf "%.1f", ($14 + $15) * 1e6 / t / n }' "/proc/$GW_PID/stat" 2>/dev/null)
  stop_gateway "$GW_PID"
  sum=$(grep '"event":"summary"' "$T/$1.err" | tail -1 | grep -oE '"(records_per_second|txn_commits|txn_commit_ms_mean|txn_commit_ms_max)":[0-9.]+' | tr '\n' ' ')
  diag "cost $1: $NB dead letters: ${sum:-no summary} cpu_us/record ${cpu:-?} (exit $RC)"
}
bench_config "$T/b0.lua" bench0 b0 ""
bench_config "$T/b1.lua" bench1 b1 ', transactional = true, instance = "bench"'
bench_run bench-plain "$T/b0.lua" bench0 b0
bench_run bench-txn "$T/b1.lua" bench1 b1
exit $FAILED
