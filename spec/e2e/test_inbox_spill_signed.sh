#!/usr/bin/env bash
# test_inbox_spill_signed.sh — an inbox's accepted loss that goes through the
# spill journal is signed like one written at once. With a control key
# (control_key_file) the DLQ commands refuse unsigned state records, so a
# state the journal carried without its errgate.sig would leave the ignored
# item open for good. Here inbox.state refuses writes for a while: the
# accepted-loss record is spilled, the drain writes it when the topic is
# back, and `dlq stats --by state` with the key counts it accepted-loss,
# refusing nothing.
source "$(dirname "$0")/lib.sh"

start_broker --topic inbox:1
$PY "$ROOT/spec/e2e/foreign_dlq.py" "$BOOTSTRAP" inbox >"$T/produce.out" || die "cannot produce: $(cat "$T/produce.out")"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/ctl.key"
SPILL="$T/spill"
mkdir -m 700 "$SPILL"
cat >"$T/gw.lua" <<CFG
return {
  group = "sps",
  source = { topics = { "inbox" }, inbox = "auto" },
  policy = "$FIXTURES/inbox_triage.lua",
  lanes = { dlq = "{topic}.sps.dlq", quarantine = "{topic}.sps.quarantine",
            spill = { dir = "$SPILL", after = 1000 } },
  control_key_file = "$T/ctl.key",
  commit_interval = 200,
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500, ["message.timeout.ms"] = 3000,
            ["topic.metadata.propagation.max.ms"] = 1000 },
}
CFG
lane_outage inbox.state 12 || die "the lane outage was refused"
start_gateway gw "$T/gw.lua"
wait_for 30 grep -q '"event":"spilled".*"lane":"inbox.state"' "$T/gw.err" ||
  not_ok "the accepted-loss record was not spilled: $(grep -c '"event":"spilled"' "$T/gw.err") spills"
wait_for 60 bash -c "! ls '$SPILL'/spill-*.eg >/dev/null 2>&1" || not_ok "the journal did not drain"
wait_drained sps inbox 30 || not_ok "lag $(lag sps inbox)"
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
sig=$(kcat -C -b "$BOOTSTRAP" -t inbox.state -e -q -f '%h\n' 2>/dev/null)
check "the drained state record carries errgate.sig ($sig)" grep -q 'errgate.sig=v1:' <<<"$sig"
stats=$("$EG" dlq stats inbox -b "$BOOTSTRAP" --by state --key-file "$T/ctl.key" 2>&1)
printf '%s\n' "$stats" | sed 's/^/# /'
check "dlq stats with the key counts the item accepted-loss" grep -Eq '^accepted-loss +1( |$)' <<<"$stats"
check "and refuses no state record" bash -c "! grep -q 'refused' <<<'$stats'"
exit $FAILED
