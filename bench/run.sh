#!/usr/bin/env bash
# run.sh — `make bench`: errgate side by side with kcat and a hand-written
# consumer, on one embedded broker (BENCH_BROKER=embedded, the default) or a
# real Apache Kafka cluster (BENCH_BROKER=kafka: spec/kafka/cluster.sh, one
# broker unless BENCH_KAFKA_BROKERS=3), printed as one table of medians and
# ratios. On the real cluster a Spring Kafka peer (bench/peers/spring, built
# by Maven into a cache outside the tree) runs the happy, dead-letter and
# HTTP paths on the same data after errgate's rows of each repetition
# (BENCH_SPRING=0 leaves it out; BENCH_SPRING_RECORDS, 20,000, is how many
# records its dead-letter and HTTP rows take: ~100x slower than errgate's).
#
# One broker holds three data sets of BENCH_RECORDS small records over
# BENCH_PARTITIONS partitions (checked for the broker's retention: low
# watermark 0). Each repetition runs, in a fresh consumer group each time:
# happy path (errgate, no-op Lua target | kcat -G), dead-letter path (errgate,
# Lua target failing 400 -> DLQ | kcat -C | kcat -P copy), HTTP path (errgate
# -> flaky-handler | bench/peers/http_consumer.py -> flaky-handler | wrk ->
# flaky-handler, the ceiling), HTTPS path (errgate | wrk, each over TLS to
# the same handler behind bench/tls_proxy.c, a TLS-terminating proxy with a
# certificate made here by openssl). Throughput is records per second from the first
# record consumed to the last one finished, which leaves out the group-join
# delay (bench/README.md defines every figure). CPU and peak RSS come from GNU
# time around each process. Then bench/decide_bench.c (compiled here with the
# Makefile's flags against build/obj) times policy decisions. bench/table.sh
# prints the medians. Knobs: BENCH_REPS, BENCH_RECORDS, BENCH_PEER_RECORDS,
# BENCH_PARTITIONS, BENCH_HTTP_CONCURRENCY, BENCH_HTTP_ORDERING, BENCH_WRK_SECONDS,
# BENCH_KCAT_RUNS (kcat consume runs per repetition, 3),
# # BENCH_SMOKE=1 (tiny sizes, one repetition: a CI smoke run), BENCH_KEEP=1,
# BENCH_ONLY=http (only the HTTP and HTTPS rows), BENCH_BROKER,
# BENCH_KAFKA_BROKERS, BENCH_SPRING, BENCH_SPRING_RECORDS,
# BENCH_SPRING_JVM_OPTS (the peer's JVM options; default none: the JVM's own
# ergonomics).
set -u
source "$(dirname "$0")/lib.sh"

if [ "${BENCH_SMOKE:-0}" = 1 ]; then
  : "${BENCH_REPS:=1}" "${BENCH_RECORDS:=20000}" "${BENCH_PEER_RECORDS:=2000}" "${BENCH_WRK_SECONDS:=1}"
  : "${BENCH_SPRING_RECORDS:=2000}"
fi
REPS=${BENCH_REPS:-3}
N=${BENCH_RECORDS:-200000}
PEER_N=${BENCH_PEER_RECORDS:-20000}
P=${BENCH_PARTITIONS:-16}
CONC=${BENCH_HTTP_CONCURRENCY:-16}
ORDERING=${BENCH_HTTP_ORDERING:-partition}
WRK_SECS=${BENCH_WRK_SECONDS:-3}
KRUNS=${BENCH_KCAT_RUNS:-3}
ONLY=${BENCH_ONLY:-}
[ "$PEER_N" -gt "$N" ] && PEER_N=$N
case $BENCH_BROKER in embedded|kafka) ;; *) die "BENCH_BROKER is embedded or kafka, not '$BENCH_BROKER'" ;; esac
SPRING=0; [ "$BENCH_BROKER" = kafka ] && [ "${BENCH_SPRING:-1}" = 1 ] && SPRING=1
SPRING_N=${BENCH_SPRING_RECORDS:-20000}
[ "$SPRING_N" -gt "$N" ] && SPRING_N=$N
# shellcheck disable=SC2206
SPRING_JVM=(${BENCH_SPRING_JVM_OPTS:-})

need
W=$(mktemp -d /tmp/errgate-bench.XXXXXX)
trap cleanup EXIT
export ERRGATE_LUA_DIR="$ROOT/lua"

