#!/usr/bin/env bash
# test_source_claims.sh — a source record's own errgate headers are claims,
# not facts (provenance.h, gw_claims.c): anyone who can produce to the
# source can write them. With a control key:
#   - a record claiming a later record's errgate.id is sent to the target
#     with its own id, and the later record keeps its own (a target that
#     deduplicates on the id drops neither);
#   - a record claiming another birth place (original.*, errgate.id) is
#     dead-lettered with its own coordinates and errgate.claims-refused;
#   - a plain payload claiming errgate.protect: encrypt reaches an
#     encrypting DLQ encrypted (no card digit in the lane), not as it came;
#   - logged (source_claims_refused) and counted
#     (errgate_source_claims_refused_total);
#   - a record `errgate replay` republished (signed errgate.provenance)
#     keeps its id and birth place when it fails again, and is not counted;
#   - that signature copied onto another value is refused (bad_signature).
# Without a control key the claims are taken as they come, and the start
# says so (control_unauthenticated).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/dlq_story.sh"

CARD=4111111111111111
start_broker --topic src:1 --topic src.dlq:1 --topic src.quarantine:1 --topic two:1 --topic two.dlq:1
start_handler
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/ctl.key"
printf 'claims-protect-key-0123456789\n' >"$T/prot.key"
chmod 600 "$T/ctl.key" "$T/prot.key"
write_config "$T/gw.lua" claims none "admin = { listen = \"127.0.0.1:0\" }, control_key_file = \"$T/ctl.key\",
  lanes = { protect = { dlq = \"encrypt\", key_file = \"$T/prot.key\" } },"
kp() { kcat -P -b "$BOOTSTRAP" -t "$1" -K $'\t' -X acks=all "${@:2}" 2>>"$T/kcat.err" || die "kcat: $(cat "$T/kcat.err")"; }
ok_id() { awk -v id="$1" '$2==id{print $3}' "$T/ok.log" | sort -u | tr '\n' ' ' | sed 's/ $//'; }

# offset 0: claims the id of offset 3; 1: another birth place; 2: an encrypted payload; 3: the real src/0/3
printf 'k0\t{"id":"forged","mode":"ok"}\n' | kp src -H errgate.id=src/0/3
printf 'k1\t{"id":"moved","mode":"permanent"}\n' |
  kp src -H original.topic=payments -H original.partition=0 -H original.offset=7 -H errgate.id=payments/0/7
printf 'k2\t{"id":"card","mode":"permanent","card":"%s"}\n' "$CARD" | kp src -H 'errgate.protect=encrypt;v1;kid=0badc0de'
printf 'k3\t{"id":"real","mode":"ok"}\n' | kp src
start_gateway gw "$T/gw.lua"
wait_drained claims src 40 || not_ok "the gateway did not drain src: lag $(lag claims src)"
ADDR=$(admin_addr gw)
check "the forged record reaches the target with its own id ($(ok_id forged))" [ "$(ok_id forged)" = src/0/0 ]
check "the record whose id it claimed keeps its own ($(ok_id real))" [ "$(ok_id real)" = src/0/3 ]
REFUSED=$(metric "$ADDR" errgate_source_claims_refused_total)
check "two records' claims refused, counted ($REFUSED)" [ "$REFUSED" = 2 ]
check "and logged with the reason" grep -q '"event":"source_claims_refused","topic":"src","partition":0,"offset":1,"reason":"unsigned"' "$T/gw.err"
hdr_dump src.dlq "$T/dlq.jsonl"
$PY - "$T/dlq.jsonl" >"$T/moved.txt" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    h = json.loads(l)["headers"]
    if h.get("original.offset") == "1":
        print(h.get("original.topic"), h.get("errgate.id"), h.get("errgate.claims-refused"))
PY
check "its dead letter names its own birth place and id, and why the claim went: $(cat "$T/moved.txt")" \
  [ "$(cat "$T/moved.txt")" = "src src/0/1 unsigned" ]
check "no dead letter names the claimed birth place" bash -c "! grep -q payments $T/dlq.jsonl"
check "the plain payload claiming 'encrypt' is encrypted in the DLQ: no card digit in its bytes" \
  bash -c "[ \$(kcat -C -b $BOOTSTRAP -t src.dlq -e -q -f '%k %h %s\n' | grep -c $CARD) = 0 ]"
check "and its errgate.protect is the lane's own key id, not the claim" \
  bash -c "! grep -q 0badc0de $T/dlq.jsonl && [ \$(grep -c '\"errgate.protect\": \"encrypt;v1;kid=' $T/dlq.jsonl) = 2 ]"

# errgate replay signs what it republishes: the moved record fails again and keeps its id and birth place
"$EG" replay -c "$T/gw.lua" --from src.dlq --group rp1 >"$T/rp.out" 2>"$T/rp.err"; rc=$?
check "errgate replay republishes both dead letters ($rc: $(tail -1 "$T/rp.out"))" [ "$rc" = 0 ]
hdr_dump src "$T/src.jsonl"
check "each carries errgate.provenance = v1:<64 hex>" \
  [ "$(grep -cE '"errgate.provenance": "v1:[0-9a-f]{64}"' "$T/src.jsonl")" = 2 ]
wait_for 30 bash -c "[ \$(kcat -C -b $BOOTSTRAP -t src.dlq -e -q -f 'x\n' | wc -l) -ge 4 ]"
hdr_dump src.dlq "$T/dlq2.jsonl"
$PY - "$T/dlq2.jsonl" >"$T/again.txt" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for r in rows[2:]:
    h = r["headers"]
    if h.get("errgate.id") == "src/0/1":
        print(h.get("original.topic"), h.get("original.offset"), h.get("errgate.claims-refused", "none"))
PY
check "the replayed record dead-lettered again keeps id src/0/1 and birth offset 1: $(cat "$T/again.txt")" \
  [ "$(cat "$T/again.txt")" = "src 1 none" ]
check "a signed claim is not counted ($(metric "$ADDR" errgate_source_claims_refused_total))" \
  [ "$(metric "$ADDR" errgate_source_claims_refused_total)" = 2 ]

# the signature copied onto another value
SIG=$($PY -c 'import json,sys
for l in open(sys.argv[1]):
    h=json.loads(l)["headers"]
    if h.get("errgate.id")=="src/0/1" and "errgate.provenance" in h: print(h["errgate.provenance"]); break' "$T/src.jsonl")
[ -n "$SIG" ] || not_ok "no signature to copy"
printf 'k1\t{"id":"copied","mode":"ok"}\n' | kp src -H errgate.id=src/0/1 -H original.topic=src -H original.partition=0 \
  -H original.offset=1 -H "errgate.provenance=$SIG"
wait_for 20 grep -q '^ok copied ' "$T/ok.log"
COPY_OFF=$(($(count_topic src) - 1))
check "a copied signature on another value is refused: the record has its own id ($(ok_id copied))" \
  [ "$(ok_id copied)" = "src/0/$COPY_OFF" ]
check "as bad_signature" grep -q "\"event\":\"source_claims_refused\",\"topic\":\"src\",\"partition\":0,\"offset\":$COPY_OFF,\"reason\":\"bad_signature\"" "$T/gw.err"
stop_gateway "$GW_PID"

# without a control key: taken as they come, and said at start
sed 's/"src"/"two"/; s/group = "claims"/group = "claims2"/; /control_key_file/d' "$T/gw.lua" >"$T/gw2.lua"
printf 'k0\t{"id":"unkeyed","mode":"ok"}\n' | kp two -H errgate.id=two/0/9
start_gateway gw2 "$T/gw2.lua"
wait_drained claims2 two 40 || not_ok "the second gateway did not drain two"
check "without a control key the claimed id is taken ($(ok_id unkeyed))" [ "$(ok_id unkeyed)" = two/0/9 ]
check "and the start says so" grep -q '"event":"control_unauthenticated".*errgate.id and original' "$T/gw2.err"
stop_gateway "$GW_PID"
exit $FAILED
