#!/usr/bin/env bash
# test_kafka_compaction_approval.sh — DESIGN §6's DLQ lifecycle rule for a
# replayed record that failed again, after Kafka's log cleaner compacted
# LANE.state (kafka_compaction_lib.sh). Before compaction the id has two
# states, `replayed` (the first copy) and `approved` with `since` (the new
# copy); `dlq stats` says the first copy is replayed, the new one approved,
# and a replay would send only the new one. Compaction keeps only the
# id's last record (the approval). The lifecycle must read the same after
# it: the first copy still replayed, never replayed again.
#
# Found on Kafka 4.4.0, and fixed: an approval now carries the resolving
# status it supersedes ({prior, prior_at}, eg_dlq_writer_put), which
# eg_dlq_states_apply restores. Before the fix, after compaction the 3 first copies read `open`
# (replayed 12 -> 9, open 0 -> 3), a replay's dry run would send 6 instead
# of 3, and a replay in a group of its own sends the 3 replayed records a
# second time. The approval record (`dlq approve`, status approved with
# since) has the item id as its key, so compaction drops the id's
# `replayed` record, and eg_dlq_states_status (src/commands/dlq_state.c)
# finds no resolving status for a copy older than the approval's since:
# `open` (`pending-approval` if that copy carried errgate.approval).
# spec/run.sh: kafka only
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/kafka_compaction_lib.sh"
[ "$BROKER" = kafka ] || die "a real-cluster test: run it with BROKER=kafka"
start_broker --topic src:4 --topic src.dlq:4 --topic src.quarantine:4 --topic src.replay:4
start_handler
fast_compacted src.dlq.state:4 2>"$T/fast.err" || die "the state topic was not created: $(tail -3 "$T/fast.err")"

gen_records 12 permanent:1 | produce src
write_config "$T/gw.lua" appc none
start_gateway gw "$T/gw.lua"
wait_drained appc src 60 || die "the gateway did not dead-letter the 12 records: lag $(lag appc src)"
stop_gateway "$GW_PID"
"$EG" replay -b "$BOOTSTRAP" --from src.dlq --to src.replay >"$T/rp.out" 2>&1
check "the 12 dead letters replayed ($(tail -1 "$T/rp.out"))" [ "$(count src.replay)" = 12 ]
# three of them failed again: a new copy each, pending approval, approved by id
kcat -C -b "$BOOTSTRAP" -t src.dlq -e -q -f '%h\n' 2>/dev/null | grep -o 'errgate.id=src/[0-9]*/[0-9]*' | cut -d= -f2 | head -3 >"$T/ids"
sleep 0.1 # the copies are newer than the replayed states, to the millisecond
bad=0
while read -r id; do
  printf 'k\tagain\n' | kcat -P -b "$BOOTSTRAP" -t src.dlq -K $'\t' -H error.class=permanent -H errgate.id="$id" \
    -H errgate.approval=required 2>/dev/null
  "$EG" dlq approve src.dlq -b "$BOOTSTRAP" --id "$id" --by dave >"$T/a.out" 2>&1 &&
    grep -q "^approved 1  left alone: replayed 1$" "$T/a.out" || bad=$((bad + 1))
done <"$T/ids"
check "3 new copies of replayed items approved by id, each leaving its older copy replayed ($bad failed)" \
  [ "$bad" = 0 -a "$(wc -l <"$T/ids")" = 3 ]
dlq_view() { # FILE: stats by state, and what a replay from scratch would send
  "$EG" dlq stats src.dlq -b "$BOOTSTRAP" --by state >"$1" 2>&1
  "$EG" replay -b "$BOOTSTRAP" --from src.dlq --to src.replay --dry-run --group "view-$RANDOM$RANDOM" 2>&1 |
    grep 'would replay [0-9]' | sed 's/ in [0-9.]* s//' >>"$1"
}
dlq_view "$T/view1"
check "before compaction: replayed 12, approved 3; a replay would send the 3 new copies ($(tail -1 "$T/view1"))" \
  bash -c "grep -q '^resolved by status: replayed 12  accepted-loss 0  closed 0$' '$T/view1' &&
           grep -q '^unresolved by state: open 0  pending-approval 0  approved 3$' '$T/view1' && grep -q 'would replay 3 ' '$T/view1'"
sbefore=$(count src.dlq.state)
state_compacted() {
  local p
  for p in 0 1 2 3; do printf 'zz-roll\t\n' | kcat -P -b "$BOOTSTRAP" -t src.dlq.state -p "$p" -K $'\t' -Z 2>/dev/null; done
  keys src.dlq.state >"$T/state.keys"
  awk '$2 ~ /^src\// { n++; if ($1 != 1) dup++ } END { exit !(n == 12 && !dup) }' "$T/state.keys"
}
t0=$SECONDS
every 40 state_compacted
check "the cleaner compacted src.dlq.state: $sbefore records -> $(kept "$T/state.keys" '^src/'), each item id once ($((SECONDS - t0)) s)" \
  state_compacted
dlq_view "$T/view2"
diag "after compaction: $(grep -h '^resolved\|^unresolved\|would replay' "$T/view2" | tr '\n' ';')"
check "dlq stats and a replay's dry run read the same states after compaction" cmp -s "$T/view1" "$T/view2"
diff "$T/view1" "$T/view2" | sed 's/^/# /'
"$EG" replay -b "$BOOTSTRAP" --from src.dlq --to src.replay --group "again-$RANDOM" >"$T/rp2.out" 2>&1
check "a replay in a group of its own sends only the 3 approved copies (src.replay: $(count src.replay), want 15; $(tail -1 "$T/rp2.out"))" \
  [ "$(count src.replay)" = 15 ]
diag "wall time $SECONDS s"
exit $FAILED
