#!/usr/bin/env bash
# test_protect.sh — payload protection in the lanes (lanes.protect, a route
# entry's protect; DESIGN §4 errgate.protect), on the embedded broker, with
# card numbers in nested, \u-escaped and broken-UTF-8 payloads:
#   encrypt  no card digit appears anywhere in the DLQ's bytes (a kcat dump
#            grepped); `dlq tail --payload` without the key refuses by name,
#            with it shows the card; `replay` without the key refuses every
#            record by name, exits 1 and writes nothing, and the same command
#            with the key replays them all with their cards back and no
#            errgate.protect header; another key is refused by its id;
#   mask     the paths' values become keyed hashes (equal cards group, the
#            \u-escaped spelling of a card hashes like the plain one), the
#            rest of the payload is kept; a payload that is not strict JSON
#            is a pointer (errgate.protect: pointer;unmasked=not_json, no
#            value) and says so in the log; replay fetches the originals;
#   pointer  a route entry's protect = "pointer" beats lanes.protect: no
#            value in the lane, replay fetches each original from the
#            source (a stub of an encrypting lane too: fetched, not
#            decrypted); a pointer whose source offset holds nothing (or
#            another record) is refused by name with its offset, left in
#            the lane, and the replay exits 1;
#   inbox    a gateway triaging the encrypted DLQ (source.inbox) replays
#            its records through its replay rung (still encrypted there,
#            header carried) and republishes them decrypted with
#            lanes.protect.key_file; without the key each is dead-lettered
#            (reason replay_protected), still encrypted, never out.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/dlq_story.sh"

CARD=4111111111111111
CARD2=5500005555555559
start_broker --topic pay:2 --topic pay.dlq:2 --topic pay.replay:2 --topic shop:2 --topic shop.dlq:2 \
  --topic shop.replay:2 --topic ptr:2 --topic ptr.dlq:2 --topic ptr.quarantine:2 --topic ptr.replay:2
start_handler
printf 'errgate-keyring-v1\nprotect-key-new-0123456789\nprotect-key-old-0123456789\n' >"$T/ring.key"
printf 'protect-key-other-0123456789\n' >"$T/other.key"
chmod 600 "$T/ring.key" "$T/other.key"
expect() { local d=$1; shift; if eval "$*"; then ok "$d"; else not_ok "$d"; fi; }
field() { tail -1 "$2" | grep -o "$1 [0-9]*" | head -1 | awk '{print $NF}'; }

# records: permanent failures (HTTP 400, dead-lettered at once) with the card
# nested, with its member name and digits \u-escaped, and with a broken byte
records() {
  local t=$1
  for i in 1 2 3; do
    printf 'k%s\t{"id":"%s%s","mode":"permanent","card":{"number":"%s","exp":"12/30"},"meta":{"cvv":"123"}}\n' \
      "$i" "$t" "$i" "$CARD"
  done
  printf 'k4\t{"id":"%s4","mode":"permanent","c\\u0061rd":{"number":"\\u0034111111111111111"},"meta":{"cvv":"123"}}\n' "$t"
  printf 'k5\t{"id":"%s5","mode":"permanent","card":{"number":"%s"}}\n' "$t" "$CARD2"
  printf 'k6\t{"id":"%s6","mode":"permanent","card":{"number":"%s"},"bin":"\xff\xfe"}\n' "$t" "$CARD"
  printf 'k7\t{"id":"%s7","mode":"ok"}\n' "$t"
}
cfg() { # cfg FILE TOPIC GROUP PROTECT [POLICY]
  cat >"$1" <<CFG
return {
  admin = { listen = "127.0.0.1:0" },
  group = "$3",
  source = { topics = { "$2" }, ordering = "none" },
  target = { http = { url = "$HANDLER_URL", timeout = 3000, concurrency = 8 } },
  policy = "${5:-$ROOT/policies/default.lua}",
  commit_interval = 200, shutdown_timeout = 5000,
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
  lanes = { protect = $4 },
}
CFG
}
run_gw() { # run_gw NAME TOPIC GROUP: also sets UNPROTECTABLE (the gateway's errgate_payload_unprotectable_total)
  start_gateway "$1" "$T/$1.lua"
  wait_drained "$3" "$2" 60 || not_ok "$1: the gateway did not drain $2: lag $(lag "$3" "$2"); $(tail -3 "$T/$1.err")"
  ADDR=$(admin_addr "$1")
  UNPROTECTABLE=$(metric "$ADDR" errgate_payload_unprotectable_total)
  stop_gateway "$GW_PID"
}
# digits TOPIC: how many times a card's digits (plain, or the 12 ones of the
# escaped spelling) appear in the topic's raw bytes
digits() { kcat -C -b "$BOOTSTRAP" -t "$1" -e -q -f '%k %h %s\n' 2>/dev/null | grep -caE "$CARD|$CARD2|111111111111"; }

