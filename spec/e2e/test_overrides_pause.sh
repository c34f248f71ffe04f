#!/usr/bin/env bash
# test_overrides_pause.sh — `ctl override set NAME --pause TOPIC:PARTITION`
# stops consumption of that partition while in force: records produced to
# src[0] and src[1] while src[1] is paused are processed on src[0] only; the
# committed lag grows on src[1] alone (nothing is committed there past what
# was finished before); after `override clear` src[1] is resumed and drains.
# A pause of a whole topic is logged with reason "operator".
source "$(dirname "$0")/lib.sh"
start_broker --topic src:2 --topic src.dlq:2
start_handler
echo "pause-token" >"$T/token"
write_config "$T/gw.lua" pgr none "admin = { listen = \"127.0.0.1:0\", token_file = \"$T/token\" },"
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin endpoint: $(tail -3 "$T/gw.err")"
ctl() { "$EG" ctl --admin "http://$ADDR" --token-file "$T/token" "$@"; }
wait_for 40 grep -q '"event":"assign".*src\[1\]' "$T/gw.err" || die "no assignment"
part_lag() { "$EG" offsets -b "$BOOTSTRAP" -g pgr src 2>/dev/null | awk -v p="$1" '$1=="src" && $2==p {print $5}'; }
lag_is() { [ "$(part_lag "$1")" = "$2" ]; }
produce_to() { kcat -P -b "$BOOTSTRAP" -t src -p "$1" -K $'\t' -X acks=all 2>/dev/null; }

out=$(ctl override set pause1 --pause src:1 --ttl 10m --reason "downstream shard 1 rebuilds" 2>&1); rc=$?
check "pause override set: exit 0 ($rc: $out)" exits_with "$rc" 0 "override pause1 set: paused until" "$out"
wait_for 5 grep -q '"event":"pause".*"partition":1.*"reasons":"operator"' "$T/gw.err"
check "src[1] is paused for the operator (logged)" grep -q '"event":"pause".*"topic":"src","partition":1.*"reasons":"operator"' "$T/gw.err"
check "src[0] is not paused" bash -c "! grep -q '\"event\":\"pause\".*\"partition\":0' '$T/gw.err'"

for p in 0 1; do for i in $(seq 1 20); do printf 'k%d\t{"id":"p%d-%d"}\n' "$i" "$p" "$i"; done | produce_to "$p"; done
wait_for 30 lag_is 0 0
l0=$(part_lag 0); sleep 3; l1=$(part_lag 1)
check "src[0] drained while src[1] is paused (lag $l0)" [ "$l0" = 0 ]
check "the lag grew on src[1] only: all 20 records wait there ($l1)" [ "$l1" = 20 ]
check "none of src[1]'s records reached the handler" bash -c "! grep -q ' p1-' '$T/ok.log'"

out=$(ctl override clear pause1 2>&1); rc=$?
check "clear: exit 0 ($rc: $out)" exits_with "$rc" 0 "override pause1 cleared" "$out"
wait_for 30 lag_is 1 0
check "after the clear src[1] resumed and drained (lag $(part_lag 1))" [ "$(part_lag 1)" = 0 ]
check "the resume is logged" grep -q '"event":"resume".*"partition":1.*"reasons":"operator"' "$T/gw.err"
check "all 40 records reached the handler ($(grep -c ' p[01]-' "$T/ok.log"))" [ "$(grep -c ' p[01]-' "$T/ok.log")" = 40 ]

out=$(ctl override set pause2 --pause src --ttl 3s --reason "whole topic, briefly" 2>&1); rc=$?
check "a whole-topic pause with a 3 s TTL ($rc: $out)" exits_with "$rc" 0 "override pause2 set" "$out"
wait_for 10 grep -q '"event":"override_expired".*"name":"pause2"' "$T/gw.err"
wait_for 5 bash -c "[ \$(grep -c '\"event\":\"resume\".*\"reasons\":\"operator\"' '$T/gw.err') -ge 3 ]"
check "both partitions were paused and resumed at its expiry" \
  [ "$(grep -c '"event":"resume".*"reasons":"operator"' "$T/gw.err")" -ge 3 ]
stop_gateway "$GW_PID"
check "the gateway exits 0 ($RC)" [ "$RC" = 0 ]
exit $FAILED
