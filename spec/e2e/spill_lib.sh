# spill_lib.sh — helpers shared by the spill journal's e2e tests (sourced
# after lib.sh).

# The journal writer of the tests (spec/tools/spill_write_test.c; `make
# test` builds it): SPILL_WRITE_TEST DIR TOPIC N [options].
SPILL_WRITE_TEST="$ROOT/$BUILD/spill-write-test"
[ -x "$SPILL_WRITE_TEST" ] || die "no $SPILL_WRITE_TEST: run make $BUILD/spill-write-test (make test builds it)"

# verify EXPECTED TOPIC MODE [SKIP...]: the topic holds the expected records
# (JSON lines from write-test; a null partition matches any) minus the SKIP
# indexes: MODE "exact" (each once, nothing else), "atleast" (duplicates
# allowed, counted) or "acked" (duplicates and one unexpected record allowed).
verify() {
  $PY - "$BOOTSTRAP" "$@" <<'PY'
import json, os, sys, uuid
from collections import Counter
from confluent_kafka import Consumer, TopicPartition, KafkaError
bootstrap, expected, topic, mode = sys.argv[1:5]
skip = {int(x) for x in sys.argv[5:]}
def hx(b): return None if b is None else b.hex()
want = Counter()
for i, line in enumerate(open(expected)):
    if i in skip: continue
    r = json.loads(line)
    want[(r["partition"], r["timestamp"], r["key"], r["value"], tuple(tuple(h) for h in r["headers"]))] += 1
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "verify-" + uuid.uuid4().hex,
              "enable.partition.eof": True, "enable.auto.commit": False})
md = c.list_topics(topic, timeout=10)
parts = sorted(md.topics[topic].partitions)
c.assign([TopicPartition(topic, p, -2) for p in parts])
eof, got, idle = set(), Counter(), 0
while len(eof) < len(parts) and idle < 100:
    m = c.poll(0.1)
    if m is None: idle += 1; continue
    idle = 0
    if m.error():
        if m.error().code() == KafkaError._PARTITION_EOF: eof.add(m.partition())
        continue
    hs = tuple((k, hx(v)) for k, v in (m.headers() or []))
    k = (m.partition(), m.timestamp()[1], hx(m.key()), hx(m.value()), hs)
    if k not in want and (None,) + k[1:] in want: k = (None,) + k[1:]  # any partition
    got[k] += 1
c.close()
missing = sum((want - got).values())
unexpected = sum(n for k, n in got.items() if k not in want)
dups = sum(n - 1 for k, n in got.items() if k in want and n > 1)
print("# %s: %d expected, %d read, %d missing, %d unexpected, %d duplicates" %
      (topic, sum(want.values()), sum(got.values()), missing, unexpected, dups))
open(expected + ".dups", "w").write(str(dups))
sys.stdout.flush()
# os._exit: python3-confluent-kafka 1.7 can abort in interpreter finalization
# after messages with null header values (none_dealloc)
# "acked": the expected records are those whose append was acknowledged;
# one more (written whole, killed before its acknowledgement) may be there
os._exit(1 if missing or unexpected > (1 if mode == "acked" else 0) or (mode == "exact" and dups) else 0)
PY
}

