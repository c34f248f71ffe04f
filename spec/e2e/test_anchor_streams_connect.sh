#!/usr/bin/env bash
# test_anchor_streams_connect.sh — real Kafka Streams, Kafka Connect and
# share-group dead letters in and out (spec/anchors/README.md). On a real
# cluster, Apache Kafka 4.4.0's own code (spec/anchors/streams-connect, one
# JVM for all three) writes dead letters: Streams' DLQ (KIP-1034: a
# deserialization and a processing failure), Connect standalone with
# errors.tolerance=all and context headers (a converter failure and a sink
# task's refusal through ErrantRecordReporter) and the broker's share-group
# DLQ (KIP-1191: a rejected record and one past its delivery count limit).
# errgate reads each one: `dlq tail --json` (original coordinates, class,
# message, time, deliveries), `dlq stats`, `policy test --from-topic`, inbox
# mode (one outcome per record; replayed to its original topic and
# partition) and `replay -c`, compared with what the anchors wrote
# (anchor_streams_connect.py). Then the other way: a gateway writes its DLQ
# with lanes.profiles = { "connect", "streams" }, read back by the tool with
# Connect's and Streams' own header constants and encodings (a second JVM).
# spec/run.sh: kafka only
source "$(dirname "$0")/lib.sh"
[ "$BROKER" = kafka ] || die "a real-cluster test: run it with BROKER=kafka"

ANCHOR="$ROOT/spec/anchors/streams-connect/anchor.sh"
CHECK="$ROOT/spec/e2e/anchor_streams_connect.py"
"$ANCHOR" build >/dev/null 2>"$T/anchor-build.err" || die "the anchor tool did not build: $(tail -5 "$T/anchor-build.err")"
DLQS=(anchor-streams-dlq anchor-connect-dlq dlq.anchor-share)
lanes=()
for s in "${DLQS[@]}"; do lanes+=(--topic "$s.dlq:1" --topic "$s.quarantine:1" --topic "$s.retry.replay:1"); done
start_broker "${lanes[@]}" --topic src:1 --topic src.dlq:1 --topic src.quarantine:1

# ---- the anchors write -------------------------------------------------------
"$ANCHOR" run produce "$BOOTSTRAP" "$T/anchor" >"$T/anchor.jsonl" 2>"$T/anchor.err" ||
  die "the anchors failed: $(grep -v '^\s*at ' "$T/anchor.err" | tail -5)"
check "the anchors wrote 2 Streams, 2 Connect and 2 share-group dead letters" $PY -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
got = sorted((r["anchor"], r["case"]) for r in rows)
print("# %r" % got)
sys.exit(0 if got == [("connect", "converter"), ("connect", "task_put"), ("share-group", "rejected"),
                      ("share-group", "released"), ("streams", "deserialization"), ("streams", "processing")] else 1)' \
  "$T/anchor.jsonl"

# ---- errgate reads them --------------------------------------------------------
for s in "${DLQS[@]}"; do
  "$EG" dlq tail "$s" -b "$BOOTSTRAP" -n 20 --json >"$T/tail-$s.json" 2>>"$T/tail.err" || die "dlq tail $s: $(cat "$T/tail.err")"
  "$EG" dlq stats "$s" -b "$BOOTSTRAP" --by code >"$T/stats-$s.out" 2>&1 || die "dlq stats $s: $(cat "$T/stats-$s.out")"
done
check "dlq tail --json: original coordinates, class, message, time and deliveries as the anchors wrote them" \
  $PY "$CHECK" tail "$T/anchor.jsonl" "$T"/tail-*.json
check "dlq stats --by code: one row per exception class" $PY "$CHECK" stats "$T/anchor.jsonl" "$T"/stats-*.out
POL="$FIXTURES/anchor_streams_connect_inbox.lua"
for s in "${DLQS[@]}"; do "$EG" policy test "$POL" --from-topic "$s" -b "$BOOTSTRAP" >>"$T/pt.out" 2>&1; done
check "policy test --from-topic reads all 6 (none unreadable), each by the system that wrote it" $PY - "$T/pt.out" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
tot = [tuple(map(int, m)) for m in re.findall(r"(\d+) records, (\d+) same, (\d+) changed, (\d+) unreadable", t)]
print("# %r" % tot)
ok = len(tot) == 3 and sum(x[0] for x in tot) == 6 and all(x[3] == 0 for x in tot)
for by, n in (("kafka-streams", 2), ("kafka-connect", 2), ("share-group", 2)):
    ok = ok and len(re.findall(r"\s%s\s" % by, t)) == n
