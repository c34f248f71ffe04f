#!/usr/bin/env bash
# test_attempts_damaged.sh — a record that comes back to the gateway (from a
# replay or a rung) carrying a damaged errgate.attempts: non-numeric,
# negative, huge, empty, repeated. The gateway counts on from the largest
# well-formed value (a malformed one counts for nothing), writes exactly one
# errgate.attempts on the lane record, and `errgate replay` sends it back
# with one well-formed value (or none), so the next pass counts on sanely.
source "$(dirname "$0")/lib.sh"

start_broker --topic src:1 --topic src.dlq:1 --topic src.quarantine:1
start_handler
$PY - "$BOOTSTRAP" <<'PY' || die "cannot produce"
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "acks": "all"})
cases = {"nonnum": [b"x"], "negative": [b"-3"], "huge": [b"99999999999999999999"], "empty": [b""],
         "null": [None], "dup-bad-last": [b"4", b"garbage"], "dup-max": [b"2", b"7", b"3"], "good": [b"3"]}
for i, (k, vals) in enumerate(cases.items()):
    p.produce("src", key=k.encode(), value=b'{"id":"r%d","mode":"permanent"}' % i,
              headers=[("errgate.attempts", v) for v in vals])
p.flush(10)
PY
write_config "$T/gw.lua" attempts none
start_gateway gw "$T/gw.lua"
wait_drained attempts src 60 || not_ok "src not drained: lag $(lag attempts src)"
stop_gateway "$GW_PID"
check "the gateway took the damaged records without trouble (exit $RC)" [ "$RC" = 0 ]
# attempts_of TOPIC: "key=v1,v2 ..." of every record's errgate.attempts values, sorted by key
attempts_of() {
  kcat -C -b "$BOOTSTRAP" -t "$1" -e -q -f '%k\t%h\n' 2>/dev/null | $PY -c '
import sys
out = []
for line in sys.stdin:
    k, _, h = line.rstrip("\n").partition("\t")
    vals = [kv.split("=", 1)[1] for kv in h.split(",") if kv.startswith("errgate.attempts=")]
    out.append("%s=%s" % (k, ",".join(vals)))
print(" ".join(sorted(out)))'
}
got=$(attempts_of src.dlq)
want="dup-bad-last=5 dup-max=8 empty=1 good=4 huge=1 negative=1 nonnum=1 null=1"
check "DLQ: one errgate.attempts each, counted on from the largest well-formed value ($got)" [ "$got" = "$want" ]

# back through errgate replay (a damaged copy is written by hand to a lane first)
create_topic manual.dlq 1
printf '{"id":"m1","mode":"permanent"}' | kcat -P -b "$BOOTSTRAP" -t manual.dlq -k manual -H errgate.attempts=oops \
  -H errgate.attempts=6 -H errgate.attempts=-1 -H errgate.id=src/0/99 2>/dev/null
"$EG" replay -b "$BOOTSTRAP" --from manual.dlq --to src >"$T/replay.out" 2>&1 || not_ok "replay failed: $(cat "$T/replay.out")"
last=$(kcat -C -b "$BOOTSTRAP" -t src -o -1 -e -q -f '%k %h\n' 2>/dev/null)
check "replay writes errgate.attempts once, the largest well-formed value ($last)" \
  bash -c '[[ "$1" == manual* ]] && [ "$(grep -o "errgate.attempts=[^,]*" <<<"$1")" = "errgate.attempts=6" ]' _ "$last"
start_gateway gw2 "$T/gw.lua"
wait_drained attempts src 60 || not_ok "src not drained after the replay: lag $(lag attempts src)"
stop_gateway "$GW_PID"
got=$(attempts_of src.dlq | tr ' ' '\n' | grep '^manual=')
check "the replayed record fails again and counts on: 7 ($got)" [ "$got" = "manual=7" ]
exit $FAILED
