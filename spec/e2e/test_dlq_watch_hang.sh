#!/usr/bin/env bash
# test_dlq_watch_hang.sh — `errgate dlq watch` with a webhook receiver that
# accepts the alert's POST and never answers (issue 28): the POST is on
# libcurl's multi interface beside the loop, so incident lines of records
# that arrive while it hangs are still written (and their progress
# committed) at once, not after the 5 s time-out of each attempt; the
# hanging attempt times out and is retried; SIGTERM drops the alert still
# under way, says so, and exits 0 at once.
source "$(dirname "$0")/lib.sh"
expect() { local d=$1; shift; if eval "$*"; then ok "$d"; else not_ok "$d"; fi; }

start_broker --topic src.dlq:1
bg hook $PY "$ROOT/spec/e2e/webhook_server.py" "$T/alerts.jsonl" --hang
wait_for 10 grep -q '^listening=' "$T/hook.out" || die "webhook receiver did not start"
HOOK="http://$(sed -n 's/^listening=//p' "$T/hook.out")/alert"

# lane_records CLASS N FIRST: N lane records of CLASS, ids src/0/FIRST..
lane_records() {
  local i
  for i in $(seq "$3" $(($3 + $2 - 1))); do
    printf 'k%s\tv\n' "$i" | kcat -P -b "$BOOTSTRAP" -t src.dlq -K $'\t' \
      -H error.class="$1" -H error.code="code_$1" -H errgate.id="src/0/$i" \
      -H original.topic=src -H original.partition=0 -H original.offset="$i" 2>/dev/null
  done
}
count() { [ -f "$1" ] && wc -l <"$1" || echo 0; }

bg watch "$EG" dlq watch src.dlq --incidents "$T/incidents.jsonl" --webhook "$HOOK" --threshold permanent=1/1m
WPID=$LASTPID
wait_for 20 grep -q '^watch src.dlq' "$T/watch.out" || die "watch did not start: $(cat "$T/watch.err")"
lane_records permanent 1 1
wait_for 20 bash -c "[ -s '$T/alerts.jsonl' ]" || not_ok "the alert's POST never reached the receiver"
sleep 0.5 # the POST hangs now
t0=$(date +%s%N)
lane_records transient 5 10
wait_for 20 bash -c "[ \$(wc -l <'$T/incidents.jsonl') -ge 6 ]"
ms=$((($(date +%s%N) - t0) / 1000000))
expect "incident lines of records that arrive while the POST hangs are written at once (${ms} ms, under 2500)" \
  '[ "$(count "$T/incidents.jsonl")" = 6 ] && [ "$ms" -lt 2500 ]'
wait_for 15 grep -q "webhook: alert permanent: attempt 1 of 6 failed: .*[Tt]imeout" "$T/watch.err" &&
  ok "the hanging attempt timed out after 5 s and is retried" || not_ok "no time-out logged: $(tail -3 "$T/watch.err")"
lane_records transient 2 20
wait_for 10 bash -c "[ \$(wc -l <'$T/incidents.jsonl') -ge 8 ]" &&
  ok "the loop keeps writing while the retry hangs too" || not_ok "incidents: $(count "$T/incidents.jsonl") of 8"
t0=$(date +%s%N)
kill -TERM "$WPID"; rc=0; wait "$WPID" || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
expect "SIGTERM with a POST under way: exit 0 within 2 s (${ms} ms), the alert dropped and said so, 8 incidents" \
  '[ "$rc" = 0 ] && [ "$ms" -lt 2000 ] && grep -q "alert permanent dropped at shutdown" "$T/watch.err" &&
   grep -q "stopped: 8 incidents written, 1 alerts, 0 posted" "$T/watch.err"'
bg watch2 "$EG" dlq watch src.dlq --incidents "$T/incidents.jsonl"
W2=$LASTPID
sleep 3
kill -TERM "$W2"; wait "$W2"
expect "the progress was committed over every line written: a restart adds nothing" '[ "$(count "$T/incidents.jsonl")" = 8 ]'
echo "1..$TESTNO"
exit $FAILED
