#!/usr/bin/env bash
# test_breaker.sh — the circuit breaker when the target is down entirely
# (issue 4), with the payments demo policy (an open circuit -> hold):
# 1. The provider answers 503 to everything for its first 10 s
#    (--fail-all-for 10000; every record is `ok`, so the handler's `failed`
#    count is exactly the requests sent during the outage). No request
#    storm: the breaker (window 20, min_calls 10, ratio 0.5, open 1000 ms,
#    2 half-open probes) lets through at most
#        min_calls + concurrency            before it first opens (the 10th
#                                           failure opens it; at most 16
#                                           requests are in flight then)
#      + probes x floor(D / open_ms) + probes   after (each half-open period
#                                           follows >= open_ms of open and
#                                           lets <= 2 probes go; one failed
#                                           probe re-opens at once)
#    where D runs from the first opening (gateway log) to the end of the
#    outage. Meanwhile the partitions are held (pause reason hold) and
#    /metrics shows errgate_breaker_state 1 (open). When the provider is
#    back a probe succeeds, the breaker closes (log, transitions_total{to}),
#    every record succeeds and every offset is committed: 0 lost.
# 2. The provider process stops (connection refused) and comes back on the
#    same port 4 s later: the breaker opens again, records wait, and once
#    it is back they all succeed, the breaker closes, everything committed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ladder_lib.sh"
POLICY="$ROOT/examples/payments/policy.lua"
RUNGS=$(rung_topics src 1s 2s 4s)
start_broker $(ladder_topics src 1s 2s 4s)
MIN_CALLS=10 CONC=16 OPEN_MS=1000 PROBES=2 OUTAGE_MS=10000
BREAKER="breaker = { window = 20, min_calls = $MIN_CALLS, failure_ratio = 0.5, open = $OPEN_MS, half_open_probes = $PROBES },"

