#!/usr/bin/env bash
# test_lua_protected.sh — the C core calls Lua only under protection:
#  (a) a record with 4.8 MB of headers under a policy that reads the record
#      and policy_memory_mb = 4: building its table overflows the cap inside
#      the C side's pushes; the record gets the fallback hold (logged with
#      the policy's id, counted), the gateway keeps running and deciding
#      other records, and a restart meets the record again without dying
#      (no crash loop);
#  (b) a Lua target answering failure tables whose __index/__len/__eq/...
#      loop: the answer is read raw, each record is a failure decided by the
#      policy (here: DLQ), nothing hangs, SIGTERM stops the gateway.
source "$(dirname "$0")/lib.sh"

start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2
cat >"$T/handler.lua" <<'LUA'
local function loop() while true do end end
local trap = { __index = loop, __len = loop, __eq = loop, __lt = loop, __le = loop, __tostring = loop,
  __concat = loop, __call = loop }
return function(record)
  if record.value == "meta" then return setmetatable({ status = 400 }, trap) end
  return { status = 400 }
end
LUA
POLICY_ID=$("$EG" policy check "$FIXTURES/reads_record_header.lua" | awk '/^policy/{print $2}')
cat >"$T/gw.lua" <<CFG
return {
  group = "protected",
  source = { topics = { "src" }, ordering = "partition" },
  target = { lua = "$T/handler.lua" },
  policy = "$FIXTURES/reads_record_header.lua",
  policy_memory_mb = 4,
  commit_interval = 200,
  shutdown_timeout = 5000,
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
  admin = { listen = "127.0.0.1:0" },
}
CFG
# partition 0: the record with big headers (distinct values: Lua interns
# equal strings), then a small one; partition 1: metamethod answers
$PY - "$BOOTSTRAP" <<'PY' || die "producing the big record failed"
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "message.max.bytes": 10000000, "acks": "all"})
hdrs = [("x-big-%d" % i, ("%06d" % i).encode() + b"h" * 3994) for i in range(1200)]
p.produce("src", key=b"big", value=b"fail", headers=hdrs, partition=0)
p.produce("src", key=b"small", value=b"fail", partition=0)
for i in range(5):
    p.produce("src", key=b"m%d" % i, value=b"meta", partition=1)
if p.flush(30) != 0:
    sys.exit(1)
PY
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin endpoint: $(tail -3 "$T/gw.err")"

# (b)
wait_for 60 bash -c "[ \$(grep -c '\"event\":\"decision\".*\"partition\":1,.*\"action\":\"dlq\"' '$T/gw.err') -ge 5 ]" &&
  ok "(b) every metamethod answer is a failure decided by the policy (DLQ)" || not_ok "(b) decisions: $(grep -c '"partition":1' "$T/gw.err")"
check "(b) its status was read raw (400, permanent)" grep -q '"partition":1,.*"status":400,"class":"permanent"' "$T/gw.err"

# (a)
wait_for 60 grep -q '"event":"decision".*"partition":0,"offset":0,.*"action":"hold".*"fallback":1,"error":"policy VM: not enough memory' "$T/gw.err" &&
  ok "(a) the big record gets the fallback hold: memory cap while its table was built" ||
  not_ok "(a) no fallback decision: $(grep '"partition":0' "$T/gw.err" | tail -2)"
check "(a) the fallback is logged with the policy id" \
  grep -q "\"partition\":0,\"offset\":0,.*\"policy\":\"$POLICY_ID\".*\"fallback\":1" "$T/gw.err"
sleep 2
check "(a) it is held again and again, the gateway alive" \
  bash -c "kill -0 $GW_PID && [ \$(grep -c '\"partition\":0,\"offset\":0,.*\"fallback\":1' '$T/gw.err') -ge 2 ]"
admin_get "$ADDR" /metrics >"$T/m.txt"
check "(a) fallbacks are counted" grep -qE '^errgate_policy_fallbacks_total [1-9]' "$T/m.txt"
check "(a) /healthz answers" bash -c "curl -sf -m 1 http://$ADDR/healthz >/dev/null"
lag_is_two() { [ "$(lag protected src)" = 2 ]; }
check "partition 1 is drained, partition 0 waits at the held record (lag 2: $(lag protected src))" wait_for 30 lag_is_two
stop_gateway "$GW_PID"
check "the gateway stops cleanly on SIGTERM (exit $RC)" [ "$RC" = 0 ]

# a restart meets the same record: no crash loop
mv "$T/gw.err" "$T/gw1.log"
start_gateway gw "$T/gw.lua"
wait_for 60 grep -q '"partition":0,"offset":0,.*"fallback":1' "$T/gw.err" &&
  ok "(a) after a restart the record falls back again" || not_ok "(a) no decision after the restart"
check "(a) and the restarted gateway is alive" kill -0 "$GW_PID"
stop_gateway "$GW_PID"
check "the restarted gateway stops cleanly (exit $RC)" [ "$RC" = 0 ]
exit $FAILED
