#!/usr/bin/env bash
# test_oversized.sh — a record too large for its lane is never lost and never
# wedges its partition (no spill journal configured): the DLQ refuses the
# whole record (MSG_SIZE_TOO_LARGE), so a stub goes there instead (no value,
# errgate.value-omitted = the value's size, the record's coordinates), it is
# logged at error level, and only the stub's delivery commits the source
# offset; the records behind it and the other partition go on.
source "$(dirname "$0")/lib.sh"

start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2
start_handler
big=$(head -c 6000 /dev/zero | tr '\0' 'x')
printf 'a\t{"id":"big","mode":"permanent","pad":"%s"}\n' "$big" | kcat -P -b "$BOOTSTRAP" -t src -p 0 -K $'\t'
for i in 1 2 3; do printf 'a%d\t{"id":"p0-%d","mode":"ok"}\n' $i $i; done | kcat -P -b "$BOOTSTRAP" -t src -p 0 -K $'\t'
for i in 1 2 3; do printf 'b%d\t{"id":"p1-%d","mode":"ok"}\n' $i $i; done | kcat -P -b "$BOOTSTRAP" -t src -p 1 -K $'\t'
# the lane producer's requests are capped at 4 KB (the consumer fetches as usual)
write_config "$T/gw.lua" big partition 'kafka = { ["message.max.bytes"] = 4096, ["session.timeout.ms"] = 6000 },'
start_gateway gw "$T/gw.lua"
check "the oversized DLQ write is refused, logged at error level, and a stub is written instead" \
  wait_for 30 grep -q '"level":"error","event":"lane_write_refused".*"error":"MSG_SIZE_TOO_LARGE".*"next":"stub"' "$T/gw.err"
check "the stub is logged as lane_value_omitted" wait_for 20 grep -q '"event":"lane_value_omitted"' "$T/gw.err"
check "the records behind it in its partition succeed" wait_for 20 bash -c "[ \$(grep -c 'ok p0-' '$T/ok.log') = 3 ]"
check "the other partition flows" wait_for 20 bash -c "[ \$(grep -c 'ok p1-' '$T/ok.log') = 3 ]"
check "both partitions are committed to the end" wait_drained big src 30
dump src.dlq "$T/dlq.json"
$PY - "$T/dlq.json" <<'PY' && ok "the DLQ holds the stub: no value, errgate.value-omitted, the record's coordinates" ||
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def hdr(r, k):
    h = r.get("headers") or []
    vals = [h[i + 1] for i in range(0, len(h), 2) if h[i] == k]
    return vals[-1] if vals else None
assert len(recs) == 1, "%d DLQ records" % len(recs)
r = recs[0]
assert r["partition"] == 0 and not r.get("payload"), r
assert int(hdr(r, "errgate.value-omitted")) > 6000, hdr(r, "errgate.value-omitted")
assert hdr(r, "original.topic") == "src" and hdr(r, "original.partition") == "0" and hdr(r, "original.offset") == "0"
assert hdr(r, "errgate.id") == "src/0/0" and hdr(r, "error.class") == "permanent"
PY
  not_ok "the DLQ does not hold the expected stub: $(head -c 600 "$T/dlq.json")"
stop_gateway "$GW_PID"
check "SIGTERM still exits 0 (exit $RC)" [ "$RC" = 0 ]
