#!/usr/bin/env bash
# test_txn_refused.sh — lanes.transactional where it cannot hold: the
# embedded broker (librdkafka's mock cluster accepts transactions but keeps
# no transactional offsets and writes no abort markers) is refused at start
# with exit 2 and a line naming it, before any record is consumed or
# committed; and the config refuses the mode without lanes.instance (the
# transactional.id's stable name), with an instance name that is not a
# plain name, with lanes.spill (a spilled record is counted written outside
# any transaction) and with a consumer isolation.level other than
# read_committed. `errgate replay --transactional` is refused on the
# embedded broker in the same words, writing and committing nothing. The
# default (no lanes.transactional) runs as always.
# The mode itself is proved on a real cluster: e2e/test_kafka_txn_lanes.
source "$(dirname "$0")/lib.sh"
start_broker --topic src:1 --topic src.dlq:1 --topic src.quarantine:1
start_handler
gen_records 20 "ok:1 permanent:1" | produce src

# refused CONFIG_EXTRA EXPECT WHAT: `errgate run` with lanes/kafka extra
# top-level keys exits 2 and its message contains EXPECT.
refused() {
  write_config "$T/r.lua" tr none "$1"
  local rc=0 out
  out=$(timeout 60 "$EG" run -c "$T/r.lua" 2>&1) || rc=$?
  check "$3: exit 2 ($rc) naming it" exits_with 2 "$rc" "$2" "$out"
  [ "$rc" = 2 ] || diag "$out" | tail -3
}
refused 'lanes = { transactional = true, instance = "a" },' \
  "the embedded broker (errgate broker, librdkafka's mock cluster) has no real transactions" \
  "the embedded broker is refused"
refused 'lanes = { transactional = true },' "lanes.transactional needs lanes.instance" "no lanes.instance"
refused 'lanes = { transactional = true, instance = "a/b" },' 'lanes.instance: "a/b"' "an instance name with a slash"
mkdir -p "$T/spill"
refused "lanes = { transactional = true, instance = \"a\", spill = { dir = \"$T/spill\" } }," \
  "lanes.transactional and lanes.spill cannot be combined" "lanes.spill with it"
refused 'lanes = { transactional = true, instance = "a" }, kafka = { ["isolation.level"] = "read_uncommitted" },' \
  'isolation.level = "read_uncommitted"' "a read_uncommitted consumer"
"$EG" offsets -b "$BOOTSTRAP" -g tr src >"$T/off.txt" 2>&1
check "nothing was committed by the refused gateways ($(awk '$1=="src"{print $3}' "$T/off.txt"))" \
  awk '$1=="src" { n++; if ($3 != "-" && $3 != "-1" && $3 != 0) bad++ } END { exit !(n == 1 && !bad) }' "$T/off.txt"

# errgate replay --transactional: refused there too, before anything is replayed or committed
rc=0
out=$(timeout 60 "$EG" replay -b "$BOOTSTRAP" --from src --to src.quarantine --group trx --transactional 2>&1) || rc=$?
check "replay --transactional on the embedded broker: exit 2 ($rc) naming it" exits_with 2 "$rc" \
  "a transactional replay needs a Kafka cluster" "$out"
"$EG" offsets -b "$BOOTSTRAP" -g trx src >"$T/trx.txt" 2>&1
count_topic() { kcat -C -b "$BOOTSTRAP" -t "$1" -e -q -f 'x\n' 2>/dev/null | wc -l; }
check "and the refused replay wrote nothing ($(count_topic src.quarantine) records)" [ "$(count_topic src.quarantine)" = 0 ]
check "nor committed anything ($(awk '$1=="src"{print $3}' "$T/trx.txt"))" \
  awk '$1=="src" { n++; if ($3 != "-" && $3 != "-1" && $3 != 0) bad++ } END { exit !(n == 1 && !bad) }' "$T/trx.txt"

write_config "$T/ok.lua" tr none 'lanes = { transactional = false, instance = "a" },'
start_gateway gw "$T/ok.lua"
wait_drained tr src 40 && ok "lanes.transactional = false: the gateway runs as without it" || not_ok "lag $(lag tr src)"
stop_gateway "$GW_PID"
check "it exits 0 (exit $RC)" [ "$RC" = 0 ]
check "and starts no transactions" bash -c "! grep -q lanes_transactional '$T/gw.err'"
exit $FAILED
