#!/usr/bin/env bash
# test_dlq_watch.sh — `errgate dlq watch`: one incident line per lane record
# (original coordinates, class, code, reason, attempts, policy, errgate.id;
# never the payload), exactly one webhook alert for the class that crossed
# its threshold within the window (none for a class under it), the POST
# retried with back-off while the receiver fails, SIGTERM stops it cleanly,
# incident lines carry the key (bounded to 256 bytes, redacted), the previous
# topic, the replay source and the payload size; --every-record (and
# CLASS=1/0s) alert once per dead letter,
# a restart with the same group resumes after the last incident written,
# an alert still being retried at SIGTERM is dropped and said so.
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"
MARKER=PAYLOAD-MARKER-77aa
expect() { local d=$1; shift; if eval "$*"; then ok "$d"; else not_ok "$d"; fi; }

start_broker --topic src.dlq:2
bg hook $PY "$ROOT/spec/e2e/webhook_server.py" "$T/alerts.jsonl" --fail 2
wait_for 10 grep -q '^listening=' "$T/hook.out" || die "webhook receiver did not start"
HOOK="http://$(sed -n 's/^listening=//p' "$T/hook.out")/alert"

# lane_records CLASS N FIRST [ATTEMPTS]: N lane records of CLASS, ids src/0/FIRST.., as the gateway
# writes them (with errgate.attempts when ATTEMPTS is given)
lane_records() {
  local i
  for i in $(seq "$3" $(($3 + $2 - 1))); do
    printf 'k%s\t{"note":"%s"}\n' "$i" "$MARKER" | kcat -P -b "$BOOTSTRAP" -t src.dlq -K $'\t' \
      -H error.class="$1" -H error.code="code_$1" -H errgate.reason="$1" -H errgate.id="src/0/$i" \
      -H original.topic=src -H original.partition=0 -H original.offset="$i" -H retry.count=0 \
      -H errgate.policy=default@1 -H error.message="failed $i" -H error.timestamp=2026-01-01T00:00:00.000Z \
      ${4:+-H errgate.attempts=$4} 2>/dev/null
  done
}
count() { [ -f "$1" ] && wc -l <"$1" || echo 0; }

bg watch "$EG" dlq watch src.dlq --incidents "$T/incidents.jsonl" --webhook "$HOOK" \
  --threshold permanent=5/10m --threshold transient=50/10m
WPID=$LASTPID
wait_for 20 grep -q '^watch src.dlq, group errgate-dlq-watch.src.dlq' "$T/watch.out" || die "watch did not start: $(cat "$T/watch.err")"
lane_records permanent 8 1
lane_records transient 3 100 12
wait_for 30 bash -c "[ \$(wc -l <'$T/incidents.jsonl') -ge 11 ]" || not_ok "incidents: $(count "$T/incidents.jsonl") of 11"
wait_for 30 bash -c "[ -s '$T/alerts.jsonl' ]" || not_ok "no alert reached the webhook"
sleep 1.5 # a second alert, if one were (wrongly) sent, would arrive now
expect "one incident line per lane record (11)" '[ "$(count "$T/incidents.jsonl")" = 11 ]'
expect "incident lines: JSON with the original coordinates, class, code, reason, attempts, policy, id, never the payload" \
  $PY - "$T/incidents.jsonl" "$MARKER" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
bad = [l for l in lines if sys.argv[2] in l]
recs = [json.loads(l) for l in lines]
want = {"time", "lane", "partition", "offset", "original_topic", "original_partition", "original_offset",
        "class", "code", "reason", "attempts", "retry_count", "policy", "id"}
r = next(r for r in recs if r["id"] == "src/0/3")
ok = not bad and all(want <= set(x) for x in recs) and r["original_topic"] == "src" and r["original_offset"] == 3 \
    and r["class"] == "permanent" and r["code"] == "code_permanent" and r["policy"] == "default@1" \
    and r["time"] == "2026-01-01T00:00:00.000Z" and r["lane"] == "src.dlq" and r["attempts"] == 0
print("# %d lines, sample %s" % (len(recs), r))
sys.exit(0 if ok else 1)
PY
expect "incident lines: attempts is errgate.attempts when the record has it (12, past the 10 entries errgate.history keeps)" \
  '[ "$(grep -c "\"class\":\"transient\".*\"attempts\":12," "$T/incidents.jsonl")" = 3 ]'
expect "exactly one alert, for the class that crossed its threshold (permanent: 8 records, 5/10m)" \
  $PY - "$T/alerts.jsonl" <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
