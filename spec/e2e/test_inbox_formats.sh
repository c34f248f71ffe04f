#!/usr/bin/env bash
# test_inbox_formats.sh — inbox mode over every foreign format: the gateway
# triaging them (replays due and republished, lane records with every header
# profile) and `dlq tail` of a foreign DLQ (its Lua state). The default
# `make test` runs it under memcheck (VALGRIND=1, see lib.sh): any memory
# error or definite/indirect leak fails.
# spec/run.sh: valgrind
source "$(dirname "$0")/lib.sh"
start_broker --topic inbox:1 --topic orders:3
$PY "$ROOT/spec/e2e/foreign_dlq.py" "$BOOTSTRAP" inbox >/dev/null
cat >"$T/gw.lua" <<CFG
return { group = "vg", source = { topics = { "inbox" }, inbox = "auto", replay_allow = { "orders", "orders-*" } },
  policy = "$FIXTURES/inbox_replay.lua",
  lanes = { profiles = { "spring", "connect", "streams", "x-dlq-metadata" } },
  commit_interval = 200, kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 } }
CFG
bg vg "$EG" run -c "$T/gw.lua"
GWPID=$LASTPID
wait_drained vg inbox 120 && ok "drained" || not_ok "lag $(lag vg inbox)"
replayed() { [ "$(kcat -C -b "$BOOTSTRAP" -t orders -e -q -f 'x\n' 2>/dev/null | wc -l)" -ge 2 ]; }
wait_for 60 replayed && ok "the two replays went out (after = 3 s)" || not_ok "replays missing"
kill -TERM $GWPID; RC=0; wait $GWPID || RC=$?
check "gateway: exit 0 after SIGTERM (rc $RC)" [ "$RC" = 0 ]
"$EG" dlq tail inbox -b "$BOOTSTRAP" -n 5 >/dev/null 2>&1; RC=$?
check "dlq tail of a foreign DLQ (rc $RC)" [ "$RC" = 0 ]
echo "1..$TESTNO"
exit $FAILED
