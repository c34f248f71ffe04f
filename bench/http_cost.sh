#!/usr/bin/env bash
# http_cost.sh — the HTTP target's CPU work per record, for comparing builds
# on a loaded machine where records/s says little.
#
#   bash bench/http_cost.sh                     # this tree's build/
#   bash bench/http_cost.sh /tmp/old-tree .     # several trees, side by side
#   HTTPS=1 bash bench/http_cost.sh             # through bench/tls_proxy.c
#
# One broker holds BENCH_COST_RECORDS (20,000) small records over 16
# partitions; the flaky handler answers them. For each tree (a checkout with
# build/errgate, lua/ and policies/ built by make), errgate runs the HTTP
# target (concurrency BENCH_HTTP_CONCURRENCY, 16) on:
# - N and N/4 of the records under valgrind's callgrind: instructions per
#   record = (Ir(N) - Ir(N/4)) / (3N/4), start-up and the group join cancel
#   out. User-space instructions of the whole process (librdkafka's threads
#   too), exact and unaffected by load: this machine's perf has no hardware
#   counters (perf stat -e instructions says "not supported");
# - N records under perf stat (task-clock and the syscalls the target makes):
#   CPU microseconds and syscalls per record, and the summary's records/s.
#   These move with load; take the median of several runs
#   (BENCH_COST_REPS, 3) and compare builds run in turn.
# Needs valgrind and perf besides what bench/run.sh needs.
set -u
source "$(dirname "$0")/lib.sh"
N=${BENCH_COST_RECORDS:-20000}
REPS=${BENCH_COST_REPS:-3}
CONC=${BENCH_HTTP_CONCURRENCY:-16}
P=16
[ $# -gt 0 ] || set -- "$ROOT"
command -v valgrind >/dev/null && command -v perf >/dev/null || die "needs valgrind and perf"
need
W=$(mktemp -d /tmp/errgate-cost.XXXXXX)
trap cleanup EXIT
for n in "$N" $((N / 4)); do topics+=(--topic "cost$n:$P"); done
start_broker "${topics[@]}"
start_handler
URL=$HANDLER_URL TLS=
if [ "${HTTPS:-0}" = 1 ]; then
  cc -O2 -o "$W/tls_proxy" "$ROOT/bench/tls_proxy.c" $(pkg-config --cflags --libs libevent_openssl openssl) ||
    die "cannot compile bench/tls_proxy.c"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$W/tls.key" -out "$W/tls.crt" \
    -days 2 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 2>"$W/openssl.err" || die "openssl failed"
  "$W/tls_proxy" "$W/tls.crt" "$W/tls.key" "$(echo "$HANDLER_URL" | sed 's|.*:\([0-9]*\)/$|\1|')" >"$W/tls_proxy.out" 2>&1 &
  PIDS+=($!)
  wait_for 10 grep -q '^listening=' "$W/tls_proxy.out" || die "tls_proxy did not start"
  URL="https://$(sed -n 's/^listening=//p' "$W/tls_proxy.out")/" TLS="tls = { ca_file = \"$W/tls.crt\" },"
fi
for n in "$N" $((N / 4)); do produce "cost$n" "$n" ok:1; expect_topic "cost$n" "$P" "$n"; done

run=0
# one_run RUN TREE TOPIC WRAPPER...: errgate (under WRAPPER, group gRUN)
# until the group's lag is 0; prints the summary's records/s.
one_run() {
  local run=$1 tree=$2 topic=$3; shift 3
  cat >"$W/c$run.lua" <<CFG
return {
  kafka = { ["bootstrap.servers"] = "$BOOTSTRAP" },
  group = "g$run",
  source = { topics = { "$topic" }, ordering = "partition" },
  target = { http = { url = "$URL", timeout = "5s", concurrency = $CONC, $TLS } },
  policy = "$tree/policies/default.lua",
  lanes = { dlq = "$topic.dlq", quarantine = "$topic.quarantine" },
  commit_interval = "200ms",
}
CFG
  ERRGATE_LUA_DIR="$tree/lua" "$@" "$tree/build/errgate" run -c "$W/c$run.lua" 2>"$W/e$run" &
  stop_when_drained $! "g$run" "$topic" || die "$tree: lag did not reach 0; log $W/e$run"
  json_num "$W/e$run" summary records_per_second
}

SC="syscalls:sys_enter_poll,syscalls:sys_enter_recvfrom,syscalls:sys_enter_sendto,syscalls:sys_enter_epoll_ctl,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_writev,syscalls:sys_enter_readv,syscalls:sys_enter_ioctl"
for tree in "$@"; do
  tree=$(cd "$tree" && pwd)
  [ -x "$tree/build/errgate" ] || die "$tree/build/errgate: run make there"
  for n in "$N" $((N / 4)); do
    run=$((run + 1))
    one_run "$run" "$tree" "cost$n" valgrind --tool=callgrind --callgrind-out-file="$W/cg.$n" >/dev/null
  done
  ir=$(awk -v n="$N" -v a="$(awk '/^summary:/{print $2}' "$W/cg.$N")" -v b="$(awk '/^summary:/{print $2}' "$W/cg.$((N / 4))")" \
    'BEGIN{printf "%.0f", (a-b)/(n-n/4)}')
  echo "$tree: instructions/record (callgrind) $ir"
  for r in $(seq "$REPS"); do
    run=$((run + 1))
    rps=$(one_run "$run" "$tree" "cost$N" perf stat -x, -e "task-clock,$SC" -o "$W/ps")
    awk -F, -v n="$N" -v rps="$rps" -v t="$tree" '
      $3=="task-clock"{cpu=$1*1000/n} $3 ~ /^syscalls:/{sc+=$1; sub("syscalls:sys_enter_","",$3); if ($1) d=d sprintf(" %s %.2f", $3, $1/n)}
      END{printf "%s: cpu_us/record %.1f  syscalls/record %.2f (%s )  records/s %s\n", t, cpu, sc/n, d, rps}' "$W/ps"
  done
done
