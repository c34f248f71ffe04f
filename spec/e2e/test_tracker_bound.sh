#!/usr/bin/env bash
# test_tracker_bound.sh — the offset tracker is bounded:
# under ordering = "none" one record retries in place for seconds (503 for
# its first 20 attempts) while 3,000 others succeed. The tracker spans from
# the stuck record to the newest read one; at source.max_tracked (400) the
# partition is no longer read (logged tracker_full, counted): the
# errgate_tracked_offsets gauge never exceeds 400 while it is stuck; once
# the stuck record succeeds reading resumes (tracker_resumed), every record
# reaches the handler and every offset is committed.
source "$(dirname "$0")/lib.sh"
start_broker --topic src:1 --topic src.dlq:1 --topic src.quarantine:1
start_handler
write_config "$T/gw.lua" tb none 'admin = { listen = "127.0.0.1:0" },'
sed -i "s|policy = \"$ROOT/policies/default.lua\"|policy = \"$FIXTURES/slow_retry_250ms.lua\"|; s|max_inflight = 500 }|max_inflight = 100, max_tracked = 400 }|" "$T/gw.lua"
{ printf 'k0\t{"id":"stuck","mode":"transient-20"}\n'; gen_records 3000 "ok:1"; } | produce src
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin address"

# sample the gauge while the stuck record retries
max=0; n=0
while ! grep -q '^ok stuck ' "$T/ok.log" 2>/dev/null && [ $n -lt 300 ]; do
  v=$(curl -s -m 2 "http://$ADDR/metrics" | awk '/^errgate_tracked_offsets\{/ {print $2}' | sort -n | tail -1)
  [ -n "$v" ] && [ "${v%.*}" -gt "$max" ] && max=${v%.*}
  n=$((n+1)); sleep 0.1
done
check "the stuck record finally succeeded" grep -q '^ok stuck ' "$T/ok.log"
check "the tracker stayed within max_tracked while it was stuck (max seen $max)" [ "$max" -le 400 -a "$max" -ge 300 ]
check "tracker_full was logged" grep -q '"event":"tracker_full".*"msg":"src\[0\]' "$T/gw.err"
check "tracker_full is counted" bash -c "curl -s http://$ADDR/metrics | grep -Eq '^errgate_tracker_full_total [1-9]'"
wait_drained tb src 60 && ok "every offset is committed" || not_ok "lag $(lag tb src)"
check "reading resumed (tracker_resumed logged)" grep -q '"event":"tracker_resumed"' "$T/gw.err"
check "every record reached the handler ($(awk '{print $2}' "$T/ok.log" | sort -u | wc -l) of 3001)" \
  [ "$(awk '{print $2}' "$T/ok.log" | sort -u | wc -l)" = 3001 ]
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
