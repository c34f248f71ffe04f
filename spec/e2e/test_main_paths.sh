#!/usr/bin/env bash
# test_valgrind.sh — the gateway under valgrind (memcheck, full leak check)
# through its main paths: successes, in-place retries, DLQ and quarantine
# writes, ignores, a SIGTERM shutdown; a `stop`; the Lua target. Any memcheck
# error or a definite/indirect leak fails. (Skipped in the sanitizer build:
# valgrind and ASan do not mix.)
source "$(dirname "$0")/lib.sh"
if [ "${SAN:-}" = 1 ]; then diag "skipped under SAN=1"; exit 0; fi
command -v valgrind >/dev/null || die "valgrind is not installed"

start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2 --topic bug:1 --topic bug.dlq:1 --topic bug.quarantine:1
start_handler
gen_records 300 | produce src
write_config "$T/gw.lua" vg none
bg gw "${VG[@]}" "$EG" run -c "$T/gw.lua"; GW_PID=$LASTPID
if wait_drained vg src 120; then ok "mixed run under valgrind drains"; else not_ok "lag $(lag vg src)"; fi
stop_gateway "$GW_PID"
check "SIGTERM under valgrind: exit 0, no memcheck errors, no leaks (exit $RC)" vg_ok "$RC" 0 "$T/gw.err"

printf 'a\t{"id":"b1","mode":"ok"}\nb\t{"id":"b2","mode":"bug"}\n' | kcat -P -b "$BOOTSTRAP" -t bug -K $'\t'
sed 's/"src"/"bug"/; s/group = "vg"/group = "vgbug"/' "$T/gw.lua" >"$T/bug.lua"
rc=0; timeout 120 "${VG[@]}" "$EG" run -c "$T/bug.lua" 2>"$T/stop.err" || rc=$?
check "stop under valgrind: exit 3, no memcheck errors, no leaks (exit $rc)" vg_ok "$rc" 3 "$T/stop.err"

cat >"$T/target.lua" <<'LUA'
return function(r) if r.value:find("fail") then return { status = 400 } end end
LUA
printf 'x\tok\ny\tfail\nz\tok\n' | kcat -P -b "$BOOTSTRAP" -t lua -K $'\t'
cat >"$T/lua.lua" <<CFG
return { group = "vglua", source = { topics = { "lua" } }, target = { lua = "$T/target.lua" },
         policy = "$ROOT/policies/default.lua", commit_interval_ms = 200 }
CFG
bg gwlua "${VG[@]}" "$EG" run -c "$T/lua.lua"; GW_PID=$LASTPID
if wait_drained vglua lua 120; then ok "Lua target under valgrind drains"; else not_ok "lag $(lag vglua lua)"; fi
stop_gateway "$GW_PID"
check "Lua target under valgrind: exit 0, no memcheck errors, no leaks (exit $RC)" vg_ok "$RC" 0 "$T/gwlua.err"

# the ladder (rungs consumed and due-paused), breaker, retry budget and the
# spill journal's drainer, all on: a handler started now, so that outage-MS
# counts from here
start_handler
gen_records 200 "ok:50 outage-12000:30 permanent:20" | sed 's/"id":"r/"id":"L/' | produce pay
cat >"$T/pay.lua" <<CFG
return { group = "vgpay", source = { topics = { "pay" }, ordering = "none" },
         target = { http = { url = "$HANDLER_URL", timeout_ms = 5000, concurrency = 8 },
                    breaker = { window = 20, min_calls = 10 }, retry_budget = { percent = 20, min = 3 } },
         policy = "$ROOT/examples/payments/policy.lua", commit_interval_ms = 200,
         lanes = { retry = "{topic}.retry.{rung}", spill = { dir = "$T/spill", after_ms = 3000 } } }
CFG
bg gwpay "${VG[@]}" "$EG" run -c "$T/pay.lua"; GW_PID=$LASTPID
if wait_drained vgpay pay 180; then ok "ladder run under valgrind drains"; else not_ok "lag $(lag vgpay pay)"; fi
check "records climbed the ladder" grep -q '"action":"ladder"' "$T/gwpay.err"
wait_for 60 bash -c "[ \"\$(awk '\$1==\"total\"{print \$4}' <(\"$EG\" offsets -b $BOOTSTRAP -g vgpay pay.retry.1s pay.retry.2s pay.retry.4s 2>/dev/null))\" = 0 ]" ||
  not_ok "rung lag left"
stop_gateway "$GW_PID"
check "ladder, breaker, budget and spill drainer under valgrind: exit 0, no memcheck errors, no leaks (exit $RC)" vg_ok "$RC" 0 "$T/gwpay.err"
