#!/usr/bin/env bash
# test_audit_fatal.sh — a fatal error of the audit topic's idempotent
# producer (the mock broker answers its write with
# OUT_OF_ORDER_SEQUENCE_NUMBER: librdkafka's fatal idempotence error) does
# not leave operators without overrides until a restart: the write that met
# it is answered 503 with the cause, the next `ctl override set` gets a fresh
# producer (audit_producer_replaced) and is applied; the gateway keeps
# deciding and exits 0.
source "$(dirname "$0")/lib.sh"
start_broker --topic src:1 --topic src.dlq:1
start_handler
echo "af-token" >"$T/token"
write_config "$T/gw.lua" af partition "admin = { listen = \"127.0.0.1:0\", token_file = \"$T/token\" },"
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin endpoint: $(tail -3 "$T/gw.err")"
wait_for 40 grep -q '"event":"assign".*src\[' "$T/gw.err" || die "no assignment"
ctl() { "$EG" ctl --admin "http://$ADDR" --token-file "$T/token" "$@"; }
# no record flows: the audit producer's write is the next Produce request
broker_ctl request-errors Produce 1 OUT_OF_ORDER_SEQUENCE_NUMBER >/dev/null || die "request-errors refused"
out=$(ctl override set first --class permanent --action hold --ttl 10m --reason "incident" --by ana 2>&1); rc=$?
check "the write that met the fatal error fails, saying so ($rc: $out)" \
  exits_with "$rc" 1 "HTTP 503" "$out"
check "with its cause" grep -qi 'out of order sequence' <<<"$out"
out=$(ctl override set second --class permanent --action hold --ttl 10m --reason "incident" --by ana 2>&1); rc=$?
check "the next one gets a fresh producer and is applied ($rc: $out)" exits_with "$rc" 0 "override second set" "$out"
check "the replacement is logged" grep -q '"event":"audit_producer_replaced"' "$T/gw.err"
check "second is in force" bash -c "$EG ctl --admin http://$ADDR override list | grep -q '^second '"
printf 'k1\t{"id":"p1","mode":"permanent"}\n' | produce src
wait_for 20 grep -q '"event":"decision".*"action":"hold"' "$T/gw.err"
check "and it decides: a permanent failure is held by it" grep -q '"event":"decision".*"action":"hold"' "$T/gw.err"
out=$(ctl override clear second 2>&1); rc=$?
check "cleared by the operator ($rc: $out)" exits_with "$rc" 0 "override second cleared" "$out"
stop_gateway "$GW_PID"
check "the gateway exits 0 ($RC)" [ "$RC" = 0 ]
exit $FAILED
