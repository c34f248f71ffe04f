#!/usr/bin/env bash
# test_hostile_headers.sh — headers a producer controls cannot break identity
# or park a rung:
#   - errgate.id: a source record whose errgate.id holds CR/LF reaches the
#     handler with a well-formed Errgate-Id (its own coordinates), is counted
#     (errgate_bad_ids_total) and logged; a well-formed foreign id (a replay)
#     is kept as it is;
#   - errgate.not-before: a rung record with an absurd not-before (year 5138)
#     is released within source.not_before_max (3 s here) past its
#     timestamp, logged not_before_capped, and the record behind it in the
#     same rung partition follows.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ladder_lib.sh"
POLICY="$ROOT/examples/payments/policy.lua"
RUNGS=$(rung_topics src 1s 2s 4s)
start_broker $(ladder_topics src 1s 2s 4s)
handler_at h
ladder_config "$T/gw.lua" hh src none "$POLICY" "" \
  'admin = { listen = "127.0.0.1:0" },'
sed -i 's|max_inflight = 500 }|max_inflight = 500, not_before_max = 3000 }|' "$T/gw.lua"

kp() { kcat -P -b "$BOOTSTRAP" -K $'\t' -X acks=all "$@" 2>>"$T/kcat.err" || die "kcat: $(cat "$T/kcat.err")"; }
printf 'k1\t{"id":"crlf","mode":"ok"}\n' | kp -t src -p 0 -H $'errgate.id=evil\r\nX-Injected: 1'
printf 'k2\t{"id":"long","mode":"ok"}\n' | kp -t src -p 0 -H "errgate.id=$(head -c 400 /dev/zero | tr '\0' a)/1/2"
printf 'k3\t{"id":"replayed","mode":"ok"}\n' | kp -t src -p 0 -H 'errgate.id=orders/3/42'
printf 'k4\t{"id":"nb-far","mode":"ok"}\n' | kp -t src.retry.1s -p 1 -H 'errgate.not-before=99999999999999'
printf 'k5\t{"id":"nb-next","mode":"ok"}\n' | kp -t src.retry.1s -p 1
t0=$(date +%s.%N)
start_gateway gw "$T/gw.lua"

got() { grep -q "^ok $1 " "$T/h.log" 2>/dev/null; }
wait_for 30 got replayed || not_ok "the source records were not delivered: $(cat "$T/h.log" 2>/dev/null)"
egid() { awk -v id="$1" '$2 == id {print $3; exit}' "$T/h.log"; }
check "a CR/LF errgate.id: the handler got the record's own id ($(egid crlf))" [ "$(egid crlf)" = src/0/0 ]
check "an overlong errgate.id: the handler got the record's own id ($(egid long))" [ "$(egid long)" = src/0/1 ]
check "a well-formed foreign errgate.id (replay) is kept ($(egid replayed))" [ "$(egid replayed)" = orders/3/42 ]
check "malformed ids are logged" [ "$(grep -c '"event":"bad_id"' "$T/gw.err")" = 2 ]
ADDR=$(admin_addr gw)
check "malformed ids are counted" bash -c "curl -s http://$ADDR/metrics | grep -qx 'errgate_bad_ids_total 2'"

wait_for 20 got nb-next && ok "the rung records behind an absurd errgate.not-before were released" ||
  not_ok "nb-far / nb-next not released within 20 s: $(cat "$T/h.log")"
t1=$(date +%s.%N)
check "released within the cap (3 s past the timestamp, plus start-up): $(echo "$t1 - $t0" | bc) s" \
  [ "$(echo "$t1 - $t0 < 15" | bc)" = 1 ]
check "nb-far came before nb-next (offset order)" bash -c "grep -n '^ok nb-' '$T/h.log' | head -1 | grep -q nb-far"
check "the cap was logged" grep -q '"event":"not_before_capped"' "$T/gw.err"
wait_for 10 all_committed hh src src.retry.1s && ok "everything committed" || not_ok "not committed: $(cat "$T/all_committed.txt")"
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
