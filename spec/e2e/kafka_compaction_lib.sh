# kafka_compaction_lib.sh — what the real-cluster suites on compacted
# topics share (sourced after lib.sh, BROKER=kafka; not a test by itself):
# topics the log cleaner compacts within a second, and ways to see that it
# did.

# fast_compacted TOPIC:PARTITIONS...: every broker's cleaner backs off 200 ms
# (log.cleaner.backoff.ms, 15 s by default, a dynamic broker config), and
# each TOPIC is created compacted, cleaned as soon as it can be: segment.ms
# 100 (a segment rolls at the first append 100 ms after it began),
# min.cleanable.dirty.ratio 0.01, delete.retention.ms 100 (tombstones go at
# the next cleaning), min.compaction.lag.ms 0. Returns once each has a leader.
fast_compacted() {
  $PY - "$BOOTSTRAP" "$@" <<'PY'
import sys, time
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for b in a.list_topics(timeout=10).brokers:
    r = ConfigResource(ConfigResource.Type.BROKER, str(b), set_config={"log.cleaner.backoff.ms": "200"})
    a.alter_configs([r])[r].result()
fast = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": "100", "min.compaction.lag.ms": "0"}
topics = [NewTopic(t.split(":")[0], int(t.split(":")[1]), replication_factor=-1, config=fast) for t in sys.argv[2:]]
for f in a.create_topics(topics, request_timeout=30).values():
    f.result()
deadline = time.time() + 30
while time.time() < deadline:
    md = a.list_topics(timeout=10).topics
    if all(t.topic in md and md[t.topic].error is None and md[t.topic].partitions and
           all(p.leader >= 0 for p in md[t.topic].partitions.values()) for t in topics):
        sys.exit(0)
    time.sleep(0.2)
sys.exit("fast_compacted: no leader for every partition after 30 s")
PY
}
# keys TOPIC: "COUNT KEY" per key, tombstones included (%k of a null key is empty)
keys() { kcat -C -b "$BOOTSTRAP" -t "$1" -e -q -f '%k\n' 2>/dev/null | sort | uniq -c | awk '{print $1, $2}'; }
# count TOPIC: the records TOPIC holds now
count() { kcat -C -b "$BOOTSTRAP" -t "$1" -e -q -f 'x\n' 2>/dev/null | wc -l; }
# written TOPIC PARTITIONS: records ever written (the sum of the end offsets)
written() {
  local p n=0
  for p in $(seq 0 $(($2 - 1))); do n=$((n + $(kcat -Q -b "$BOOTSTRAP" -t "$1:$p:-1" 2>/dev/null | awk '{print $NF}'))); done
  echo $n
}
# kept FILE PATTERN: the records a keys file counts for keys matching PATTERN
kept() { awk -v p="$2" '$2 ~ p { n += $1 } END { print n + 0 }' "$1"; }
# every SECONDS CMD...: run CMD once a second until it succeeds or SECONDS
# of wall time pass (CMD writes a record that rolls the active segment: the
# cleaner never touches it)
every() { local end=$((SECONDS + $1)); shift; until "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 1; done; }

