#!/usr/bin/env bash
# run.sh — errgate triaging a Spring Kafka dead-letter topic, on the embedded
# broker, in one command.
#
# Starts `errgate broker`, fills orders.DLT with records written the way
# Spring's DeadLetterPublishingRecoverer writes them (spring_dlt.py: a third
# each of JSON parse errors, query timeouts and NullPointerExceptions), runs
# `errgate run -c examples/inbox/config.lua` (inbox mode: no target), waits
# until every DLT record has its outcome and every offset is committed, and
# prints what happened. Exits 0 when the parse errors are in
# orders.quarantine, the timeouts are back on `orders` (their original
# partition, not before 5 s, errgate.replays = 1), the bugs are in orders.dlq
# in errgate's lane format with their original coordinates, and nothing is
# left uncommitted. Environment: INBOX_RECORDS (default 30), BUILD (build).
# Logs are kept in a temporary folder named at the end.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
EG="$ROOT/$BUILD/errgate"
PY=/usr/bin/python3
N=${INBOX_RECORDS:-30}
W=$(mktemp -d /tmp/errgate-inbox.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT
fail() { echo "inbox: $*" >&2; echo "inbox: logs kept in $W" >&2; exit 1; }
wait_line() { for _ in $(seq 100); do grep -q "$1" "$2" && return 0; sleep 0.1; done; return 1; }
[ -x "$EG" ] || fail "build first: make"
$PY -c 'import confluent_kafka' 2>/dev/null || fail "python3-confluent-kafka is required (make deps installs it)"

echo "==> starting the embedded broker (orders, orders.DLT, its replay rung, orders.dlq, orders.quarantine)"
"$EG" broker --topic orders:2 --topic orders.DLT:2 --topic orders.DLT.retry.replay:2 --topic orders.dlq:2 \
  --topic orders.quarantine:2 >"$W/broker.out" 2>"$W/broker.err" &
PIDS+=($!)
wait_line '^control=' "$W/broker.out" || fail "broker did not start"
export ERRGATE_BOOTSTRAP=$(sed -n 's/^bootstrap.servers=//p' "$W/broker.out")

echo "==> a Spring service dead-lettered $N orders (spring_dlt.py writes Spring's exact headers)"
$PY "$ROOT/examples/inbox/spring_dlt.py" "$ERRGATE_BOOTSTRAP" orders.DLT "$N" >"$W/kinds" || fail "spring_dlt.py failed"
sed 's/^/    /' "$W/kinds"
echo "==> what errgate reads in it: errgate dlq tail orders.DLT -n 3"
"$EG" dlq tail orders.DLT -n 3 | cut -c1-160 | sed 's/^/    /'

echo "==> running: errgate run -c examples/inbox/config.lua (inbox mode, no target)"
"$EG" run -c "$ROOT/examples/inbox/config.lua" 2>"$W/gateway.log" &
GW=$!
PIDS+=($GW)
lag() { "$EG" offsets -g orders-dlt-triage orders.DLT orders.DLT.retry.replay 2>/dev/null | awk '$1=="total"{print $4}'; }
count() { $PY -c 'import sys
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "count"})
print(sum(c.get_watermark_offsets(TopicPartition(sys.argv[2], p), timeout=5)[1] for p in range(2)))' "$ERRGATE_BOOTSTRAP" "$1"; }
want=$(awk '{s += $2} END {print s}' "$W/kinds")
for _ in $(seq 600); do
  [ "$(lag)" = 0 ] && [ $(( $(count orders) + $(count orders.dlq) + $(count orders.quarantine) )) -ge "$want" ] && break
  kill -0 $GW 2>/dev/null || break
  sleep 0.1
done
[ "$(lag)" = 0 ] || fail "records still undecided after 60 s (lag $(lag))"
kill -TERM $GW; rc=0; wait $GW || rc=$?
[ "$rc" = 0 ] || fail "gateway exited $rc"

echo
echo "orders.DLT triage — policy $(sed -n 's/.*"event":"start".*"policy":"\([^"]*\)".*/\1/p' "$W/gateway.log")"
$PY - "$ERRGATE_BOOTSTRAP" "$W/kinds" <<'PY' || fail "the outcomes are not as expected"
import sys
from confluent_kafka import Consumer, TopicPartition
bootstrap, kinds = sys.argv[1], dict(l.split() for l in open(sys.argv[2]))
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "inbox-check", "enable.auto.commit": False})
def read(topic):
    out = []
    for p in range(2):
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=5)
        if hi <= lo:
            continue
        c.assign([TopicPartition(topic, p, lo)])
        while len([m for m in out if m.partition() == p]) < hi - lo:
            m = c.poll(5)
            if m is None:
                sys.exit("timed out reading " + topic)
            out.append(m)
    return out
def h(m):
    return {k: v for k, v in (m.headers() or [])}
bad = []
orders, dlq, quar = read("orders"), read("orders.dlq"), read("orders.quarantine")
for m in orders:
    hh = h(m)
    orig = int.from_bytes(hh["kafka_dlt-original-partition"], "big", signed=True)
    if m.partition() != orig or hh.get("errgate.replays") != b"1":
        bad.append("replayed %s: partition %d (original %d), errgate.replays %r" % (m.key(), m.partition(), orig, hh.get("errgate.replays")))
for m in dlq:
    hh = h(m)
    if hh.get("error.code") != b"NullPointerException" or hh.get("original.topic") != b"orders":
        bad.append("dlq %s: %r" % (m.key(), {k: hh.get(k) for k in ("error.code", "original.topic")}))
for m in quar:
    if h(m).get("error.code") != b"JsonParseException":
        bad.append("quarantine %s: %r" % (m.key(), h(m).get("error.code")))
rows = [("JSON parse errors -> orders.quarantine", len(quar), int(kinds["poison"])),
        ("query timeouts    -> orders (after 5 s)", len(orders), int(kinds["slow"])),
        ("bugs              -> orders.dlq", len(dlq), int(kinds["bug"]))]
for name, got, want in rows:
    print("  %-42s %3d of %3d" % (name, got, want))
    if got != want:
        bad.append("%s: %d, want %d" % (name, got, want))
for b in bad[:10]:
    print("  PROBLEM: " + b)
sys.exit(1 if bad else 0)
PY
echo
echo "errgate dlq stats orders.dlq --by code:"
"$EG" dlq stats orders.dlq --by code | sed 's/^/    /'
echo
echo "every record accounted for; nothing uncommitted (logs: $W)"
