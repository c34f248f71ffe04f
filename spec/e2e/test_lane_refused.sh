#!/usr/bin/env bash
# test_lane_refused.sh — a lane write Kafka refuses for good is never spilled
# and never wedges anything.
#
# Part 1, the reported repro: kafka["message.max.bytes"] = 4096 and
# lanes.spill.after = 500. One 6 KB permanent record is refused by the
# lane producer at once (MSG_SIZE_TOO_LARGE): it goes to the DLQ as a stub
# (no value, errgate.value-omitted = its size) instead of being spilled into
# a journal that could never deliver it. Then the DLQ topic is missing for
# 4 s while three small permanent records arrive: they are spilled and
# drained after the fault. All four end in the DLQ; nothing is set aside.
#
# Part 2, a permanent refusal that is not about size (the broker answers
# Produce with POLICY_VIOLATION a few times): a loud hold. The record is not
# spilled, no committed offset passes it, its partition pauses, every retry
# is logged at error level with the error, and once the lane takes it again
# it lands without a restart.
source "$(dirname "$0")/lib.sh"

start_broker --topic src:4 --topic src.dlq:4 --topic src.quarantine:4
start_handler
SPILL="$T/spill"
write_config "$T/gw.lua" lr none "kafka = { [\"session.timeout.ms\"] = 6000, [\"message.timeout.ms\"] = 2000, [\"topic.metadata.propagation.max.ms\"] = 1000, [\"message.max.bytes\"] = 4096 },
  lanes = { spill = { dir = \"$SPILL\", after = 500 } },
  admin = { listen = \"127.0.0.1:0\" },"
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw)

# ---- part 1: a record too large for the lane, then a DLQ fault ---------------
PAD=$(head -c 6000 /dev/zero | tr '\0' 'x')
printf 'kbig\t{"id":"big1","mode":"permanent","pad":"%s"}\n' "$PAD" | produce src
wait_for 40 grep -q '"event":"lane_value_omitted"' "$T/gw.err" && ok "the 6 KB record was written as a stub" ||
  not_ok "no lane_value_omitted after 40 s"
check "the refusal was logged at error level with its error" \
  grep -q '"level":"error","event":"lane_write_refused".*"error":"MSG_SIZE_TOO_LARGE".*"next":"stub"' "$T/gw.err"
broker_ctl topic-fault src.dlq 4 UNKNOWN_TOPIC_OR_PART >/dev/null || die "topic-fault refused"
printf 'ks%d\t{"id":"s%d","mode":"permanent"}\n' 1 1 2 2 3 3 | produce src
wait_for 30 lag_is_zero lr src && ok "the source is committed" || not_ok "lag $(lag lr src)"
check "the small records were spilled during the fault" grep -q '"event":"spilled".*"lane":"src.dlq"' "$T/gw.err"
wait_for 40 bash -c "! ls '$SPILL'/spill-*.eg >/dev/null 2>&1" && ok "the journal drained after the fault" ||
  not_ok "journal left: $(ls "$SPILL")"
check "nothing was set aside as refused" bash -c "! ls '$SPILL'/*.refused >/dev/null 2>&1"
read -r BIGP BIGO < <(kcat -C -b "$BOOTSTRAP" -t src -e -q -f '%k %p %o\n' 2>/dev/null | awk '$1=="kbig"{print $2, $3}')
if [ -n "$BIGP" ] && ! grep '"event":"spilled"' "$T/gw.err" | grep -q "\"partition\":$BIGP,\"offset\":$BIGO,"; then
  ok "the big record (src[$BIGP]@$BIGO) was never spilled"
else
  not_ok "the big record (src[$BIGP]@$BIGO) was spilled"
fi
admin_get "$ADDR" /metrics >"$T/m1.txt"
check "the stub is counted" grep -q '^errgate_lane_values_omitted_total{lane="src.dlq"} 1$' "$T/m1.txt"
check "the refusal is counted" grep -q '^errgate_lane_refusals_total{lane="src.dlq",error="MSG_SIZE_TOO_LARGE"} [1-9]' "$T/m1.txt"

wait_for 20 bash -c "kcat -C -b '$BOOTSTRAP' -t src.dlq -e -q -f '%k\n' 2>/dev/null | grep -c . | grep -qx 4" ||
  diag "DLQ count: $(kcat -C -b "$BOOTSTRAP" -t src.dlq -e -q -f '%k\n' 2>/dev/null | grep -c .)"
dump src.dlq "$T/dlq1.json"
$PY - "$T/dlq1.json" <<'PY' && ok "all four records are in the DLQ: the big one as a stub (no value, errgate.value-omitted, coordinates), the small ones whole" || not_ok "the DLQ does not hold the four records as expected"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
def hdr(r, name):
    h = r.get("headers") or []
    vals = [h[i + 1] for i in range(0, len(h), 2) if h[i] == name]
    return vals[-1] if vals else None
by_key = {}
for r in recs:
    by_key.setdefault(r["key"], []).append(r)
print("# DLQ keys: %s" % sorted(by_key))
ok = True
big = by_key.get("kbig", [])
if len(big) < 1:
    print("# the big record is missing"); ok = False
else:
    b = big[0]
    want = len('{"id":"big1","mode":"permanent","pad":"%s"}' % ("x" * 6000))
    if b["payload"] not in (None, ""):
        print("# the stub carries a value of %d bytes" % len(b["payload"])); ok = False
    if hdr(b, "errgate.value-omitted") != str(want):
        print("# errgate.value-omitted = %r, want %d" % (hdr(b, "errgate.value-omitted"), want)); ok = False
    for name in ("errgate.headers-omitted", "original.topic", "original.partition", "original.offset", "errgate.id",
                 "errgate.reason", "error.class"):
        if hdr(b, name) is None:
            print("# the stub lacks %s" % name); ok = False
for k in ("ks1", "ks2", "ks3"):
    rs = by_key.get(k, [])
    if not rs or not any('"mode":"permanent"' in (r["payload"] or "") for r in rs):
        print("# %s missing from the DLQ or without its value" % k); ok = False
sys.exit(0 if ok else 1)
PY

# ---- part 2: a permanent refusal that a stub cannot help: a loud hold ------
# the broker's Produce errors hit every producer: stop the gateway, produce
# h1, then arm the errors, so the restarted gateway's lane write is the first
# Produce to meet them
stop_gateway "$GW_PID"
check "gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
printf 'kh1\t{"id":"h1","mode":"permanent"}\n' | produce src
broker_ctl request-errors Produce 5 POLICY_VIOLATION >/dev/null || die "request-errors refused"
start_gateway gw2 "$T/gw.lua"
wait_for 30 grep -q '"event":"lane_write_refused".*POLICY_VIOLATION' "$T/gw2.err" || diag "no refusal logged yet"
: >"$T/samples.txt"
for i in $(seq 40); do
  "$EG" offsets -b "$BOOTSTRAP" -g lr src >>"$T/samples.txt" 2>/dev/null
  grep -q '"event":"lane_recovered"' "$T/gw2.err" && break
  sleep 0.3
done
wait_for 40 grep -q '"event":"lane_recovered"' "$T/gw2.err" && ok "the held write went through once the lane took it (no restart)" ||
  not_ok "no lane_recovered after 40 s"
check "each refusal was logged at error level as a hold" \
  grep -q '"level":"error","event":"lane_write_refused".*"error":"POLICY_VIOLATION".*"next":"hold' "$T/gw2.err"
n=$(grep -c '"event":"lane_write_refused".*POLICY_VIOLATION' "$T/gw2.err")
check "... once per back-off step ($n refusals logged)" [ "$n" -ge 2 ]
check "the held partition paused" grep -q '"event":"pause".*"reasons":"[a-z,]*lane' "$T/gw2.err"
wait_drained lr src 30 || not_ok "lag $(lag lr src) after the hold"
dump src "$T/src.json"
dump src.dlq "$T/dlq2.json"
$PY - "$T/src.json" "$T/samples.txt" "$T/dlq2.json" "$T/gw2.err" <<'PY' && ok "h1 was never spilled, no committed offset passed it while held, and it is in the DLQ" || not_ok "the hold lost its guarantee"
import json, sys
src = [json.loads(l) for l in open(sys.argv[1])]
h = [r for r in src if r["key"] == "kh1"][0]
p, o = h["partition"], h["offset"]
committed = [int(f[2]) for f in (l.split() for l in open(sys.argv[2])) if f and f[0] == "src" and int(f[1]) == p]
samples = len(committed)
# sampling stops once lane_recovered is logged: only the last sample may
# follow the write (and its commit)
bad = sum(1 for c in committed[:-1] if c > o)
dlq = [json.loads(l) for l in open(sys.argv[3])]
in_dlq = any(r["key"] == "kh1" for r in dlq)
spilled = any('"event":"spilled"' in l and '"partition":%d,"offset":%d,' % (p, o) in l for l in open(sys.argv[4]))
print("# h1 at %d@%d: %d samples, %d past it; in DLQ %s; spilled %s" % (p, o, samples, bad, in_dlq, spilled))
sys.exit(0 if samples >= 3 and bad == 0 and in_dlq and not spilled else 1)
PY
stop_gateway "$GW_PID"
check "gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
