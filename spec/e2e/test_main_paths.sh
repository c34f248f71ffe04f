#!/usr/bin/env bash
# test_main_paths.sh — the gateway through its main paths, one run each:
# successes, in-place retries, DLQ and quarantine writes, ignores, a SIGTERM
# shutdown; a `stop`; the Lua target; the ladder (rungs consumed and
# due-paused) with the breaker, the retry budget and the spill journal's
# drainer. The default `make test` runs it under memcheck (VALGRIND=1, see
# lib.sh): any memory error or definite/indirect leak of these processes
# fails it.
# spec/run.sh: valgrind
source "$(dirname "$0")/lib.sh"

start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2 --topic bug:1 --topic bug.dlq:1 --topic bug.quarantine:1
start_handler
gen_records 300 | produce src
write_config "$T/gw.lua" vg none
bg gw "$EG" run -c "$T/gw.lua"; GW_PID=$LASTPID
if wait_drained vg src 120; then ok "mixed run drains"; else not_ok "lag $(lag vg src)"; fi
stop_gateway "$GW_PID"
check "SIGTERM: exit 0 (exit $RC)" [ "$RC" = 0 ]

printf 'a\t{"id":"b1","mode":"ok"}\nb\t{"id":"b2","mode":"bug"}\n' | kcat -P -b "$BOOTSTRAP" -t bug -K $'\t'
sed 's/"src"/"bug"/; s/group = "vg"/group = "vgbug"/' "$T/gw.lua" >"$T/bug.lua"
rc=0; timeout 120 "$EG" run -c "$T/bug.lua" 2>"$T/stop.err" || rc=$?
check "stop: exit 3 (exit $rc)" [ "$rc" = 3 ]

cat >"$T/target.lua" <<'LUA'
return function(r) if r.value:find("fail") then return { status = 400 } end end
LUA
printf 'x\tok\ny\tfail\nz\tok\n' | kcat -P -b "$BOOTSTRAP" -t lua -K $'\t'
cat >"$T/lua.lua" <<CFG
return { group = "vglua", source = { topics = { "lua" } }, target = { lua = "$T/target.lua" },
         policy = "$ROOT/policies/default.lua", commit_interval = 200 }
CFG
bg gwlua "$EG" run -c "$T/lua.lua"; GW_PID=$LASTPID
if wait_drained vglua lua 120; then ok "Lua target drains"; else not_ok "lag $(lag vglua lua)"; fi
stop_gateway "$GW_PID"
check "Lua target: exit 0 (exit $RC)" [ "$RC" = 0 ]

# the ladder (rungs consumed and due-paused), breaker, retry budget and the
# spill journal's drainer, all on: a handler started now, so that outage-MS
# counts from here; 25 s, so that the outage outlasts the gateway's start
# under memcheck on a loaded machine (with 12 s, the records once reached the
# handler after it: no failure, no ladder)
start_handler
gen_records 200 "ok:50 outage-25000:30 permanent:20" | sed 's/"id":"r/"id":"L/' | produce pay
cat >"$T/pay.lua" <<CFG
return { group = "vgpay", source = { topics = { "pay" }, ordering = "none" },
         target = { http = { url = "$HANDLER_URL", timeout = 5000, concurrency = 8 },
                    breaker = { window = 20, min_calls = 10 }, retry_budget = { percent = 20, min = 3 } },
         policy = "$ROOT/examples/payments/policy.lua", commit_interval = 200,
         lanes = { retry = "{topic}.retry.{rung}", spill = { dir = "$T/spill", after = 3000 } } }
CFG
bg gwpay "$EG" run -c "$T/pay.lua"; GW_PID=$LASTPID
if wait_drained vgpay pay 180; then ok "ladder run drains"; else not_ok "lag $(lag vgpay pay)"; fi
check "records climbed the ladder" grep -q '"action":"ladder"' "$T/gwpay.err"
wait_for 60 bash -c "[ \"\$(awk '\$1==\"total\"{print \$4}' <(\"$EG\" offsets -b $BOOTSTRAP -g vgpay pay.retry.1s pay.retry.2s pay.retry.4s 2>/dev/null))\" = 0 ]" ||
  not_ok "rung lag left"
stop_gateway "$GW_PID"
check "ladder, breaker, budget and spill drainer: exit 0 (exit $RC)" [ "$RC" = 0 ]