print("#", a)
sys.exit(0 if len(a) == 1 and a[0]["class"] == "permanent" and a[0]["count"] == 5 and a[0]["lane"] == "src.dlq"
         and a[0]["window"] == "10m" and a[0]["alert"] == "errgate_dlq_threshold" else 1)
PY
expect "the POST was retried with back-off while the receiver failed (2 failures logged)" \
  '[ "$(grep -c "webhook: alert permanent: attempt [12] of 6 failed: HTTP 500; retrying in" "$T/watch.err")" = 2 ]'
expect "the alert was printed once on stdout" '[ "$(grep -c "^alert permanent: 5 records in 10m on src.dlq" "$T/watch.out")" = 1 ]'
kill -TERM "$WPID"; rc=0; wait "$WPID" || rc=$?
expect "SIGTERM: exit 0 with a summary (rc $rc)" \
  '[ "$rc" = 0 ] && grep -q "stopped: 11 incidents written, 1 alerts, 1 posted, 2 POST attempts failed, 0 alerts dropped" "$T/watch.err"'

# resumable: the same group starts after the last incident written
lane_records permanent 2 200
bg watch2 "$EG" dlq watch src.dlq --incidents "$T/incidents.jsonl"
W2=$LASTPID
wait_for 30 bash -c "[ \$(wc -l <'$T/incidents.jsonl') -ge 13 ]" || not_ok "the restarted watch wrote $(count "$T/incidents.jsonl") lines"
sleep 1
kill -TERM "$W2"; wait "$W2"
expect "a restart resumes: only the 2 new records were added, no id twice" \
  $PY - "$T/incidents.jsonl" <<'PY'
import collections, json, sys
ids = collections.Counter(json.loads(l)["id"] for l in open(sys.argv[1]))
sys.exit(0 if sum(ids.values()) == 13 and max(ids.values()) == 1 else 1)
PY

# an alert whose receiver is down: logged, retried, dropped at SIGTERM
bg watch3 "$EG" dlq watch src.dlq --incidents "$T/inc3.jsonl" --group w3 --webhook "http://127.0.0.1:9/x" --threshold '*=1/1m'
W3=$LASTPID
wait_for 30 grep -q "attempt 1 of 6 failed" "$T/watch3.err" || not_ok "no failed attempt logged: $(tail -2 "$T/watch3.err")"
# every record read and both alerts raised before the stop (the first failed POST can come before the lane's end)
wait_for 30 bash -c "[ \$(wc -l <'$T/inc3.jsonl') -ge 13 ] && [ \$(grep -c '^alert ' '$T/watch3.out') -ge 2 ]" ||
  not_ok "watch3: $(count "$T/inc3.jsonl") lines, $(grep -c '^alert ' "$T/watch3.out") alerts"
kill -TERM "$W3"; rc=0; wait "$W3" || rc=$?
expect "receiver down: each class alerted once (* = 1/1m), retried, dropped at SIGTERM, exit 0 (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(grep -c "^alert " "$T/watch3.out")" = 2 ] && grep -q "dropped at shutdown" "$T/watch3.err" &&
   [ "$(count "$T/inc3.jsonl")" = 13 ]'

# seed 004's incident line: key (bounded, redacted), previous topic, replay source, payload size
LONGKEY=$(printf 'L%.0s' $(seq 600))
printf 'user-42 password=hunter2\t{"note":"%s"}\n' "$MARKER" | kcat -P -b "$BOOTSTRAP" -t src.dlq -K $'\t' \
  -H error.class=permanent -H errgate.id=src/0/300 -H original.topic=src -H previous.topic=src.retry.30s \
  -H replay.from-dlq=src.dlq/1/7 2>/dev/null
printf '%s\tabc\n' "$LONGKEY" | kcat -P -b "$BOOTSTRAP" -t src.dlq -K $'\t' -H error.class=permanent \
  -H errgate.id=src/0/301 -H previous.topic=src 2>/dev/null
printf 'x' | kcat -P -b "$BOOTSTRAP" -t src.dlq -H error.class=transient -H errgate.id=src/0/302 2>/dev/null
bg watch5 "$EG" dlq watch src.dlq --incidents "$T/inc5.jsonl" --group w5
W5=$LASTPID
wait_for 30 bash -c "[ \$(wc -l <'$T/inc5.jsonl' 2>/dev/null || echo 0) -ge 16 ]" || not_ok "watch5 wrote $(count "$T/inc5.jsonl") lines"
kill -TERM "$W5"; wait "$W5"
expect "incident lines: the key (redacted, bounded to 256 bytes, its length kept), the previous topic, the replay source, the payload size" \
  $PY - "$T/inc5.jsonl" "$MARKER" <<'PY'
