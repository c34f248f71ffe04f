#!/usr/bin/env bash
# run.sh — the payload protection story on the embedded broker, in one
# command: payments with card numbers fail; their DLQ holds them encrypted
# and their quarantine masked (config.lua: lanes.protect), so no card number
# is readable in either lane's bytes; an operator triages the DLQ with
# `errgate dlq tail --payload` (refused by name without the key, readable
# with it), reads one item's envelope (fingerprint, hint, first failure),
# takes it (`errgate dlq annotate`: owner, severity, a note), approves the
# permanent failures, and replays them decrypted to
# payments.fixed; a replay without the key is refused and loses nothing.
# Each step is checked: the script exits non-zero, naming the step, when one
# does not hold. Environment: BUILD (build). Logs are kept in a temporary
# folder named at the end.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/examples/protect"
BUILD=${BUILD:-build}
EG="$ROOT/$BUILD/errgate"
CARD=4111111111111111
W=$(mktemp -d /tmp/errgate-protect.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT
fail() { echo "protect: $*" >&2; echo "protect: logs kept in $W" >&2; exit 1; }
wait_line() { for _ in $(seq 100); do grep -q "$1" "$2" && return 0; sleep 0.1; done; return 1; }
count() { kcat -C -b "$ERRGATE_BOOTSTRAP" -t "$1" -e -q -f 'x\n' 2>/dev/null | wc -l; }
# cards TOPIC: lines of the topic's raw bytes (key, headers, value) holding a card number
cards() { kcat -C -b "$ERRGATE_BOOTSTRAP" -t "$1" -e -q -f '%k %h %s\n' 2>/dev/null | grep -caE "$CARD|5500005555555559"; }
for tool in kcat python3; do command -v $tool >/dev/null || fail "$tool is required (make deps installs it)"; done
[ -x "$EG" ] && [ -x "$ROOT/$BUILD/flaky-handler" ] || fail "build first: make"

echo "==> a protection key ring (first key encrypts, every key decrypts): $W/protect.key"
printf 'errgate-keyring-v1\n%s\n' "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$W/protect.key"
chmod 600 "$W/protect.key"
export PROTECT_KEY_FILE="$W/protect.key"

echo "==> the embedded broker: payments, payments.dlq, payments.quarantine, payments.fixed"
"$EG" broker --topic payments:2 --topic payments.dlq:2 --topic payments.quarantine:2 --topic payments.fixed:2 \
  >"$W/broker.out" 2>"$W/broker.err" &
PIDS+=($!)
wait_line '^control=' "$W/broker.out" || fail "broker did not start"
export ERRGATE_BOOTSTRAP=$(sed -n 's/^bootstrap.servers=//p' "$W/broker.out")

echo "==> 12 payments with card numbers: 6 ok, 4 permanent (400), 2 semantic (422), one of them not JSON"
{
  for i in 1 2 3 4 5 6; do printf 'p%s\t{"id":"p%s","mode":"ok","card":{"number":"%s","cvv":"123"}}\n' $i $i $CARD; done
  for i in 7 8 9; do printf 'p%s\t{"id":"p%s","mode":"permanent","card":{"number":"%s","cvv":"123"},"amount":%s}\n' $i $i $CARD $i; done
  printf 'p10\t{"id":"p10","mode":"permanent","c\\u0061rd":{"number":"\\u0034111111111111111"}}\n'
  printf 'p11\t{"id":"p11","mode":"semantic","card":{"number":"%s","cvv":"123"}}\n' $CARD
  printf 'p12\t{"id":"p12","mode":"semantic","card":"%s","raw":"\xff"}\n' $CARD
} >"$W/records.tsv"
kcat -P -b "$ERRGATE_BOOTSTRAP" -t payments -K $'\t' -X acks=all <"$W/records.tsv" 2>"$W/kcat.err" || fail "kcat: $(cat "$W/kcat.err")"
"$ROOT/$BUILD/flaky-handler" --log "$W/ok.log" >"$W/handler.out" 2>"$W/handler.err" &
PIDS+=($!)
wait_line '^listening=' "$W/handler.out" || fail "handler did not start"
export PAYMENTS_TARGET_URL="http://$(sed -n 's/^listening=//p' "$W/handler.out")/"

echo "==> errgate run -c examples/protect/config.lua until every payment has its outcome"
"$EG" run -c "$HERE/config.lua" 2>"$W/gateway.log" &
GW=$!
PIDS+=($GW)
lag() { "$EG" offsets -g payments payments 2>/dev/null | awk '$1=="total"{print $4}'; }
for _ in $(seq 600); do
  [ "$(lag)" = 0 ] && [ "$(count payments.dlq)" -ge 4 ] && [ "$(count payments.quarantine)" -ge 2 ] && break
  kill -0 $GW 2>/dev/null || break
  sleep 0.1
done
kill -TERM $GW; rc=0; wait $GW || rc=$?
[ "$rc" = 0 ] || fail "gateway exited $rc"
[ "$(count payments.dlq)" = 4 ] && [ "$(count payments.quarantine)" = 2 ] ||
  fail "want 4 DLQ and 2 quarantine records, got $(count payments.dlq) and $(count payments.quarantine)"

echo "==> no card number in either lane's bytes"
[ "$(cards payments.dlq)" = 0 ] || fail "a card number is readable in payments.dlq"
[ "$(cards payments.quarantine)" = 0 ] || fail "a card number is readable in payments.quarantine"
kcat -C -b "$ERRGATE_BOOTSTRAP" -t payments.quarantine -e -q -f '    %h\n    %s\n' 2>/dev/null |
  grep -oE 'errgate.protect=[^,]*|"number":"hmac:[0-9a-f]{8}' | sed 's/^/    /'
grep -q '"event":"payload_unprotectable"' "$W/gateway.log" || fail "the non-JSON payload was not logged as unprotectable"

echo "==> triage without the key: the values are refused by name"
env -u PROTECT_KEY_FILE "$EG" dlq tail payments.dlq -b "$ERRGATE_BOOTSTRAP" --payload -n 4 >"$W/tail0.out" 2>&1 ||
  fail "dlq tail: $(cat "$W/tail0.out")"
sed 's/^/    /' "$W/tail0.out" | cut -c1-220
[ "$(grep -c 'value_refused="encrypted with key' "$W/tail0.out")" = 4 ] || fail "tail without the key did not refuse each value"

echo "==> triage with the key (--protect-key-file): the payments as they came"
"$EG" dlq tail payments.dlq -b "$ERRGATE_BOOTSTRAP" --payload -n 4 --protect-key-file "$W/protect.key" >"$W/tail1.out" 2>&1 ||
  fail "dlq tail: $(cat "$W/tail1.out")"
sed 's/^/    /' "$W/tail1.out" | cut -c1-260
[ "$(grep -c "$CARD" "$W/tail1.out")" = 4 ] || fail "tail with the key did not decrypt every value"

echo "==> the on-call engineer reads an item's envelope and takes it (dlq annotate)"
"$EG" dlq tail payments.dlq -b "$ERRGATE_BOOTSTRAP" --json -n 1 >"$W/env.json" 2>&1 || fail "tail --json: $(cat "$W/env.json")"
python3 -c 'import json, sys
r = json.loads(open(sys.argv[1]).readline())
print("    id %s  class %s  fingerprint %s  retryable %s  first failure %s ms\n    hint: %s" % (
    r["id"], r["class"], r["fingerprint"], r["retryable"], r["first_failure"], r["hint"] or "(the policy gives none)"))' "$W/env.json" ||
  fail "the envelope is not in dlq tail --json"
ID=$(python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["id"])' "$W/env.json")
"$EG" dlq annotate payments.dlq -b "$ERRGATE_BOOTSTRAP" --id "$ID" --owner team-cards --severity high \
  --note "card processor outage, INC-7" --by ops-oncall >"$W/annotate.out" 2>&1 || fail "annotate: $(cat "$W/annotate.out")"
cut -c1-200 "$W/annotate.out" | sed 's/^/    /'
"$EG" dlq stats payments.dlq -b "$ERRGATE_BOOTSTRAP" --by owner >"$W/owner.out" 2>&1 || fail "stats: $(cat "$W/owner.out")"
grep -qE '^team-cards +1 ' "$W/owner.out" || fail "dlq stats --by owner does not count the annotated item"

echo "==> replay before approval: nothing (every DLQ item is pending-approval)"
"$EG" replay --from payments.dlq --to payments.fixed -b "$ERRGATE_BOOTSTRAP" --protect-key-file "$W/protect.key" \
  >"$W/r0.out" 2>&1 || fail "replay: $(cat "$W/r0.out")"
[ "$(count payments.fixed)" = 0 ] || fail "replay republished an unapproved item"

echo "==> an operator approves the permanent failures"
"$EG" dlq approve payments.dlq -b "$ERRGATE_BOOTSTRAP" --class permanent --by ops-oncall \
  --reason "card processor fixed, INC-7" >"$W/approve.out" 2>&1 || fail "approve: $(cat "$W/approve.out")"
tail -1 "$W/approve.out" | sed 's/^/    /'

echo "==> replay without the key: refused by name, nothing written, nothing lost"
env -u PROTECT_KEY_FILE "$EG" replay --from payments.dlq --to payments.fixed -b "$ERRGATE_BOOTSTRAP" --state approved \
  >"$W/r1.out" 2>"$W/r1.err" && fail "a replay without the key succeeded"
head -1 "$W/r1.err" | sed 's/^/    /' | cut -c1-220
[ "$(count payments.fixed)" = 0 ] || fail "a replay without the key wrote something"

echo "==> replay with the key: the approved payments go to payments.fixed, decrypted"
"$EG" replay --from payments.dlq --to payments.fixed -b "$ERRGATE_BOOTSTRAP" --state approved \
  --protect-key-file "$W/protect.key" >"$W/r2.out" 2>"$W/r2.err" || fail "replay: $(cat "$W/r2.err")"
tail -1 "$W/r2.out" | sed 's/^/    /'
[ "$(count payments.fixed)" = 4 ] && [ "$(cards payments.fixed)" = 4 ] || fail "payments.fixed does not hold the 4 payments decrypted"
"$EG" dlq stats payments.dlq -b "$ERRGATE_BOOTSTRAP" --by state >"$W/stats.out" 2>&1 || fail "stats: $(cat "$W/stats.out")"
sed 's/^/    /' "$W/stats.out"

echo "protect: every step held (logs in $W)"
