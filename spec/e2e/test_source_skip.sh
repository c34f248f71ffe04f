#!/usr/bin/env bash
# test_source_skip.sh — the consumer skips a batch the log holds, and the
# gateway does not commit over it. An LD_PRELOAD shim (skip_fetch.c)
# swallows the first delivery of src[0] offsets 100..179, as librdkafka did
# once on the embedded broker (make chaos seed 5: 160 records committed
# over, never processed). The gateway sees its offsets jump from 100 to 180,
# fetches from 100 again before believing the jump (gw_offsets.c), and takes
# the 80 records then: all 300 are handled, each once, the probe and the
# re-fetch are counted and logged, and the committed offset reaches the end.
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"

cc -shared -fPIC -O2 -o "$T/skip_fetch.so" "$ROOT/spec/e2e/skip_fetch.c" -ldl || die "cannot build the shim"
start_broker --topic src:1 --topic src.dlq:1 --topic src.quarantine:1
start_handler
gen_records 300 ok:1 | produce src
write_config "$T/gw.lua" skip partition 'admin = { listen = "127.0.0.1:0" },'
# (a sanitizer build wants its runtime first among the preloaded libraries)
bg gw env LD_PRELOAD="$T/skip_fetch.so" SKIP_TOPIC=src SKIP_PARTITION=0 SKIP_FROM=100 SKIP_TO=179 \
  SKIP_COUNT_FILE="$T/swallowed" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
  "$EG" run -c "$T/gw.lua"
GW_PID=$LASTPID
ADDR=$(admin_addr gw) || die "no admin endpoint: $(tail -3 "$T/gw.err")"
handled() { [ "$(sort -u "$T/ok.log" 2>/dev/null | wc -l)" -ge 300 ]; }
wait_for 60 handled || not_ok "handled $(sort -u "$T/ok.log" 2>/dev/null | wc -l) of 300"
check "the shim swallowed the 80 messages once ($(cat "$T/swallowed" 2>/dev/null))" [ "$(cat "$T/swallowed" 2>/dev/null)" = 80 ]
check "all 300 records handled ($(sort -u "$T/ok.log" | wc -l) distinct)" [ "$(sort -u "$T/ok.log" | wc -l)" = 300 ]
check "each once ($(wc -l <"$T/ok.log") deliveries)" [ "$(wc -l <"$T/ok.log")" = 300 ]
check "the jump was fetched again (probes $(metric "$ADDR" errgate_source_offset_probes_total))" \
  [ "$(metric "$ADDR" errgate_source_offset_probes_total)" = 1 ]
check "and found the skipped records (refetched $(metric "$ADDR" errgate_source_offset_refetched_total))" \
  [ "$(metric "$ADDR" errgate_source_offset_refetched_total)" = 1 ]
check "no gap taken ($(metric "$ADDR" errgate_source_offset_gaps_total))" \
  [ "$(metric "$ADDR" errgate_source_offset_gaps_total)" = 0 ]
check "the re-fetch is logged with the offsets" \
  grep -q '"event":"source_offset_refetched".*src\[0\]: offsets from 100 .*jumped to 180' "$T/gw.err"
if wait_drained skip src 20; then ok "committed = end (lag 0)"; else not_ok "lag $(lag skip src)"; fi
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
exit $FAILED