import json, sys
recs = {r["id"]: r for r in map(json.loads, open(sys.argv[1]))}
a, b, c, old = recs["src/0/300"], recs["src/0/301"], recs["src/0/302"], recs["src/0/3"]
print("#", a, "\n#", {k: (v[:20] if isinstance(v, str) else v) for k, v in b.items()}, "\n#", c)
ok = a["key"] == "user-42 password=[REDACTED]" and a["key_bytes"] == 24 and "hunter2" not in open(sys.argv[1]).read() \
    and a["previous_topic"] == "src.retry.30s" and a["replay_from"] == "src.dlq/1/7" \
    and a["payload_bytes"] == len('{"note":"%s"}' % sys.argv[2]) \
    and b["key"] == "L" * 256 and b["key_bytes"] == 600 and b["previous_topic"] == "src" and b["replay_from"] is None \
    and b["payload_bytes"] == 3 and c["key"] is None and c["key_bytes"] == 0 and c["payload_bytes"] == 1 \
    and old["key"] == "k3" and old["payload_bytes"] > 0
sys.exit(0 if ok else 1)
PY

# any growth: --every-record alerts once per dead letter, CLASS=1/0s once per dead letter of that class
bg hook6 $PY "$ROOT/spec/e2e/webhook_server.py" "$T/alerts6.jsonl"
wait_for 10 grep -q '^listening=' "$T/hook6.out" || die "webhook receiver 6 did not start"
HOOK6="http://$(sed -n 's/^listening=//p' "$T/hook6.out")/alert"
bg watch6 "$EG" dlq watch src.dlq --incidents "$T/inc6.jsonl" --group w6 --webhook "$HOOK6" --every-record
W6=$LASTPID
bg watch7 "$EG" dlq watch src.dlq --incidents "$T/inc7.jsonl" --group w7 --threshold transient=1/0s
W7=$LASTPID
wait_for 30 bash -c "[ \$(wc -l <'$T/alerts6.jsonl' 2>/dev/null || echo 0) -ge 16 ]" || not_ok "every-record: $(count "$T/alerts6.jsonl") alerts of 16"
wait_for 30 bash -c "[ \$(wc -l <'$T/inc7.jsonl' 2>/dev/null || echo 0) -ge 16 ]" || not_ok "watch7 wrote $(count "$T/inc7.jsonl") lines"
sleep 1
kill -TERM "$W6" "$W7"; wait "$W6"; wait "$W7"
expect "--every-record: one alert per dead letter (16 records, 16 alerts, each id once)" \
  $PY - "$T/alerts6.jsonl" <<'PY'
import collections, json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
ids = collections.Counter(x["last_id"] for x in a)
print("# %d alerts, %d ids" % (len(a), len(ids)))
sys.exit(0 if len(a) == 16 and len(ids) == 16 and all(x["count"] == 1 and x["window"] == "0s" for x in a) else 1)
PY
expect "--threshold transient=1/0s: one alert per transient dead letter (4), none for permanent" \
  '[ "$(grep -c "^alert transient: 1 records in 0s on src.dlq" "$T/watch7.out")" = 4 ] && ! grep -q "^alert permanent" "$T/watch7.out"'

for bad in "src.dlq --incidents $T/x --threshold p=2/0s" "src.dlq --incidents $T/x --every-record --threshold *=1/1m" \
           "src.dlq" "src.dlq --incidents $T/x --threshold permanent" "src.dlq --incidents $T/x --threshold p=0/1m" \
           "src.dlq --incidents $T/x --webhook $HOOK" "src.dlq --incidents $T/x --webhook ftp://x --threshold a=1/1m" \
           "src.dlq --incidents $T/x --threshold a=1/1m --threshold a=2/1m"; do
  # shellcheck disable=SC2086
  "$EG" dlq watch $bad >/dev/null 2>"$T/b.err"; rc=$?
  expect "bad arguments 'watch $bad': exit 2 with a reason (rc $rc)" '[ "$rc" = 2 ] && head -1 "$T/b.err" | grep -q "^errgate dlq: watch: "'
done
"$EG" dlq watch nosuch.dlq --incidents "$T/x" >/dev/null 2>"$T/b.err"; rc=$?
expect "a missing lane: exit 2 (rc $rc)" '[ "$rc" = 2 ] && grep -q "topic nosuch.dlq does not exist" "$T/b.err"'
exit $FAILED
