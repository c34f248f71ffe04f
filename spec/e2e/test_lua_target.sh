#!/usr/bin/env bash
# test_lua_target.sh — the in-process Lua target: returning nothing is
# success, a returned failure table is classified (by status or class), and
# an error raised by the handler is of kind `lua` (systemic -> stop).
source "$(dirname "$0")/lib.sh"

start_broker --topic src:1 --topic src.dlq:1 --topic src.quarantine:1
cat >"$T/handler.lua" <<'LUA'
-- a record's value names what to do
return function(record)
  local v = record.value
  if v == "ok" then return end
  if v == "bad-request" then return { status = 400, message = "no such account" } end
  if v == "semantic" then return { class = "semantic", code = "illegal_transition" } end
  if v == "boom" then error("handler crashed on " .. record.id) end
  return { status = 503 }
end
LUA
cat >"$T/gw.lua" <<CFG
return {
  group = "luat",
  source = { topics = { "src" }, ordering = "partition" },
  target = { lua = "$T/handler.lua" },
  policy = "$ROOT/policies/default.lua",
  commit_interval = 200,
}
CFG
printf 'a\tok\nb\tbad-request\nc\tsemantic\nd\tok\ne\tboom\nf\tok\n' | produce src
start_gateway gw "$T/gw.lua"
rc=0; wait_for 60 bash -c "! kill -0 $GW_PID" || kill -9 "$GW_PID"
wait "$GW_PID" || rc=$?
check "a raised error stops the gateway (exit $rc)" [ "$rc" = 3 ]
check "the raise is a failure of kind lua with its message" \
  grep -q '"kind":"lua","class":"systemic".*"action":"stop"' "$T/gw.err"
check "the returned {status=400} went to the DLQ as permanent" \
  grep -q '"offset":1,.*"status":400,"class":"permanent".*"action":"dlq"' "$T/gw.err"
check "the returned {class=semantic} went to quarantine with its code" \
  grep -q '"offset":2,.*"class":"semantic","code":"illegal_transition","action":"quarantine"' "$T/gw.err"
dump src.dlq "$T/dlq.json"; dump src.quarantine "$T/q.json"
check "one DLQ record, one quarantine record" bash -c "[ \$(wc -l <'$T/dlq.json') = 1 ] && [ \$(wc -l <'$T/q.json') = 1 ]"
check "committed up to the raising record (offset 4)" \
  bash -c "'$EG' offsets -b '$BOOTSTRAP' -g luat src | grep -q '^src 0 4 6 2$'"
grep '"event":"summary"' "$T/gw.err" | grep -q '"succeeded_first":2' && ok "two successes counted" || not_ok "two successes counted"