# ---- encrypt ----------------------------------------------------------------------
records pay | produce pay
cfg "$T/enc.lua" pay genc "{ dlq = \"encrypt\", key_file = \"$T/ring.key\" }"
run_gw enc pay genc
N=$(count_topic pay.dlq)
expect "encrypt: the six failing records are in pay.dlq ($N)" '[ "$N" = 6 ]'
expect "encrypt: no card digit in the DLQ's bytes (keys, headers, values)" '[ "$(digits pay.dlq)" = 0 ]'
hdr_dump pay.dlq "$T/pay.jsonl"
expect "encrypt: every record says errgate.protect: encrypt;v1;kid=<8 hex>" \
  '[ "$(grep -cE "\"errgate.protect\": \"encrypt;v1;kid=[0-9a-f]{8}\"" "$T/pay.jsonl")" = 6 ]'
"$EG" dlq tail pay.dlq --payload -n 10 >"$T/t0.out" 2>"$T/t0.err"; rc=$?
expect "tail --payload without the key: shown, value refused by name (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(grep -c "value_refused=\"encrypted with key [0-9a-f]* and no protection key file" "$T/t0.out")" = 6 ] && ! grep -q "$CARD" "$T/t0.out"'
"$EG" dlq tail pay.dlq --payload -n 10 --protect-key-file "$T/ring.key" >"$T/t1.out" 2>"$T/t1.err"; rc=$?
expect "tail --payload --protect-key-file decrypts: the cards are back (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(grep -c "$CARD" "$T/t1.out")" = 5 ] && grep -q "$CARD2" "$T/t1.out" && grep -q "u0034111111111111111" "$T/t1.out"'
ERRGATE_PROTECT_KEY_FILE="$T/ring.key" "$EG" dlq tail pay.dlq --payload --json -n 10 >"$T/t2.out" 2>&1; rc=$?
expect "tail --json --payload with \$ERRGATE_PROTECT_KEY_FILE: the value decrypted, protect named (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(grep -c "\"protect\":\"encrypt;v1;kid=" "$T/t2.out")" = 6 ] && [ "$(grep -c "$CARD" "$T/t2.out")" = 5 ]'
"$EG" replay --from pay.dlq --to pay.replay >"$T/r0.out" 2>"$T/r0.err"; rc=$?
expect "replay without the key: refused by name, exit 1, nothing written (rc $rc)" \
  '[ "$rc" = 1 ] && [ "$(grep -c "refused protected pay.dlq/[0-9]/[0-9] (errgate.id pay/.*encrypted with key .* no protection key file" "$T/r0.err")" = 6 ] &&
   [ "$(field protected-refused "$T/r0.out")" = 6 ] && [ "$(count_topic pay.replay)" = 0 ]'
"$EG" replay --from pay.dlq --to pay.replay --protect-key-file "$T/other.key" >"$T/r1.out" 2>"$T/r1.err"; rc=$?
expect "replay with another key: refused by the key id (rc $rc)" \
  '[ "$rc" = 1 ] && grep -q "which is not in the protection key file" "$T/r1.err" && [ "$(count_topic pay.replay)" = 0 ]'
"$EG" replay --from pay.dlq --to pay.replay --protect-key-file "$T/ring.key" >"$T/r2.out" 2>"$T/r2.err"; rc=$?
hdr_dump pay.replay "$T/payr.jsonl"
expect "replay with the key: the same group replays all six, decrypted (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(field replayed "$T/r2.out")" = 6 ] && [ "$(field decrypted "$T/r2.out")" = 6 ] && [ "$(count_topic pay.replay)" = 6 ]'
expect "the replayed records hold the cards as they came and no errgate.protect" \
  '[ "$(grep -c "$CARD" "$T/payr.jsonl")" = 5 ] && ! grep -q "errgate.protect" "$T/payr.jsonl"'

