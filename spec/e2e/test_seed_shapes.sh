#!/usr/bin/env bash
# test_seed_shapes.sh — the seeds' shapes on a running gateway (issue 32,
# item 4):
#   - a repeated rung ({ delay = "300ms", times = 12 }, more steps than the
#     10 rungs a ladder may name): every step goes through the one rung
#     topic src.retry.300ms, the source partition never waits (healthy
#     records finish while the failing ones climb), a record that keeps
#     failing ends in the DLQ after 12 steps (retry.count=12, previous.topic =
#     the rung), one that fails 3 times succeeds from the rung; decision lines
#     carry value_bytes and, on rung records, previous_topic;
#   - the seeds' metrics: errgate_records_recovered_total (retries that then
#     succeeded), errgate_records_poison_total (dead-lettered at the first
#     failure), errgate_records_dead_lettered_by_topic_total (the ratio's
#     numerator), errgate_partition_blocked_seconds_total (a partition paused
#     behind in-place retries under partition ordering, at least the retries'
#     delays), errgate_pipeline_info{pipeline,stage} and
#     errgate_dead_letter_ratio_threshold from the config's metrics table.
# The rung that feeds itself (consumed and written by the same gateway) runs
# on a real cluster too.
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ladder_lib.sh"
start_broker $(ladder_topics src 300ms) --topic blk:1 --topic blk.dlq:1 --topic blk.quarantine:1
handler_at h

# --- a repeated rung: 12 steps on one rung topic
cat >"$T/fixed.lua" <<'POL'
return require("errgate.policy").define {
  name = "fixed12", version = "1",
  classify = { { status = 503, class = "transient" }, { status = 400, class = "permanent" }, { class = "unknown" } },
  retry = { fixed = { ladder = { { delay = "300ms", times = 12 } } } },
  route = { transient = { ladder = "fixed", exhausted = "dlq" }, permanent = "dlq", default = "dlq" },
}
POL
"$EG" policy check "$T/fixed.lua" >"$T/check.out" 2>&1
check "policy check accepts a 12-step repeated rung ($(tail -1 "$T/check.out"))" grep -q "lint      ok" "$T/check.out"
{ gen_records 60 "ok:1" | sed 's/"id":"r/"id":"ok/'
  for i in 1 2 3; do printf 'u%d\t{"id":"u%d","mode":"unavailable"}\n' "$i" "$i"; done
  for i in 1 2; do printf 't%d\t{"id":"t%d","mode":"transient-3"}\n' "$i" "$i"; done
  printf 'p1\t{"id":"p1","mode":"permanent"}\n'; } | produce src
ladder_config "$T/gw.lua" fx src none "$T/fixed.lua" "" \
  'admin = { listen = "127.0.0.1:0" }, metrics = { pipeline = "checkout", stage = "enrich", dead_letter_ratio = 0.002 },'
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin address: $(tail -3 "$T/gw.err")"
wait_for 30 bash -c "[ \$(grep -c '^ok ok' '$T/h.log') -ge 60 ]" || not_ok "healthy records: $(grep -c '^ok ok' "$T/h.log") of 60"
HEALTHY_AT=$SECONDS
done_all() { [ "$(grep -c '"event":"decision".*"action":"dlq"' "$T/gw.err")" -ge 4 ] && grep -q '^ok t2 ' "$T/h.log" && grep -q '^ok t1 ' "$T/h.log"; }
wait_for 60 done_all || not_ok "after 60 s: $(grep -c '"action":"dlq"' "$T/gw.err") DLQ decisions, $(grep -c '^ok t' "$T/h.log") of 2 recovered"
check "healthy records did not wait for the 12 steps (all 60 done at ${HEALTHY_AT}s, the climbers at ${SECONDS}s)" \
  [ "$HEALTHY_AT" -lt "$SECONDS" ]
admin_get "$ADDR" /metrics >"$T/m1.txt"
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
dump src.dlq "$T/dlq.json"
dump src.retry.300ms "$T/rung.json"
check "one rung topic served every step: 3 x 12 + 2 x 3 = 42 records on src.retry.300ms ($(wc -l <"$T/rung.json"))" \
  [ "$(wc -l <"$T/rung.json")" = 42 ]
check "the always-failing records end in the DLQ after 12 steps on the one rung (retry.count=12, previous.topic src.retry.300ms)" \
  $PY - "$T/dlq.json" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
def h(r):
    hs = r.get("headers") or []
    return dict(zip(hs[0::2], hs[1::2]))
