#!/usr/bin/env bash
# test_dlq_lifecycle.sh — the DLQ lifecycle commands one after the other:
# dlq approve, dlq stats --by state --prometheus, replay --state approved,
# and dlq watch through a webhook that fails once, stopped by SIGTERM: exit
# codes as expected. The default `make test` runs it under memcheck
# (VALGRIND=1, see lib.sh): any memory error or definite/indirect leak fails.
# spec/run.sh: valgrind
source "$(dirname "$0")/lib.sh"
start_broker --topic src.dlq:2
printf 'k1\tv\nk2\tv\n' | kcat -P -b "$BOOTSTRAP" -t src.dlq -K $'\t' -H error.class=permanent -H errgate.approval=required 2>/dev/null
printf 'k3\tv\n' | kcat -P -b "$BOOTSTRAP" -t src.dlq -K $'\t' -H error.class=transient -H errgate.id=x/0/1 2>/dev/null
"$EG" dlq approve src.dlq --class permanent --by me >/dev/null 2>&1; rc=$?
check "approve (rc $rc)" [ "$rc" = 0 ]
"$EG" dlq stats src.dlq --by state --prometheus >/dev/null 2>&1; rc=$?
check "stats (rc $rc)" [ "$rc" = 0 ]
create_topic out 2
"$EG" replay --from src.dlq --to out --state approved >"$T/r.out" 2>&1; rc=$?
check "replay (rc $rc) $(tail -1 $T/r.out)" [ "$rc" = 0 ]
bg hook $PY "$ROOT/spec/e2e/webhook_server.py" "$T/alerts.jsonl" --fail 1
wait_for 10 grep -q '^listening=' "$T/hook.out"
HOOK="http://$(sed -n 's/^listening=//p' "$T/hook.out")/"
bg w "$EG" dlq watch src.dlq --incidents "$T/i.jsonl" --webhook "$HOOK" --threshold '*=1/1m'
WP=$LASTPID
wait_for 60 bash -c "[ -s $T/alerts.jsonl ] && [ \$(wc -l < $T/alerts.jsonl) -ge 2 ]"
kill -TERM $WP; rc=0; wait $WP || rc=$?
check "watch: exit 0 after SIGTERM (rc $rc) $(tail -1 $T/w.err)" [ "$rc" = 0 ]
exit $FAILED
