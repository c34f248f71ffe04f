#!/usr/bin/env bash
# test_accounting.sh — 20,000 mixed records over 8 partitions through the
# real gateway, broker and handler (separate processes): every record has
# exactly one durable outcome that matches its mode, committed offsets equal
# end offsets, lane records carry DESIGN §4 headers on the source partition.
source "$(dirname "$0")/lib.sh"
N=${ACCOUNTING_RECORDS:-20000}

start_broker --topic src:8 --topic src.dlq:8 --topic src.quarantine:8
start_handler
gen_records "$N" | produce src
write_config "$T/gw.lua" acct none
start_gateway gw "$T/gw.lua"
if wait_drained acct src 180; then ok "all $N records committed (lag 0)"; else not_ok "lag did not reach 0: $(lag acct src)"; fi
stop_gateway "$GW_PID"
check "SIGTERM: gateway exits 0 (got $RC)" [ "$RC" = 0 ]
grep '"event":"summary"' "$T/gw.err" | sed 's/^/# /'

"$EG" offsets -b "$BOOTSTRAP" -g acct src >"$T/offsets.txt"
check "committed offsets = end offsets on all 8 partitions" \
  awk '$1=="src" { n++; if ($3 != $4) bad++ } END { exit !(n == 8 && !bad) }' "$T/offsets.txt"

account acct 8 "$T/gw.err"