u = [h(r) for r in recs if r["key"].startswith("u")]
print("#", [(x.get("retry.count"), x.get("previous.topic"), x.get("errgate.reason")) for x in u])
sys.exit(0 if len(u) == 3 and all(x["retry.count"] == "12" and x["previous.topic"] == "src.retry.300ms"
                                  and x["errgate.reason"] == "exhausted" for x in u) else 1)
PY
check "decision lines carry value_bytes, and previous_topic on a record that came back from the rung" $PY - "$T/gw.err" <<'PY'
import json, sys
d = [json.loads(l) for l in open(sys.argv[1]) if '"event":"decision"' in l]
rung = [x for x in d if x["topic"] == "src.retry.300ms"]
src = [x for x in d if x["topic"] == "src"]
prev = sorted(set(x.get("previous_topic") for x in rung))
print("# %d decisions on the rung, previous topics %s" % (len(rung), prev))
sys.exit(0 if rung and src and all(x["value_bytes"] > 0 for x in d) and prev == ["src", "src.retry.300ms"]
         and all("previous_topic" not in x for x in src) else 1)
PY
check "errgate_records_recovered_total{topic=src} = 2 (the transient-3 records, from the rung)" \
  grep -q '^errgate_records_recovered_total{topic="src"} 2$' "$T/m1.txt"
check "errgate_records_poison_total{topic=src} = 1 (the permanent record; the exhausted ones are not poison)" \
  grep -q '^errgate_records_poison_total{topic="src"} 1$' "$T/m1.txt"
check "errgate_records_dead_lettered_by_topic_total{topic=src} = 4 (by source topic, rung records included)" \
  grep -q '^errgate_records_dead_lettered_by_topic_total{topic="src"} 4$' "$T/m1.txt"
check "errgate_pipeline_info names the pipeline and stage from the config" \
  grep -q '^errgate_pipeline_info{pipeline="checkout",stage="enrich"} 1$' "$T/m1.txt"
check "errgate_dead_letter_ratio_threshold is metrics.dead_letter_ratio" \
  grep -q '^errgate_dead_letter_ratio_threshold 0.002$' "$T/m1.txt"
check "a rung's wait for its due time is no block: every blocked-seconds series of the run is 0" \
  bash -c "[ \"\$(grep '^errgate_partition_blocked_seconds_total' '$T/m1.txt' | awk '\$2 != 0' | wc -l)\" = 0 ] && grep -q '^errgate_partition_blocked_seconds_total' '$T/m1.txt'"

# --- a partition blocked behind in-place retries (ordering = partition)
cat >"$T/slow.lua" <<'POL'
return require("errgate.policy").define {
  name = "slow", version = "1",
  classify = { { status = 503, class = "transient" }, { class = "unknown" } },
  retry = { slow = "800ms x2" },
  route = { transient = { retry = "slow", exhausted = "dlq" }, default = "dlq" },
}
POL
printf 'b1\t{"id":"b1","mode":"transient-2"}\nb2\t{"id":"b2","mode":"ok"}\n' | produce blk
ladder_config "$T/gw2.lua" bk blk partition "$T/slow.lua" "" 'admin = { listen = "127.0.0.1:0" },'
start_gateway gw2 "$T/gw2.lua"
ADDR=$(admin_addr gw2) || die "no admin address: $(tail -3 "$T/gw2.err")"
wait_for 30 grep -q '^ok b2 ' "$T/h.log" || not_ok "b2 was not delivered"
admin_get "$ADDR" /metrics >"$T/m2.txt"
stop_gateway "$GW_PID"
B=$(awk '/^errgate_partition_blocked_seconds_total\{topic="blk",partition="0"\}/ {print $2}' "$T/m2.txt")
check "errgate_partition_blocked_seconds_total{blk,0} covers the two 800 ms retries ($B s; 1.5 to 10)" \
  $PY -c "import sys; sys.exit(0 if 1.5 <= float('${B:-0}') <= 10 else 1)"
check "errgate_records_recovered_total{topic=blk} = 1, errgate_pipeline_info defaults to the group and the target kind" \
  bash -c "grep -q '^errgate_records_recovered_total{topic=\"blk\"} 1\$' '$T/m2.txt' &&
           grep -q '^errgate_pipeline_info{pipeline=\"bk\",stage=\"http\"} 1\$' '$T/m2.txt' &&
           grep -q '^errgate_dead_letter_ratio_threshold 0.001\$' '$T/m2.txt'"
if command -v promtool >/dev/null; then
  check "promtool check metrics passes on both expositions" bash -c "promtool check metrics <'$T/m1.txt' && promtool check metrics <'$T/m2.txt'"
fi
exit $FAILED