# ---- mask -------------------------------------------------------------------------
records shop | produce shop
cfg "$T/mask.lua" shop gmask "{ dlq = \"mask\", paths = { \"\$.card.number\", \"\$..cvv\" }, hash = true, key_file = \"$T/ring.key\" }"
run_gw mask shop gmask
hdr_dump shop.dlq "$T/shop.jsonl"
expect "mask: six records, no card digit in the DLQ's bytes" '[ "$(count_topic shop.dlq)" = 6 ] && [ "$(digits shop.dlq)" = 0 ]'
expect "mask: the rest of the payload is kept (id, exp)" '[ "$(grep -c "12/30" "$T/shop.jsonl")" = 3 ] && grep -q "shop5" "$T/shop.jsonl"'
expect "mask: equal cards hash alike, the escaped spelling too; another card differs" $PY - "$T/shop.jsonl" <<'PY'
import json, re, sys
h = {}
for r in map(json.loads, open(sys.argv[1])):
    m = re.search(r'"number":"(hmac:[0-9a-f]{32})"', r["payload"] or "")
    if m: h[json.loads(r["payload"])["id"]] = m.group(1)
ok = len(h) == 5 and h["shop1"] == h["shop2"] == h["shop3"] == h["shop4"] and h["shop5"] != h["shop1"]
sys.exit(0 if ok else 1)
PY
expect "mask: the header counts what was masked and names the hash key" \
  'grep -qE "\"errgate.protect\": \"mask;masked=2;hash=[0-9a-f]{8}\"" "$T/shop.jsonl"'
expect "mask: the broken-UTF-8 payload is a pointer, said in its header, the log and the metric ($UNPROTECTABLE)" \
  '[ "$(grep -c "\"errgate.protect\": \"pointer;unmasked=not_json\"" "$T/shop.jsonl")" = 1 ] && grep -q "payload_unprotectable" "$T/mask.err" &&
   [ "$UNPROTECTABLE" = 1 ]'
"$EG" replay --from shop.dlq --to shop.replay >"$T/r3.out" 2>"$T/r3.err"; rc=$?
expect "mask: replay fetches the originals from the source (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(field replayed "$T/r3.out")" = 6 ] && [ "$(count_topic shop.replay)" = 6 ] && [ "$(digits shop.replay)" = 6 ]'

# ---- pointer (per route) ------------------------------------------------------------
records ptr | produce ptr
printf 'k8\t{"id":"ptr8","mode":"semantic","card":{"number":"%s"}}\n' "$CARD" | produce ptr
cfg "$T/ptr.lua" ptr gptr "{ dlq = \"encrypt\", key_file = \"$T/ring.key\" }" "$FIXTURES/protect_pointer.lua"
run_gw ptr ptr gptr
hdr_dump ptr.dlq "$T/ptr.jsonl"
hdr_dump ptr.quarantine "$T/ptrq.jsonl"
expect "route protect = \"pointer\" beats lanes.protect: six pointers, no value" \
  '[ "$(grep -c "\"errgate.protect\": \"pointer\"" "$T/ptr.jsonl")" = 6 ] && [ "$(grep -c "\"payload\": null" "$T/ptr.jsonl")" = 6 ]'
expect "route protect = \"encrypt\" on a quarantine lane without lanes.protect.quarantine" \
  'grep -q "\"errgate.protect\": \"encrypt;v1;kid=" "$T/ptrq.jsonl" && [ "$(digits ptr.quarantine)" = 0 ]'
"$EG" dlq tail ptr.dlq --payload -n 1 >"$T/t3.out" 2>&1
expect "tail --payload of a pointer says where the payload is" 'grep -q "value_refused=\"pointer: no payload in the lane" "$T/t3.out"'
# a forged pointer whose source offset holds nothing
kcat -P -b "$BOOTSTRAP" -t ptr.dlq -p 0 -H "errgate.id=ptr/0/999999" -H "original.topic=ptr" -H "original.partition=0" \
  -H "original.offset=999999" -H "errgate.protect=pointer" -H "error.class=permanent" 2>"$T/kcat.err" <<<"forged"
