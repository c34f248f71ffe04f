#!/usr/bin/env bash
# test_run_signals_early.sh — a signal that reaches `errgate run` while it
# starts (config, policy, target, lanes, spill journal, Kafka clients, before
# the loop's signal handlers are armed) does what it does later: SIGHUP
# reloads, SIGTERM stops gracefully with exit 0. Found by make chaos: a hot
# reload (SIGHUP to every instance) that hit an instance just restarted
# killed it with the default action (exit by signal 1).
#
# The config file (Lua) first counts to 3e7, a startup of about 0.3 s (a
# config runs with the JIT off, within a 2 s budget). Each case starts the
# gateway, waits until the process runs errgate (its /proc comm) plus 0.2 s,
# so main() runs and the config is loading, and then sends the signal every
# 20 ms for 1 s: the first ones land long before the handlers exist. (A signal before main() runs, while the dynamic
# loader works, still has its default action: nothing can change that.)
source "$(dirname "$0")/lib.sh"

start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2
start_handler
gen_records 50 "ok:1" | produce src
write_config "$T/gw.lua" early none
sed -i '1i local x = 0\nfor i = 1, 3e7 do x = x + i % 7 end' "$T/gw.lua"

# signal_at_start NAME SIGNAL: start gateway NAME, signal it from its exec on.
signal_at_start() {
  start_gateway "$1" "$T/gw.lua"
  local comm="" i
  for i in $(seq 20000); do
    read -r comm <"/proc/$GW_PID/comm" 2>/dev/null
    [ "$comm" = errgate ] && break
  done
  sleep 0.2
  for i in $(seq 50); do kill "-$2" "$GW_PID" 2>/dev/null || break; sleep 0.02; done
}

signal_at_start hup HUP
wait_for 30 grep -q '"event":"assign"' "$T/hup.err"
check "SIGHUPs from the start on: the gateway is still running" kill -0 "$GW_PID"
check "and reloads its policy" grep -q '"event":"reload"' "$T/hup.err"
if wait_drained early src 60; then ok "and works (all 50 records committed)"; else not_ok "lag $(lag early src)"; fi
stop_gateway "$GW_PID"
check "it exits 0 on SIGTERM (exit $RC)" [ "$RC" = 0 ]

signal_at_start term TERM
RC=0; wait "$GW_PID" || RC=$?
check "SIGTERM from the start on: a graceful stop, exit 0 (exit $RC)" [ "$RC" = 0 ]
