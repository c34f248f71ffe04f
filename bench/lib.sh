# lib.sh — shared helpers for bench/run.sh (bash): prerequisites, the
# broker (embedded, or a real Apache Kafka cluster from spec/kafka/cluster.sh
# under BENCH_BROKER=kafka), the Spring Kafka peer's build, GNU time
# parsing, medians, and the result store.
#
# Every measurement appends one line "KEY VALUE" to $W/results (KEY is
# row.metric, e.g. happy.errgate.rps); the table takes the median of all the
# values under one key. Processes started here are remembered in PIDS and
# stopped (TERM, then KILL) on exit; the scratch directory $W is removed
# unless BENCH_KEEP=1.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-build}
EG="$ROOT/$BUILD/errgate"
BENCH_BROKER=${BENCH_BROKER:-embedded}
KAFKA_DIR=""
FLAKY="$ROOT/$BUILD/flaky-handler"
PY=/usr/bin/python3
GTIME=/usr/bin/time
PIDS=()

say() { echo "bench: $*" >&2; }
die() { say "$*"; exit 1; }

# need: check every tool the benchmark uses; name the missing Debian packages.
need() {
  local miss=() pkgs=()
  command -v kcat >/dev/null || { miss+=(kcat); pkgs+=(kcat); }
  command -v wrk >/dev/null || { miss+=(wrk); pkgs+=(wrk); }
  [ -x "$GTIME" ] || { miss+=("$GTIME"); pkgs+=(time); }
  [ -x "$PY" ] || { miss+=("$PY"); pkgs+=(python3); }
  [ -x "$PY" ] && ! "$PY" -c 'import confluent_kafka' 2>/dev/null && { miss+=("python module confluent_kafka"); pkgs+=(python3-confluent-kafka); }
  command -v cc >/dev/null || { miss+=(cc); pkgs+=(gcc); }
  command -v pkg-config >/dev/null || { miss+=(pkg-config); pkgs+=(pkg-config); }
  command -v openssl >/dev/null || { miss+=(openssl); pkgs+=(openssl); }
  pkg-config --exists libevent_openssl openssl 2>/dev/null || { miss+=("libevent_openssl/openssl headers"); pkgs+=(libevent-dev libssl-dev); }
  if [ "$BENCH_BROKER" = kafka ]; then
    command -v java >/dev/null || { miss+=(java); pkgs+=(openjdk-17-jdk-headless); }
    if [ "${BENCH_SPRING:-1}" = 1 ]; then
      command -v javac >/dev/null || { miss+=("javac (the Spring peer is compiled)"); pkgs+=(openjdk-17-jdk-headless); }
      command -v mvn >/dev/null || { miss+=(mvn); pkgs+=(maven); }
    fi
  fi
  [ -x "$EG" ] || miss+=("$EG (run make)")
  [ -x "$FLAKY" ] || miss+=("$FLAKY (run make)")
  if [ ${#miss[@]} -gt 0 ]; then
    say "missing: ${miss[*]}"
    [ ${#pkgs[@]} -gt 0 ] && say "install: apt-get install -y ${pkgs[*]}"
    exit 1
  fi
}

cleanup() {
  local p i alive
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for i in $(seq 30); do
    alive=0
    for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break; sleep 0.1
  done
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  [ -n "$KAFKA_DIR" ] && "$ROOT/spec/kafka/cluster.sh" down --dir "$KAFKA_DIR" 2>>"$W/kafka.err"
  if [ "${BENCH_KEEP:-0}" = 1 ]; then say "scratch kept in $W"; else rm -rf "$W"; fi
}

# wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds.
wait_for() {
  local limit=$(( $1 * 10 )) i=0; shift
  while ! "$@" 2>/dev/null; do
    i=$((i+1)); [ $i -ge $limit ] && return 1; sleep 0.1
  done
}

# start_broker [--topic NAME:PARTITIONS]...: the benchmark's broker with
# these topics; sets BOOTSTRAP. BENCH_BROKER=embedded: `errgate broker` in the
# background. BENCH_BROKER=kafka: a real cluster of BENCH_KAFKA_BROKERS (1)
# KRaft nodes under $W/kafka (spec/kafka/cluster.sh, stopped by cleanup),
# topics created through the Admin API (spec/e2e/topics.py).
start_broker() {
  if [ "$BENCH_BROKER" = kafka ]; then
    local t=()
    while [ $# -gt 0 ]; do [ "$1" = --topic ] && t+=("$2"); shift 2; done
    KAFKA_DIR=$W/kafka
    "$ROOT/spec/kafka/cluster.sh" up --dir "$KAFKA_DIR" --brokers "${BENCH_KAFKA_BROKERS:-1}" >"$W/kafka.out" 2>"$W/kafka.err" ||
      die "the Kafka cluster did not start: $(tail -5 "$W/kafka.err")"
    BOOTSTRAP=$(sed -n 's/^bootstrap.servers=//p' "$W/kafka.out" | head -1)
    "$PY" "$ROOT/spec/e2e/topics.py" "$BOOTSTRAP" "${t[@]}" 2>"$W/topics.err" || die "topics not created: $(cat "$W/topics.err")"
    return
  fi
  "$EG" broker "$@" >"$W/broker.out" 2>"$W/broker.err" &
  PIDS+=($!)
  wait_for 10 grep -q '^control=' "$W/broker.out" || die "broker did not start: $(cat "$W/broker.err")"
  BOOTSTRAP=$(sed -n 's/^bootstrap.servers=//p' "$W/broker.out" | head -1)
}

# start_handler: the flaky handler (no log: its disk writes are not the subject); sets HANDLER_URL.
start_handler() {
  "$FLAKY" --port 0 >"$W/handler.out" 2>"$W/handler.err" &
  PIDS+=($!)
  wait_for 10 grep -q '^listening=' "$W/handler.out" || die "handler did not start: $(cat "$W/handler.err")"
  HANDLER_URL="http://$(sed -n 's/^listening=//p' "$W/handler.out" | head -1)/"
}

# produce TOPIC N SPEC: N generated records (examples/gen-records.sh) into TOPIC.
produce() {
  "$ROOT/examples/gen-records.sh" "$2" "$3" |
    kcat -P -b "$BOOTSTRAP" -t "$1" -K $'\t' -X acks=all -X linger.ms=20 2>"$W/produce-$1.err" ||
    die "producing to $1 failed: $(cat "$W/produce-$1.err")"
}

# broker_name: the broker, as the table's header names it.
broker_name() {
  if [ "$BENCH_BROKER" = kafka ]; then
    local v n; v=$(sed -n 's/^version=//p' "$KAFKA_DIR/cluster.state"); n=$(sed -n 's/^brokers=//p' "$KAFKA_DIR/cluster.state")
    echo "Apache Kafka $v, $n broker(s) (spec/kafka/cluster.sh, KRaft, replication $([ "$n" -ge 3 ] && echo 3 || echo 1))"
  else
    echo "embedded (librdkafka's mock cluster)"
  fi
}

# spring_build: the Spring Kafka peer (bench/peers/spring) compiled once into
# a cache outside the tree, ${ERRGATE_BENCH_CACHE:-~/.cache/errgate/bench}/
# spring-HASH (HASH: sha256 of its pom and sources), Maven run only when that
# directory has no stamp (two runs at once wait on one lock); sets SPRING_CP.
spring_build() {
  local src="$ROOT/bench/peers/spring" sum dir
  sum=$(cd "$src" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
  dir=${ERRGATE_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/errgate/bench}/spring-$sum
  SPRING_CP="$dir/classes:$dir/lib/*"
  [ -f "$dir/complete" ] && return 0
  mkdir -p "$dir" || die "cannot create $dir"
  (
    flock -w 900 9 || die "waited 15 minutes for another build of the Spring peer ($dir/.lock)"
    [ -f "$dir/complete" ] && exit 0
    rm -rf "$dir/classes" "$dir/lib" "$dir/maven-status" "$dir/generated-sources"
    say "building the Spring Kafka peer with Maven into $dir (log: $dir/mvn.log)"
    timeout 900 mvn -B -q -f "$src/pom.xml" -Dpeer.build="$dir" compile dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$dir/lib" >"$dir/mvn.log" 2>&1 ||
      die "Maven could not build bench/peers/spring: $(grep -m3 ERROR "$dir/mvn.log")"
    [ -f "$dir/classes/errgate/bench/SpringPeer.class" ] || die "Maven finished without SpringPeer.class (see $dir/mvn.log)"
    touch "$dir/complete"
  ) 9>"$dir/.lock" || exit 1
}

# watermarks TOPIC PARTITIONS: prints "LOW HIGH" summed over the partitions.
watermarks() {
  "$PY" "$ROOT/bench/watermarks.py" "$BOOTSTRAP" "$1" "$2"
}

# expect_topic TOPIC PARTITIONS N: the broker kept every record (low 0, high N).
expect_topic() {
  local wm; wm=$(watermarks "$1" "$2")
  [ "$wm" = "0 $3" ] || die "topic $1 holds '$wm' (low high), expected '0 $3': the broker's retention dropped records"
}

# expect_written TOPIC PARTITIONS N: N records were appended to TOPIC (high
# watermarks). For lanes, whose ~600-byte records with headers may exceed the
# mock's per-partition retention: the broker acknowledged them, which is what
# is measured; what it keeps afterwards is not.
expect_written() {
  local wm; wm=$(watermarks "$1" "$2")
  [ "${wm#* }" = "$3" ] || die "topic $1 holds '$wm' (low high), expected $3 records written"
}

# expect_at_least TOPIC PARTITIONS N: at least N records were appended (a
# peer that stops after N may have written a few more meanwhile).
expect_at_least() {
  local wm; wm=$(watermarks "$1" "$2")
  [ "${wm#* }" -ge "$3" ] 2>/dev/null || die "topic $1 holds '$wm' (low high), expected at least $3 records written"
}

# lag GROUP TOPIC: the group's total lag, or "?".
lag() { "$EG" offsets -b "$BOOTSTRAP" -g "$1" "$2" 2>/dev/null | awk '$1=="total"{print $4; f=1} END{if(!f) print "?"}'; }

# stop_when_drained PID GROUP TOPIC: waits (up to 10 min) until GROUP's lag
# on TOPIC is 0, then SIGTERMs the innermost process under PID (errgate under
# its wrappers; PID itself when it has no child, as under valgrind) and
# waits for PID. Returns 1 when the lag never reached 0.
stop_when_drained() {
  local pp=$1 gp l i
  for i in $(seq 2400); do l=$(lag "$2" "$3"); [ "$l" = 0 ] && break; sleep 0.25; done
  gp=$pp
  while [ -n "$(pgrep -P "$gp")" ]; do gp=$(pgrep -P "$gp" | head -1); done
  kill -TERM "$gp"
  wait "$pp"
  [ "$l" = 0 ]
}

# record KEY VALUE: store one measurement.
record() { echo "$1 $2" >>"$W/results"; }

# gtime_cost FILE N PREFIX: from GNU time's "%e %U %S %M" in FILE, record
# PREFIX.cpu (CPU s per 100k records) and PREFIX.rss (peak RSS, MiB).
gtime_cost() {
  local line; line=$(tail -1 "$1")
  record "$3.cpu" "$(echo "$line" | awk -v n="$2" '{printf "%.3f", ($2+$3)*100000/n}')"
  record "$3.rss" "$(echo "$line" | awk '{printf "%.1f", $4/1024}')"
}

# median KEY: the median of the values stored under KEY (empty if none).
median() {
  awk -v k="$1" '$1==k{print $2}' "$W/results" | sort -g |
    awk '{a[NR]=$1} END{if(NR==0) exit; if(NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'
}

# spread KEY: "MIN..MAX" of the values stored under KEY (empty if none).
spread() {
  awk -v k="$1" '$1==k{v=$2+0; if (!n++ || v<lo) lo=v; if (n==1 || v>hi) hi=v} END{if(n) printf "%s..%s", lo, hi}' "$W/results"
}

# noisy KEY: true when the largest value under KEY is over 1.5x the smallest
# (a figure that moves this much between repetitions is judged by its CPU).
noisy() {
  awk -v k="$1" '$1==k{v=$2+0; if (!n++ || v<lo) lo=v; if (n==1 || v>hi) hi=v} END{exit !(n > 1 && lo > 0 && hi/lo > 1.5)}' "$W/results"
}

# json_num FILE EVENT FIELD: a numeric field of the last JSON log line of EVENT.
json_num() {
  grep "\"event\":\"$2\"" "$1" | tail -1 | sed -n "s/.*\"$3\":\([0-9.eE+-]*\).*/\1/p"
}