# a stub (its value too large for the lane) of an encrypting lane: fetched like any stub, not decrypted
read -r SP SO < <(kcat -C -b "$BOOTSTRAP" -t ptr -e -q -f '%p %o %s\n' | awk '/"ptr7"/ {print $1, $2}')
kcat -P -b "$BOOTSTRAP" -t ptr.dlq -p 1 -H "errgate.id=ptr/$SP/$SO" -H "original.topic=ptr" -H "original.partition=$SP" \
  -H "original.offset=$SO" -H "errgate.protect=encrypt;v1;kid=0badc0de" -H "errgate.value-omitted=999" \
  -H "error.class=permanent" 2>>"$T/kcat.err" <<<"x"
"$EG" replay --from ptr.dlq --to ptr.replay >"$T/r4.out" 2>"$T/r4.err"; rc=$?
expect "pointer: replay fetches the six originals and the stub's, refuses the one whose source is gone (rc $rc)" \
  '[ "$rc" = 1 ] && [ "$(field replayed "$T/r4.out")" = 7 ] && [ "$(field protected-refused "$T/r4.out")" = 1 ] && [ "$(digits ptr.replay)" = 6 ]'
expect "the refusal names the item, its source offset and why" \
  'grep -q "refused protected ptr.dlq/0/[0-9]* (errgate.id ptr/0/999999, source ptr/0/999999, errgate.protect: pointer): .*999999" "$T/r4.err"'
"$EG" replay --from ptr.dlq --to ptr.replay >"$T/r5.out" 2>"$T/r5.err"; rc=$?
expect "the refused pointer was not finished: the same replay meets it again, loses nothing (rc $rc)" \
  '[ "$rc" = 1 ] && [ "$(field protected-refused "$T/r5.out")" = 1 ] && [ "$(field replayed "$T/r5.out")" = 0 ]'
# ---- inbox mode ---------------------------------------------------------------------
cat >"$T/replay_all.lua" <<'POL'
local policy = require "errgate.policy"
return policy.define { name = "replay-all", version = "1", classify = { { class = "any" } },
  route = { default = { replay = "pay-fixed" } } }
POL
inbox_cfg() { # inbox_cfg FILE GROUP TAG PROTECT
  cat >"$1" <<CFG
return {
  group = "$2",
  source = { topics = { "pay.dlq" }, inbox = "auto", replay_allow = { "pay-fixed" } },
  policy = "$T/replay_all.lua",
  commit_interval = 200, shutdown_timeout = 5000,
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
  lanes = { dlq = "{topic}.$3dlq", retry = "{topic}.$3.{rung}", protect = $4 },
}
CFG
}
create_topic pay-fixed 2
inbox_cfg "$T/in0.lua" gin0 n0 "{ }"
start_gateway in0 "$T/in0.lua"
in0_done() { [ "$(count_topic pay.dlq.n0dlq)" = 6 ]; }
wait_for 60 in0_done; stop_gateway "$GW_PID"
hdr_dump pay.dlq.n0dlq "$T/in0.jsonl"
expect "inbox without the key: all six dead-lettered (replay_protected), still encrypted, none out" \
  '[ "$(grep -c "\"errgate.reason\": \"replay_protected\"" "$T/in0.jsonl")" = 6 ] && [ "$(digits pay.dlq.n0dlq)" = 0 ] &&
   [ "$(grep -c "\"errgate.protect\": \"encrypt;v1;kid=" "$T/in0.jsonl")" = 6 ] && [ "$(count_topic pay-fixed)" = 0 ]'
expect "inbox: the replay rung held them encrypted, header carried" \
  '[ "$(digits pay.dlq.n0.replay)" = 0 ] && [ "$(count_topic pay.dlq.n0.replay)" = 6 ]'
inbox_cfg "$T/in1.lua" gin1 k1 "{ key_file = \"$T/ring.key\" }"
start_gateway in1 "$T/in1.lua"
in1_done() { [ "$(count_topic pay-fixed)" = 6 ]; }
wait_for 60 in1_done; stop_gateway "$GW_PID"
hdr_dump pay-fixed "$T/fixed.jsonl"
expect "inbox with lanes.protect.key_file: six republished decrypted, no errgate.protect" \
  '[ "$(count_topic pay-fixed)" = 6 ] && [ "$(grep -c "$CARD" "$T/fixed.jsonl")" = 5 ] && ! grep -q "errgate.protect" "$T/fixed.jsonl" &&
   [ "$(count_topic pay.dlq.k1dlq)" = 0 ]'
exit $FAILED