for row in ("anchor-streams-in/0/1 .* quarantine poison", "anchor-streams-in/0/2 .* replay bug",
            "anchor-connect-in/0/1 .* quarantine poison", "anchor-connect-in/0/2 .* replay bug"):
    ok = ok and re.search(row, t) is not None
sys.exit(0 if ok else 1)
PY

cat >"$T/inbox.lua" <<CFG
return {
  group = "triage",
  source = { topics = { "anchor-streams-dlq", "anchor-connect-dlq", "dlq.anchor-share" }, inbox = "auto",
             replay_allow = { "anchor-*-in" } },
  policy = "$POL",
  commit_interval = 200,
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
}
CFG
start_gateway inbox "$T/inbox.lua"
drained() { for s in "${DLQS[@]}"; do lag_is_zero triage "$s" && lag_is_zero triage "$s.retry.replay" || return 1; done; }
wait_for 90 drained && ok "inbox: the three DLQs and their replay rungs committed to the end" ||
  not_ok "inbox lags: $(for s in "${DLQS[@]}"; do printf '%s ' "$(lag triage "$s")"; done)"
stop_gateway "$GW_PID"
$PY "$ROOT/spec/e2e/profile_reader.py" "$BOOTSTRAP" "$T/inbox-out.json" anchor-streams-in anchor-connect-in \
  anchor-share-in anchor-streams-dlq.quarantine anchor-connect-dlq.quarantine dlq.anchor-share.dlq \
  anchor-streams-dlq.dlq anchor-connect-dlq.dlq dlq.anchor-share.quarantine || die "cannot read the inbox's topics"
check "inbox: one outcome per dead letter, replayed to its original topic and partition, lanes keep the anchors' origin" \
  $PY "$CHECK" inbox "$T/anchor.jsonl" "$T/inbox-out.json"

# replay -c: the share-group record that ran out of deliveries goes back to its original topic
"$EG" replay -c "$T/inbox.lua" --from dlq.anchor-share.dlq --group rp1 >"$T/rp.out" 2>&1
rc=$?
$PY "$ROOT/spec/e2e/profile_reader.py" "$BOOTSTRAP" "$T/share-after.json" anchor-share-in || die "cannot read anchor-share-in"
check "replay -c: share-2 republished once to anchor-share-in partition 0 (exit $rc)" $PY - "$T/share-after.json" "$rc" <<'PY'
import json, sys
rows = [r for r in json.load(open(sys.argv[1])) if r["key"] == "share-2"]
print("# share-2 on anchor-share-in: %r" % [(r["partition"], r["offset"]) for r in rows])
sys.exit(0 if sys.argv[2] == "0" and len(rows) == 2 and all(r["partition"] == 0 for r in rows) else 1)
PY

# ---- Kafka's own constants read errgate's connect and streams profiles ---------
printf 'e1\tone\ne2\ttwo\ne3\tthree\n' | kcat -P -b "$BOOTSTRAP" -t src -p 0 -K $'\t' 2>>"$T/kcat.err"
echo 'return function(record) return { class = "IllegalStateException", code = "IllegalStateException", message = "refused " .. record.key } end' >"$T/refuse.lua"
cat >"$T/gw.lua" <<CFG
return {
  group = "profiles",
  source = { topics = { "src" }, ordering = "none" },
  target = { lua = "$T/refuse.lua" },
  policy = "$FIXTURES/dlq_everything.lua",
  lanes = { profiles = { "connect", "streams" } },
  commit_interval = 200,
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
}
CFG
start_gateway gw "$T/gw.lua"
wait_drained profiles src 60 && ok "gateway: 3 failures dead-lettered with the connect and streams profiles" ||
  not_ok "lag $(lag profiles src)"
stop_gateway "$GW_PID"
"$ANCHOR" run check-profiles "$BOOTSTRAP" src.dlq 3 >"$T/profiles.jsonl" 2>"$T/profiles.err"
rc=$?
sed 's/"stacktrace":"[^"]*"/"stacktrace":…/g' "$T/profiles.jsonl" | head -3 | sed 's/^/# /'
check "Connect's DeadLetterQueueReporter and Streams' ExceptionHandlerUtils constants decode all 3 as errgate states them (exit $rc)" \
  eval '[ "$rc" = 0 ] && [ "$(wc -l <"$T/profiles.jsonl")" = 3 ]'
echo "1..$TESTNO"
exit $FAILED
