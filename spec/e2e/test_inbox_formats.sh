#!/usr/bin/env bash
# test_inbox_valgrind.sh — inbox mode under valgrind memcheck: the gateway
# triaging every foreign format (replays due and republished, lane records
# with every header profile) and `dlq tail` of a foreign DLQ (its Lua state)
# end without a memory error or a definite/indirect leak.
source "$(dirname "$0")/lib.sh"
if [ "${SAN:-}" = 1 ]; then diag "skipped under SAN=1"; exit 0; fi
start_broker --topic inbox:1 --topic orders:3
$PY "$ROOT/spec/e2e/foreign_dlq.py" "$BOOTSTRAP" inbox >/dev/null
cat >"$T/gw.lua" <<CFG
return { group = "vg", source = { topics = { "inbox" }, inbox = "auto", replay_allow = { "orders", "orders-*" } },
  policy = "$FIXTURES/inbox_replay.lua",
  lanes = { profiles = { "spring", "connect", "streams", "x-dlq-metadata" } },
  commit_interval_ms = 200, kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 } }
CFG
bg vg "${VG[@]}" --log-file="$T/vg.log" "$EG" run -c "$T/gw.lua"
VGPID=$LASTPID
wait_drained vg inbox 120 && ok "drained under valgrind" || not_ok "lag $(lag vg inbox)"
replayed() { [ "$(kcat -C -b "$BOOTSTRAP" -t orders -e -q -f 'x\n' 2>/dev/null | wc -l)" -ge 2 ]; }
wait_for 60 replayed && ok "the two replays went out (after = 3 s)" || not_ok "replays missing"
kill -TERM $VGPID; RC=0; wait $VGPID || RC=$?
check "gateway under valgrind: no errors, no leaks (rc $RC)" vg_ok "$RC" 0 "$T/vg.log"
"${VG[@]}" --log-file="$T/vg2.log" "$EG" dlq tail inbox -b "$BOOTSTRAP" -n 5 >/dev/null 2>&1; RC=$?
check "dlq tail of a foreign DLQ under valgrind" vg_ok "$RC" 0 "$T/vg2.log"
echo "1..$TESTNO"
exit $FAILED
