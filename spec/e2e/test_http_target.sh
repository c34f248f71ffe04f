#!/usr/bin/env bash
# test_http_target.sh — the HTTP target's contract, against real servers:
# request headers (id, coordinates, key, forwarded Kafka headers; garbage
# headers and binary keys handled), body = value bytes, keep-alive with at
# most `concurrency` requests in flight; timeouts are kind `timeout`, a
# refused connection is kind `connect` and holds the partition until the
# target is back; Retry-After sets the retry delay; SIGTERM with a request
# stuck in flight exits within the shutdown budget without committing past it;
# 5,000 fast keep-alive answers: none mistaken for unsolicited bytes.
source "$(dirname "$0")/lib.sh"

start_broker --topic fast:4 --topic fast.dlq:4 --topic fast.quarantine:4 --topic src:1 --topic src.dlq:1 --topic src.quarantine:1 --topic slow:1 --topic slow.dlq:1 --topic hang:1 --topic down:1 --topic down.dlq:1 --topic down.quarantine:1 --topic ra:1 --topic ra.dlq:1 --topic ra.quarantine:1

# --- request contract, against the capture server
bg capture $PY "$ROOT/spec/e2e/capture_server.py" "$T/requests.jsonl"
wait_for 10 grep -q '^listening=' "$T/capture.out" || die "capture server did not start"
HANDLER_URL="http://$(sed -n 's/^listening=//p' "$T/capture.out")/ingest?v=1"
$PY - "$BOOTSTRAP" <<'PY'
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "acks": "all"})
p.produce("src", key=b"acct-42", value=b'{"amount": 10}', partition=0,
          headers=[("trace-id", b"abc123"), ("bad\nname", b"x"), ("binary", b"\x00\x01\xff"),
                   ("multi-line", b"a\r\nInjected: yes")])
p.produce("src", key=b"\x00\xffkey", value=b"\x00\x01binary-value", partition=0)
p.produce("src", key=None, value=b"", partition=0)
for i in range(60):
    p.produce("src", key=b"c%d" % i, value=b"sleep-150 %d" % i, partition=0)
p.flush(10)
PY
write_config "$T/gw.lua" http none
sed -i 's/concurrency = 16/concurrency = 4/' "$T/gw.lua"
start_gateway gw "$T/gw.lua"
wait_drained http src 60 && ok "all records delivered" || not_ok "lag $(lag http src)"
stop_gateway "$GW_PID"
$PY - "$T/requests.jsonl" <<'PY' || FAILED=1
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
n = bad = 0
def check(c, d):
    global n, bad
    n += 1; bad += not c
    print(("ok" if c else "not ok") + " %d - %s" % (n, d))
def hdrs(r):
    return {h.lower(): v for h, v in r["headers"]}
by_offset = {hdrs(r).get("errgate-offset"): r for r in reqs}
first = hdrs(by_offset["0"])
check(by_offset["0"]["path"] == "/ingest?v=1", "POST to the URL's path and query")
check(first.get("errgate-id") == "src/0/0", "Errgate-Id = topic/partition/offset")
check(first.get("errgate-topic") == "src" and first.get("errgate-partition") == "0" and first.get("errgate-offset") == "0", "coordinates in headers")
check(first.get("errgate-key") == "acct-42", "printable key in Errgate-Key")
check(first.get("trace-id") == "abc123", "Kafka headers are forwarded")
check("binary" not in first and "bad\nname" not in first and "multi-line" not in first and "injected" not in first,
      "non-token names, binary and multi-line values are not forwarded (no header injection)")
check(bytes.fromhex(by_offset["0"]["body"]) == b'{"amount": 10}', "body = record value")
second = hdrs(by_offset["1"])
check(second.get("errgate-key-base64") == "AP9rZXk=" and "errgate-key" not in second, "binary key in Errgate-Key-Base64")
check(bytes.fromhex(by_offset["1"]["body"]) == b"\x00\x01binary-value", "binary value bytes unchanged")
third = hdrs(by_offset["2"])
check("errgate-key" not in third and "errgate-key-base64" not in third and by_offset["2"]["body"] == "", "null key and empty value")
ports = {r["port"] for r in reqs}
check(len(reqs) == 63 and len(ports) <= 4, "keep-alive: 63 requests over %d connections (concurrency 4)" % len(ports))
check(max(r["concurrent"] for r in reqs) <= 4, "never more than 4 requests in flight (max %d)" % max(r["concurrent"] for r in reqs))
check(max(r["concurrent"] for r in reqs) >= 3, "the pool is used in parallel (max %d in flight)" % max(r["concurrent"] for r in reqs))
sys.exit(1 if bad else 0)
PY

# --- timeouts, Retry-After, bounded shutdown: the flaky handler
start_handler
HANDLER_URL_FLAKY=$HANDLER_URL
printf 'a\t{"id":"t1","mode":"slow-3000"}\n' | kcat -P -b "$BOOTSTRAP" -t slow -p 0 -K $'\t'
cat >"$T/slow.lua" <<CFG
return { group = "slow", source = { topics = { "slow" } },
  target = { http = { url = "$HANDLER_URL", timeout = 300, concurrency = 4 } },
  policy = "$ROOT/policies/default.lua", commit_interval = 200, shutdown_timeout = 1000 }