# ---- tools compiled here: same flags as the Makefile -----------------------
# the libraries the gateway links, from the Makefile (one list)
PCP=$(sed -n 's/^PC_PKGS *:= *//p' "$ROOT/Makefile")
[ -n "$PCP" ] || die "bench: no PC_PKGS line in the Makefile"
CFLAGS_B="-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter -fno-strict-aliasing -O2 -g"
# the objects of today's src/**/*.c only (a build dir may keep objects of
# files since renamed, which would be linked twice)
LIB_OBJS=$(cd "$ROOT/src" && for c in *.c */*.c; do [ "$c" = main.c ] || echo "$ROOT/$BUILD/obj/${c%.c}.o"; done)
mkdir -p "$ROOT/$BUILD/bench"
cc $CFLAGS_B -o "$ROOT/$BUILD/bench/stamp" "$ROOT/bench/stamp.c" || die "cannot compile bench/stamp.c"
# the decision's allocations go through the gateway's allocator (Makefile, MALLOC)
MALLOC_LIBS=$(ldd "$ROOT/$BUILD/errgate" | grep -q libjemalloc && echo "-Xlinker --no-as-needed $(pkg-config --libs jemalloc)")
# shellcheck disable=SC2086
cc $CFLAGS_B $(pkg-config --cflags $PCP) -I"$ROOT/src/lib" -I"$ROOT/src/gateway" -o "$ROOT/$BUILD/bench/decide_bench" \
  "$ROOT/bench/decide_bench.c" $LIB_OBJS $(pkg-config --libs $PCP) -lm $MALLOC_LIBS || die "cannot compile bench/decide_bench.c"
STAMP="$ROOT/$BUILD/bench/stamp"
# shellcheck disable=SC2046
cc $CFLAGS_B -o "$ROOT/$BUILD/bench/tls_proxy" "$ROOT/bench/tls_proxy.c" $(pkg-config --cflags --libs libevent_openssl openssl) ||
  die "cannot compile bench/tls_proxy.c"

[ $SPRING = 1 ] && spring_build

# ---- data ------------------------------------------------------------------
topics=(--topic "happy:$P" --topic "dlqsrc:$P" --topic "http:$P")
for r in $(seq "$REPS"); do topics+=(--topic "dlqsrc.dlq.$r:$P" --topic "copy.$r:$P"); done
[ $SPRING = 1 ] && for r in $(seq "$REPS"); do topics+=(--topic "dlqsrc.spring-dlt.$r:$P"); done
# the dead-letter path again with lanes.transactional (a real cluster only:
# the embedded broker refuses it); BENCH_TXN=0 leaves the row out
TXN=0; [ "$BENCH_BROKER" = kafka ] && [ "${BENCH_TXN:-1}" = 1 ] && TXN=1
[ $TXN = 1 ] && for r in $(seq "$REPS"); do topics+=(--topic "dlqsrc.dlq.tx$r:$P"); done
start_broker "${topics[@]}"
start_handler
say "broker $BOOTSTRAP ($(broker_name)), handler $HANDLER_URL; $N records over $P partitions, $REPS repetitions; load: $(cut -d' ' -f1-3 /proc/loadavg)"
sets="happy dlqsrc http"; [ "$ONLY" = http ] && sets=http
for t in $sets; do
  case $t in dlqsrc) produce "$t" "$N" permanent:1 ;; *) produce "$t" "$N" ok:1 ;; esac
  expect_topic "$t" "$P" "$N"
done
# the TLS server in front of the same handler (its certificate is its own CA)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$W/tls.key" -out "$W/tls.crt" \
  -days 2 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 2>"$W/openssl.err" || die "openssl: $(cat "$W/openssl.err")"
"$ROOT/$BUILD/bench/tls_proxy" "$W/tls.crt" "$W/tls.key" "$(echo "$HANDLER_URL" | sed 's|.*:\([0-9]*\)/$|\1|')" \
  >"$W/tls_proxy.out" 2>"$W/tls_proxy.err" &
PIDS+=($!)
wait_for 10 grep -q '^listening=' "$W/tls_proxy.out" || die "tls_proxy did not start: $(cat "$W/tls_proxy.err")"
HTTPS_URL="https://$(sed -n 's/^listening=//p' "$W/tls_proxy.out")/"

echo 'return function(record) end' >"$W/noop.lua"
echo 'return function(record) return { status = 400, message = "bench: permanent" } end' >"$W/reject.lua"

# gateway_config FILE GROUP TOPIC TARGET_LUA REP
gateway_config() {
  cat >"$1" <<CFG
return {
  kafka = { ["bootstrap.servers"] = "$BOOTSTRAP" },
  group = "$2",
  source = { topics = { "$3" }, ordering = "$ORDERING" },
  target = $4,
  policy = "$ROOT/policies/default.lua",
  lanes = { dlq = "$3.dlq.$5", quarantine = "$3.quarantine" },
  commit_interval = "200ms",
}
CFG
}

# run_gateway ROW CONFIG GROUP TOPIC: errgate until the group's lag is 0, then
# SIGTERM; records ROW.rps (summary records_per_second), ROW.cpu, ROW.rss.
run_gateway() {
  local row=$1 cfg=$2 group=$3 topic=$4 tp gp i l
  "$GTIME" -f '%e %U %S %M' -o "$W/$row.time" "$EG" run -c "$cfg" 2>"$W/$row.err" &
  tp=$!
  for i in $(seq 1200); do
    l=$(lag "$group" "$topic"); [ "$l" = 0 ] && break
    kill -0 "$tp" 2>/dev/null || break
    sleep 0.25
  done
  gp=$(pgrep -P "$tp")
  [ -n "$gp" ] && kill -TERM "$gp"
  wait "$tp"
  [ "$l" = 0 ] || die "$row: lag did not reach 0 (last '$l'); log: $W/$row.err"
  local done rps
  done=$(( $(json_num "$W/$row.err" summary succeeded_first) + $(json_num "$W/$row.err" summary dlq) ))
  [ "$done" = "$N" ] || die "$row: summary counts $done finished records, expected $N"
  rps=$(json_num "$W/$row.err" summary records_per_second)
  record "$row.rps" "$rps"
  gtime_cost "$W/$row.time" "$N" "$row"
  say "$row: $rps rec/s, $(tail -1 "$W/$row.time")"
}

# run_spring ROW MODE BOOTSTRAP GROUP TOPIC COUNT CONCURRENCY [DLT|URL]: the Spring
# Kafka peer under GNU time; records ROW.rps (its own first-record to
# COUNT-th-done window), ROW.cpu and ROW.rss (the whole JVM process).
run_spring() {
  local row=$1; shift
  "$GTIME" -f '%e %U %S %M' -o "$W/$row.time" java "${SPRING_JVM[@]}" -cp "$SPRING_CP" errgate.bench.SpringPeer "$@" \
    >"$W/$row.out" 2>"$W/$row.err" || die "$row: the Spring peer failed: $(grep -v '^\s' "$W/$row.err" | tail -3)"
  sed 's/.*first_ns=\([0-9]*\) last_ns=\([0-9]*\).*/stamp first_ns=\1 nth_ns=\2/' "$W/$row.out" >"$W/$row.stamp"
  stamp_rps "$row" "$W/$row.stamp" "$5"
  gtime_cost "$W/$row.time" "$5" "$row"
  say "$row: $(grep "^$row.rps" "$W/results" | tail -1 | cut -d' ' -f2) rec/s ... $(tail -1 "$W/$row.time")"
}

