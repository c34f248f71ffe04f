#!/usr/bin/env bash
# test_kafka_replay_txn.sh — `errgate replay --transactional` on a real
# cluster of 3 brokers: a gateway dead-letters N records, then a replay of
# the DLQ to another topic (rate-limited so that it lasts a few seconds) is
# killed -9 mid-way, twice, and run again to its end with the same command
# (same group, so the same transactional.id: the rerun fences the killed
# one and aborts what it left open). A read_committed reader of the
# destination sees each dead-lettered record exactly once (0 duplicates, 0
# lost), the lane's state topic holds exactly one committed `replayed`
# record per item, and the replay group's committed offsets are the DLQ's
# end offsets. A read_uncommitted reader sees more than N records: the kills
# hit open transactions (what a replay without transactions would leave as
# duplicates). The embedded broker refuses the option
# (e2e/test_txn_refused).
# spec/run.sh: kafka only
source "$(dirname "$0")/lib.sh"
[ "$BROKER" = kafka ] || die "a real-cluster test: run it with BROKER=kafka"
N=${REPLAY_TXN_RECORDS:-1500}
RATE=${REPLAY_TXN_RATE:-150}

start_broker --brokers 3 --topic src:4 --topic src.dlq:4 --topic src.quarantine:4 --topic out:4
start_handler
gen_records "$N" "permanent:1" | produce src
write_config "$T/gw.lua" rtx none
start_gateway gw "$T/gw.lua"
wait_drained rtx src 120 || die "the gateway did not dead-letter the records (lag $(lag rtx src))"
stop_gateway "$GW_PID"
count() { kcat -C -b "$BOOTSTRAP" -t "$1" -e -q -X isolation.level="${2:-read_committed}" -f 'x\n' 2>/dev/null | wc -l; }
NDLQ=$(count src.dlq)
check "the DLQ holds the $N records ($NDLQ)" [ "$NDLQ" = "$N" ]

# the command, run as itself (not in a function) so that kill -9 reaches it
REPLAY=("$EG" replay -b "$BOOTSTRAP" --from src.dlq --to out --group rtx-replay --transactional --rate "$RATE")
for k in 1 2; do
  bg "replay$k" "${REPLAY[@]}"
  pid=$LASTPID
  # kill it mid-way: it replays RATE a second in transactions of about a second
  sleep "$((2 + k)).$((RANDOM % 10))"
  kill -0 "$pid" 2>/dev/null && ok "replay $k is running when it is killed" ||
    not_ok "replay $k ended before its kill: $(tail -1 "$T/replay$k.out") $(tail -2 "$T/replay$k.err")"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  diag "replay $k killed: out holds $(count out) committed, $(count out read_uncommitted) written"
done
rc=0
"${REPLAY[@]}" >"$T/final.out" 2>"$T/final.err" || rc=$?
check "the rerun ends with exit 0 ($rc: $(tail -1 "$T/final.out"))" [ "$rc" = 0 ]
diag "$(tail -1 "$T/final.out")"
grep -q 'transactions [1-9]' "$T/final.out" && ok "the rerun committed transactions" || not_ok "no transaction: $(cat "$T/final.out")"

$PY "$ROOT/spec/e2e/txn_lanes.py" "$BOOTSTRAP" read_committed "$T/committed.jsonl" out src.dlq.state 2>"$T/read.err" ||
  die "read_committed: $(cat "$T/read.err")"
$PY "$ROOT/spec/e2e/txn_lanes.py" "$BOOTSTRAP" read_uncommitted "$T/all.jsonl" out 2>>"$T/read.err" ||
  die "read_uncommitted: $(cat "$T/read.err")"
PYTHONPATH="$ROOT/spec/e2e" $PY - "$T/committed.jsonl" "$T/all.jsonl" "$N" >"$T/verdict.txt" <<'PY'
import collections, json, sys
committed = [json.loads(l) for l in open(sys.argv[1])]
everything = [json.loads(l) for l in open(sys.argv[2])]
n = int(sys.argv[3])
out = collections.Counter(r["headers"].get("errgate.id") for r in committed if r["topic"] == "out")
states = collections.Counter(r["key"] for r in committed
                             if r["topic"] == "src.dlq.state" and '"replayed"' in r["value"])
print("ids", len(out), "dups", sum(c - 1 for c in out.values() if c > 1), "none", out.get(None, 0))
print("states", len(states), "statedups", sum(c - 1 for c in states.values() if c > 1))
print("written", sum(1 for r in everything if r["topic"] == "out"))
PY
v() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' "$T/verdict.txt"; }
diag "$(tr '\n' ' ' <"$T/verdict.txt")"
check "read_committed: each of the $N records is in out exactly once ($(v ids) ids, $(v dups) duplicates)" \
  eval '[ "$(v ids)" = "$N" ] && [ "$(v dups)" = 0 ] && [ "$(v none)" = 0 ]'
check "read_committed: one replayed state per item ($(v states) items, $(v statedups) duplicates)" \
  eval '[ "$(v states)" = "$N" ] && [ "$(v statedups)" = 0 ]'
check "read_uncommitted: the kills left aborted copies behind ($(v written) written for $N)" [ "$(v written)" -gt "$N" ]
"$EG" offsets -b "$BOOTSTRAP" -g rtx-replay src.dlq >"$T/offsets.txt" 2>&1
check "the replay group's committed offsets are the DLQ's end offsets" \
  awk '$1=="src.dlq" { n++; if ($3 != $4) bad++ } END { exit !(n == 4 && !bad) }' "$T/offsets.txt"
exit $FAILED
