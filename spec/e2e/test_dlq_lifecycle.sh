#!/usr/bin/env bash
# test_dlq_valgrind.sh — the DLQ lifecycle commands under valgrind memcheck:
# dlq approve, dlq stats --by state --prometheus, replay --state approved,
# and dlq watch through a webhook that fails once, stopped by SIGTERM: exit
# codes as expected, no memory error, no definite or indirect leak.
source "$(dirname "$0")/lib.sh"
if [ "${SAN:-}" = 1 ] || ! command -v valgrind >/dev/null; then diag "skipped (SAN=1 or no valgrind)"; exit 0; fi
start_broker --topic src.dlq:2
printf 'k1\tv\nk2\tv\n' | kcat -P -b "$BOOTSTRAP" -t src.dlq -K $'\t' -H error.class=permanent -H errgate.approval=required 2>/dev/null
printf 'k3\tv\n' | kcat -P -b "$BOOTSTRAP" -t src.dlq -K $'\t' -H error.class=transient -H errgate.id=x/0/1 2>/dev/null
"${VG[@]}" --log-file="$T/vg1.log" "$EG" dlq approve src.dlq --class permanent --by me >/dev/null 2>&1; rc=$?
check "valgrind approve (rc $rc)" vg_ok $rc 0 "$T/vg1.log"
"${VG[@]}" --log-file="$T/vg2.log" "$EG" dlq stats src.dlq --by state --prometheus >/dev/null 2>&1; rc=$?
check "valgrind stats (rc $rc)" vg_ok $rc 0 "$T/vg2.log"
create_topic out 2
"${VG[@]}" --log-file="$T/vg3.log" "$EG" replay --from src.dlq --to out --state approved >"$T/r.out" 2>&1; rc=$?
check "valgrind replay (rc $rc) $(tail -1 $T/r.out)" vg_ok $rc 0 "$T/vg3.log"
bg hook $PY "$ROOT/spec/e2e/webhook_server.py" "$T/alerts.jsonl" --fail 1
wait_for 10 grep -q '^listening=' "$T/hook.out"
HOOK="http://$(sed -n 's/^listening=//p' "$T/hook.out")/"
bg w "${VG[@]}" --log-file="$T/vg4.log" "$EG" dlq watch src.dlq --incidents "$T/i.jsonl" --webhook "$HOOK" --threshold '*=1/1m'
WP=$LASTPID
wait_for 60 bash -c "[ -s $T/alerts.jsonl ] && [ \$(wc -l < $T/alerts.jsonl) -ge 2 ]"
kill -TERM $WP; rc=0; wait $WP || rc=$?
check "valgrind watch (rc $rc) $(tail -1 $T/w.err)" vg_ok $rc 0 "$T/vg4.log"
exit $FAILED