# stamp_rps ROW STAMP_FILE COUNT [END_NS]: records ROW.rps from stamp's window.
stamp_rps() {
  local first nth
  first=$(sed -n 's/.*first_ns=\([0-9]*\).*/\1/p' "$2")
  nth=${4:-$(sed -n 's/.*nth_ns=\([0-9]*\).*/\1/p' "$2")}
  [ -n "$first" ] && [ "$first" != 0 ] && [ -n "$nth" ] && [ "$nth" != 0 ] || die "$1: no timestamps in $2"
  record "$1.rps" "$(awk -v n="$3" -v a="$first" -v b="$nth" 'BEGIN{printf "%.0f", n/((b-a)/1e9)}')"
}

for r in $(seq "$REPS"); do
  say "repetition $r/$REPS"
  if [ "$ONLY" != http ]; then
  # 1. happy path
  gateway_config "$W/happy.lua" "happy-eg-$r" happy "{ lua = \"$W/noop.lua\" }" "$r"
  run_gateway happy.errgate "$W/happy.lua" "happy-eg-$r" happy
  # kcat's consume figure is bimodal (the whole topic in a few fetch rounds,
  # or a stall of ~1 s): KRUNS runs per repetition, the median of them all
  for k in $(seq "$KRUNS"); do
    "$GTIME" -f '%e %U %S %M' -o "$W/happy.kcat.time" kcat -C -q -G "happy-kc-$r-$k" -X auto.offset.reset=earliest \
      -b "$BOOTSTRAP" -c "$N" -f '%p\n' happy 2>"$W/happy.kcat.err" | "$STAMP" "$N" 2>"$W/happy.kcat.stamp"
    stamp_rps happy.kcat "$W/happy.kcat.stamp" "$N"
    gtime_cost "$W/happy.kcat.time" "$N" happy.kcat
    say "happy.kcat: $(grep '^happy.kcat.rps' "$W/results" | tail -1 | cut -d' ' -f2) rec/s ... $(tail -1 "$W/happy.kcat.time")"
  done
  [ $SPRING = 1 ] && run_spring happy.spring happy "$BOOTSTRAP" "happy-sp-$r" happy "$N" 1

  # 2. dead-letter path
  gateway_config "$W/dlq.lua" "dlq-eg-$r" dlqsrc "{ lua = \"$W/reject.lua\" }" "$r"
  run_gateway dlq.errgate "$W/dlq.lua" "dlq-eg-$r" dlqsrc
  expect_written "dlqsrc.dlq.$r" "$P" "$N"
  # end of the window: the producing kcat exited, i.e. every copy was acknowledged
  "$GTIME" -f '%e %U %S %M' -o "$W/dlq.kcatc.time" kcat -C -q -G "dlq-kc-$r" -X auto.offset.reset=earliest \
    -b "$BOOTSTRAP" -c "$N" -f '%k\t%s\n' dlqsrc 2>"$W/dlq.kcatc.err" |
    "$STAMP" -p "$N" 2>"$W/dlq.kcat.stamp" |
    { "$GTIME" -f '%e %U %S %M' -o "$W/dlq.kcatp.time" kcat -P -b "$BOOTSTRAP" -t "copy.$r" -K $'\t' \
        -X acks=all -X enable.idempotence=true 2>"$W/dlq.kcatp.err"; date +%s%N >"$W/dlq.kcat.end"; }
  end=$(cat "$W/dlq.kcat.end")
  expect_written "copy.$r" "$P" "$N"
  stamp_rps dlq.kcat "$W/dlq.kcat.stamp" "$N" "$end"
  echo "$(tail -1 "$W/dlq.kcatc.time") $(tail -1 "$W/dlq.kcatp.time")" |
    awk '{print $1, $2+$6, $3+$7, $4+$8}' >"$W/dlq.kcat.time"   # both kcats: CPU and RSS summed
  gtime_cost "$W/dlq.kcat.time" "$N" dlq.kcat
  say "dlq.kcat: $(grep '^dlq.kcat.rps' "$W/results" | tail -1 | cut -d' ' -f2) rec/s ... $(cat "$W/dlq.kcat.time")"
  if [ $TXN = 1 ]; then
    # the same records, the same config plus lanes.transactional: each commit
    # (commit_interval 200 ms) one transaction of its lane records and offsets
    gateway_config "$W/dlqtx.lua" "dlqtx-eg-$r" dlqsrc "{ lua = \"$W/reject.lua\" }" "tx$r"
    sed -i "s/^  lanes = { \(.*\) },$/  lanes = { \1, transactional = true, instance = \"bench$r\" },/" "$W/dlqtx.lua"
    grep -q 'transactional = true' "$W/dlqtx.lua" || die "dlqtx: no lanes.transactional in $W/dlqtx.lua"
    run_gateway dlqtx.errgate "$W/dlqtx.lua" "dlqtx-eg-$r" dlqsrc
    # a transactional lane's high watermarks count the commit markers too:
    # its records are counted as a read_committed reader sees them
    got=$(kcat -C -b "$BOOTSTRAP" -t "dlqsrc.dlq.tx$r" -e -q -X isolation.level=read_committed -f 'x\n' | wc -l)
    [ "$got" = "$N" ] || die "dlqtx: dlqsrc.dlq.tx$r holds $got committed records, expected $N"
    record dlqtx.commit_ms "$(json_num "$W/dlqtx.errgate.err" summary txn_commit_ms_mean)"
    record dlqtx.commit_max_ms "$(json_num "$W/dlqtx.errgate.err" summary txn_commit_ms_max)"
    record dlqtx.commits "$(json_num "$W/dlqtx.errgate.err" summary txn_commits)"
    say "dlqtx: $(json_num "$W/dlqtx.errgate.err" summary txn_commits) transactions, commit mean $(json_num "$W/dlqtx.errgate.err" summary txn_commit_ms_mean) ms, max $(json_num "$W/dlqtx.errgate.err" summary txn_commit_ms_max) ms"
  fi
  if [ $SPRING = 1 ]; then
    run_spring dlq.spring dlq "$BOOTSTRAP" "dlq-sp-$r" dlqsrc "$SPRING_N" "$CONC" "dlqsrc.spring-dlt.$r"
    expect_at_least "dlqsrc.spring-dlt.$r" "$P" "$SPRING_N"
  fi

  fi

  # 3. HTTP path
  gateway_config "$W/http.lua" "http-eg-$r" http \
    "{ http = { url = \"$HANDLER_URL\", timeout = \"5s\", concurrency = $CONC } }" "$r"
  run_gateway http.errgate "$W/http.lua" "http-eg-$r" http
  "$GTIME" -f '%e %U %S %M' -o "$W/http.peer.time" "$PY" "$ROOT/bench/peers/http_consumer.py" \
    "$BOOTSTRAP" "http-py-$r" http "$HANDLER_URL" "$PEER_N" >"$W/http.peer.out" 2>"$W/http.peer.err" ||
    die "python peer failed: $(tail -3 "$W/http.peer.err")"
  sed 's/.*first_ns=\([0-9]*\) last_ns=\([0-9]*\).*/stamp first_ns=\1 nth_ns=\2/' "$W/http.peer.out" >"$W/http.peer.stamp"
  stamp_rps http.peer "$W/http.peer.stamp" "$PEER_N"
  gtime_cost "$W/http.peer.time" "$PEER_N" http.peer
  say "http.peer: $(grep '^http.peer.rps' "$W/results" | tail -1 | cut -d' ' -f2) rec/s ... $(tail -1 "$W/http.peer.time")"
  [ $SPRING = 1 ] && run_spring http.spring http "$BOOTSTRAP" "http-sp-$r" http "$SPRING_N" "$CONC" "$HANDLER_URL"
  wrk -t1 -c"$CONC" -d"${WRK_SECS}s" -s "$ROOT/bench/wrk_post.lua" "$HANDLER_URL" >"$W/wrk.out" 2>&1 ||
    die "wrk failed: $(cat "$W/wrk.out")"
  record http.ceiling.rps "$(awk '/^Requests\/sec:/{print $2}' "$W/wrk.out")"
  say "http.ceiling: $(awk '/^Requests\/sec:/{print $2}' "$W/wrk.out") req/s"

  # 4. HTTPS path: the same handler behind the TLS proxy
  gateway_config "$W/https.lua" "https-eg-$r" http \
    "{ http = { url = \"$HTTPS_URL\", timeout = \"5s\", concurrency = $CONC, tls = { ca_file = \"$W/tls.crt\" } } }" "$r"
  run_gateway https.errgate "$W/https.lua" "https-eg-$r" http
  wrk -t1 -c"$CONC" -d"${WRK_SECS}s" -s "$ROOT/bench/wrk_post.lua" "$HTTPS_URL" >"$W/wrks.out" 2>&1 ||
    die "wrk (https) failed: $(cat "$W/wrks.out")"
  record https.ceiling.rps "$(awk '/^Requests\/sec:/{print $2}' "$W/wrks.out")"
  say "https.ceiling: $(awk '/^Requests\/sec:/{print $2}' "$W/wrks.out") req/s"
done

# 5. decision cost
[ "$ONLY" = http ] || for r in $(seq "$REPS"); do
  "$ROOT/$BUILD/bench/decide_bench" "$ROOT"/policies/*.lua >"$W/decide.out" 2>"$W/decide.err" ||
    die "decide_bench failed: $(grep -v MOCK "$W/decide.err" | tail -3)"
  awk '{split($2,p,"="); n=split(p[2],q,"/"); split($3,f,"="); split($6,t,"=");
        print "decide." q[n] ":" f[2] ".ns", t[2]}' "$W/decide.out" >>"$W/results"
done

W="$W" N="$N" PEER_N="$PEER_N" P="$P" REPS="$REPS" KRUNS="$KRUNS" CONC="$CONC" ORDERING="$ORDERING" \
  SPRING_N="$SPRING_N" BROKER_NAME="$(broker_name)" SPRING_JVM_OPTS="${BENCH_SPRING_JVM_OPTS:-}" \
  MALLOC_NAME="$("$EG" --version | sed -n 's/^malloc //p')" bash "$ROOT/bench/table.sh"