gen_records 300 "ok:1" | produce src
handler_at h --fail-all-for "$OUTAGE_MS"
HSTART=$($PY -c 'import time; print(int(time.time() * 1000))')
PORT=${HANDLER_ADDR##*:}
ladder_config "$T/gw.lua" brk src none "$POLICY" "$BREAKER" 'admin = { listen = "127.0.0.1:0" },'
sed -i "s/concurrency = 16/concurrency = $CONC/" "$T/gw.lua"
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin address: $(tail -3 "$T/gw.err")"

# sample the breaker gauge until the outage is over
: >"$T/state.txt"
while [ "$($PY -c 'import time; print(int(time.time() * 1000))')" -lt $((HSTART + OUTAGE_MS)) ]; do
  admin_get "$ADDR" /metrics | awk '$1 ~ /^errgate_breaker_state/ {print $2}' >>"$T/state.txt"
  sleep 0.1
done
FAILED_REQ=$(handler_stats "$HANDLER_ADDR" failed)
diag "requests answered 503 during the outage: $FAILED_REQ"
check "/metrics showed errgate_breaker_state 1 (open) during the outage" grep -qx 1 "$T/state.txt"
check "the partitions were held while the circuit was open (pause reason hold)" \
  grep -q '"event":"pause","topic":"src[.a-z0-9]*".*"reasons":"[a-z,]*hold' "$T/gw.err"
check "records were held as unavailable with kind circuit_open" \
  grep -q '"event":"decision".*"kind":"circuit_open".*"class":"unavailable".*"action":"hold"' "$T/gw.err"

pycheck "$T/gw.err" "$HSTART" "$FAILED_REQ" "$MIN_CALLS" "$CONC" "$OPEN_MS" "$PROBES" "$OUTAGE_MS" <<'PY'
import sys
from ladder_lanes import check, done, events, ms
log, hstart, failed, min_calls, conc, open_ms, probes, outage = sys.argv[1], *map(int, sys.argv[2:])
opens = [ms(e["ts"]) for e in events(log, "breaker") if e.get("to") == "open"]
if not check(opens, "the breaker opened during the outage"):
    done()
end = hstart + outage + 100 # the handler started a little before hstart was read
d = max(0, end - opens[0])
bound = min_calls + conc + probes * (d // open_ms) + probes
print("# first opening at +%d ms; open for up to %d ms of the outage; %d openings logged" % (opens[0] - hstart, d, len(opens)))
print("# requests during the outage %d, bound %d = %d + %d + %d x %d + %d; without a breaker every record would be tried"
      " at least once more per rung" % (failed, bound, min_calls, conc, probes, d // open_ms, probes))
check(failed <= bound, "no request storm: %d requests during the outage <= %d (half-open probe rate)" % (failed, bound))
check(failed >= min_calls, "the breaker saw failures before it opened (%d >= %d)" % (failed, min_calls))
done()
PY

all_ok() { all_committed brk src $RUNGS && [ "$(awk '{print $2}' "$T/h.log" | sort -u | wc -l)" -ge "$1" ]; }
wait_for 40 all_ok 300 && ok "after the outage every record succeeded and every offset is committed" ||
  not_ok "not recovered after 40 s: $(awk '{print $2}' "$T/h.log" | sort -u | wc -l) of 300 succeeded, lag $(lag brk src)"
check "the breaker closed again (logged)" grep -q '"event":"breaker","from":"half_open","to":"closed"' "$T/gw.err"
check "errgate_breaker_state is 0 (closed) after the recovery" [ "$(metric "$ADDR" errgate_breaker_state)" = 0 ]
for to in open half_open closed; do
  n=$(metric "$ADDR" errgate_breaker_transitions_total "to=\"$to\"")
  check "errgate_breaker_transitions_total{to=\"$to\"} counted ($n)" \
    eval '[ "$n" != "?" ] && [ "${n%.*}" -ge 1 ]'
done
nopen=$(grep -c '"event":"breaker".*"to":"open"' "$T/gw.err")
mopen=$(metric "$ADDR" errgate_breaker_transitions_total 'to="open"')
check "transitions_total{to=\"open\"} ($mopen) = openings logged ($nopen)" [ "$mopen" = "$nopen" ]

# --- 2. the provider process goes away and comes back on the same port
kill -TERM "$HANDLER_PID"; wait "$HANDLER_PID" 2>/dev/null
gen_records 100 "ok:1" | sed 's/"id":"r/"id":"c/' | produce src
wait_for 20 bash -c "[ \$(grep -c '\"event\":\"breaker\".*\"to\":\"open\"' '$T/gw.err') -gt $nopen ]" &&
  ok "with the provider gone (connection refused) the breaker opened again" || not_ok "the breaker did not open again"
check "connection failures were what opened it" grep -q '"event":"decision".*"id":"src/[0-9]*/[0-9]*".*"kind":"connect"' "$T/gw.err"
sleep 3
bg h2 "$FLAKY" --port "$PORT" --log "$T/h2.log"
wait_for 10 grep -q '^listening=' "$T/h2.out" || die "the handler did not come back on port $PORT: $(cat "$T/h2.err")"
back() { all_committed brk src $RUNGS && [ "$(grep -c '^ok c' "$T/h2.log" 2>/dev/null)" -ge 100 ]; }
wait_for 40 back && ok "the provider came back: the 100 records succeeded and every offset is committed" ||
  not_ok "not recovered after 40 s: $(grep -c '^ok c' "$T/h2.log") of 100, lag $(lag brk src)"
check "the breaker closed again after the restart" [ "$(metric "$ADDR" errgate_breaker_state)" = 0 ]
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
offsets_all brk "$T/offsets.txt" src $RUNGS
check "committed offsets = end offsets on src and every rung topic" committed_ok "$T/offsets.txt" 16
lanes_read "$T/lanes.jsonl" src src.dlq
pycheck "$T/lanes.jsonl" "$T/h.log" "$T/h2.log" <<'PY'
import sys
from ladder_lanes import check, done, load
recs = load(sys.argv[1])
src = {r["v"]["id"] for r in recs if r["topic"] == "src"}
dlq = [r["v"]["id"] for r in recs if r["topic"] == "src.dlq"]
lines = [l.split() for p in sys.argv[2:4] for l in open(p) if l.startswith("ok ")]
ok = {f[1] for f in lines}
check(len(src) == 400 and src <= ok, "0 lost: all %d records succeeded (%d missing)" % (len(src), len(src - ok)))
check(not dlq, "nothing was dead-lettered (%d): the target being down is no reason to give up a record" % len(dlq))
print("# duplicates: %d" % (len(lines) - len(ok)))
done()
PY
[ "$FAILED" = 0 ]