CFG
start_gateway gwslow "$T/slow.lua"
check "no answer within timeout_ms is a failure of kind timeout, classed transient" \
  wait_for 30 grep -q '"offset":0,.*"kind":"timeout","class":"transient","code":"timeout","action":"retry"' "$T/gwslow.err"
check "after the attempts, a timed-out record goes to the DLQ as exhausted" \
  wait_for 30 grep -q '"partition":0,"offset":0,.*"kind":"timeout".*"action":"dlq","reason":"exhausted","attempt":5' "$T/gwslow.err"
stop_gateway "$GW_PID"
check "the DLQ'd record is committed (exit $RC)" bash -c "'$EG' offsets -b '$BOOTSTRAP' -g slow slow | grep -q '^slow 0 1 1 0$'"

# SIGTERM while a request hangs: exit within shutdown_timeout, not committed past
printf 'a\t{"id":"h1","mode":"slow-60000"}\n' | kcat -P -b "$BOOTSTRAP" -t hang -K $'\t'
sed 's/"slow"/"hang"/g; s/timeout = 300,/timeout = 60000,/' "$T/slow.lua" >"$T/hang.lua"
start_gateway gwhang "$T/hang.lua"
wait_for 30 grep -q '"event":"assign"' "$T/gwhang.err"; sleep 1
t0=$SECONDS
stop_gateway "$GW_PID"
elapsed=$((SECONDS - t0))
within() { [ "$RC" = 0 ] && [ "$elapsed" -le 4 ]; }
check "SIGTERM with a request in flight: exit 0 within the 1 s shutdown budget (exit $RC, $elapsed s)" within
check "a shutdown timeout is logged" grep -q '"event":"shutdown_timeout"' "$T/gwhang.err"
check "the abandoned in-flight record is not committed past" \
  bash -c "'$EG' offsets -b '$BOOTSTRAP' -g slow hang | awk '\$1==\"hang\" && \$3 > 0 {bad=1} END {exit bad}'"

# Retry-After: 429 with Retry-After: 2 under partition ordering
printf 'a\t{"id":"ra1","mode":"ratelimit-2000"}\nb\t{"id":"ra2","mode":"ok"}\n' | kcat -P -b "$BOOTSTRAP" -t ra -K $'\t'
write_config "$T/ra.lua" ra partition
sed -i 's/"src"/"ra"/' "$T/ra.lua"
start_gateway gwra "$T/ra.lua"
wait_drained ra ra 30 && ok "rate-limited record delivered after its Retry-After" || not_ok "lag $(lag ra ra)"
stop_gateway "$GW_PID"
check "Retry-After: 2 gives a retry delay of at least 2000 ms" \
  grep -qE '"status":429,"class":"transient".*"action":"retry".*"delay_ms":(2[0-9]{3}|[3-9][0-9]{3})' "$T/gwra.err"
check "under partition ordering an in-place retry pauses the partition" grep -q '"event":"pause".*"reasons":"retry"' "$T/gwra.err"
check "the next record of the partition waited for the retried one" \
  bash -c "[ \"\$(grep -o 'ok ra[12]' '$T/ok.log' | tr '\n' ' ')\" = 'ok ra1 ok ra2 ' ]"

# --- connection refused: hold, nothing committed, recovery when the target returns
kill -TERM "$HANDLER_PID"; wait "$HANDLER_PID" 2>/dev/null
PORT=${HANDLER_URL_FLAKY##*:}; PORT=${PORT%/}
printf 'a\t{"id":"d1","mode":"ok"}\nb\t{"id":"d2","mode":"ok"}\n' | kcat -P -b "$BOOTSTRAP" -t down -K $'\t'
write_config "$T/down.lua" down partition
sed -i 's/"src"/"down"/' "$T/down.lua"
start_gateway gwdown "$T/down.lua"
check "a refused connection is kind connect, class unavailable, held" \
  wait_for 30 grep -q '"kind":"connect","class":"unavailable","code":"connect","action":"hold"' "$T/gwdown.err"
check "the held partition is paused" grep -q '"event":"pause","topic":"down","partition":0,"reasons":"hold"' "$T/gwdown.err"
sleep 2
check "nothing is committed past the held records while the target is down" \
  bash -c "'$EG' offsets -b '$BOOTSTRAP' -g down down | awk '\$1==\"down\" && \$3 > 0 {bad=1} END {exit bad}'"
bg handler2 "$FLAKY" --port "$PORT" --log "$T/ok2.log"
wait_drained down down 30 && ok "when the target is back the held records are delivered" || not_ok "lag $(lag down down)"
check "the partition resumed" grep -q '"event":"resume","topic":"down","partition":0' "$T/gwdown.err"
stop_gateway "$GW_PID"

# --- a fast handler and many keep-alive requests: no answer is mistaken for
# an unsolicited one (curl hands a finished request's connection to the next
# request at once; that request's answer may already be waiting on it)
gen_records 5000 "ok:1" | produce fast
write_config "$T/fast.lua" fast none
sed -i 's/"src"/"fast"/' "$T/fast.lua"
start_gateway gwfast "$T/fast.lua"
wait_drained fast fast 60 && ok "5,000 records delivered over keep-alive" || not_ok "lag $(lag fast fast)"
stop_gateway "$GW_PID"
check "not one of them failed (a spurious framing failure would be kind connect)" \
  bash -c "grep '\"event\":\"summary\"' '$T/gwfast.err' | grep -q '\"failures\":0,'"
