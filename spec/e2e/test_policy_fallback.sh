#!/usr/bin/env bash
# test_policy_fallback.sh — a broken policy never drops data: a policy that
# raises, loops forever, or returns an invalid action gets the fallback
# (hold), logged with the policy version and counted; other records go on;
# the held records are never committed past.
source "$(dirname "$0")/lib.sh"

start_broker --topic src:8 --topic src.dlq:8 --topic src.quarantine:8
start_handler
write_config "$T/gw.lua" fb none
# key = how the policy misbehaves, each on a partition of its own (-p): a
# hold stops its whole partition, so no case can hide another
i=0
for mode in loop raise invalid pcall-loop membomb tablebomb pattern; do
  printf '%s\t{"id":"m%d","mode":"unavailable"}\n' "$mode" "$i" | kcat -P -b "$BOOTSTRAP" -t src -p "$i" -K $'\t'
  i=$((i + 1))
done
# healthy records on a partition of their own: a hold stops its whole partition
for i in $(seq 10 29); do printf 'k%d\t{"id":"r%d","mode":"ok"}\n' $i $i; done | kcat -P -b "$BOOTSTRAP" -t src -p 7 -K $'\t'
printf 'k\t{"id":"r99","mode":"permanent"}\n' | kcat -P -b "$BOOTSTRAP" -t src -p 7 -K $'\t'
sed -i "s|policy = \".*\"|policy = \"$FIXTURES/misbehaving_route.lua\"|" "$T/gw.lua"
start_gateway gw "$T/gw.lua"
wait_for 30 bash -c "[ \$(grep -c '\"fallback\":1' '$T/gw.err') -ge 14 ]"
check "healthy records still flow (20 ok at the handler)" wait_for 20 bash -c "[ \$(awk '{print \$2}' '$T/ok.log' | sort -u | wc -l) = 20 ]"
check "the permanent record still reaches the DLQ" wait_for 20 bash -c "grep -q '\"action\":\"dlq\"' '$T/gw.err'"
stop_gateway "$GW_PID"
check "the gateway survives and exits 0 on SIGTERM (exit $RC)" [ "$RC" = 0 ]
check "a looping policy hits its budget and falls back to hold, stamped name@version+sha" \
  grep -q '"partition":0,"offset":0,.*"action":"hold".*"policy":"fragile@7+[0-9a-f]\{8\}".*"fallback":1,"error":"[^"]*budget' "$T/gw.err"
check "a raising policy falls back to hold, error logged" \
  grep -q '"partition":1,"offset":0,.*"action":"hold".*"fallback":1,"error":"[^"]*policy bug for src/1/0' "$T/gw.err"
check "an invalid action falls back to hold" \
  grep -q '"partition":2,"offset":0,.*"action":"hold".*"fallback":1,"error":"[^"]*invalid' "$T/gw.err"
check "a policy whose pcall swallows the timeout still falls back" \
  grep -q '"partition":3,"offset":0,.*"action":"hold".*"fallback":1,"error":"[^"]*budget' "$T/gw.err"
check "a 1 GiB string.rep hits the memory cap and falls back" \
  grep -q '"partition":4,"offset":0,.*"action":"hold".*"fallback":1,"error":"[^"]*memory' "$T/gw.err"
check "a table of 1e8 entries is stopped (memory cap or budget) and falls back" \
  grep -Eq '"partition":5,"offset":0,.*"action":"hold".*"fallback":1,"error":"[^"]*(memory|budget)' "$T/gw.err"
check "a pathological pattern in method syntax is refused before it runs, and falls back" \
  grep -q '"partition":6,"offset":0,.*"action":"hold".*"fallback":1,"error":".*too costly' "$T/gw.err"
check "fallbacks are counted" grep -q '"event":"summary".*"policy_errors":[1-9]' "$T/gw.err"
"$EG" offsets -b "$BOOTSTRAP" -g fb src >"$T/off.txt"
check "held records are never committed past; the healthy partition is" \
  awk '$1=="src" && $2<7 && $3>0 {bad=1} $1=="src" && $2==7 && $3!=21 {bad=1} END {exit bad}' "$T/off.txt"
