# lib.sh — shared helpers for errgate's end-to-end tests (bash).
#
# Every test script sources this file, starts real processes (errgate broker,
# errgate run, flaky-handler), and reports TAP lines through `ok`/`not_ok`.
# Everything started with `bg` is killed on exit. Each test gets its own
# scratch directory $T (removed on success, kept on failure for inspection).

set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-build}
EG_BIN="$ROOT/$BUILD/errgate"
EG=$EG_BIN # under VALGRIND=1, a wrapper that runs it under memcheck (below)
FLAKY="$ROOT/$BUILD/flaky-handler"
# the policies tests load (each file says what it does and which test uses it)
FIXTURES="$ROOT/spec/fixtures/policies"
T=$(mktemp -d "/tmp/errgate-e2e.XXXXXX")
TESTNO=0
FAILED=0
PIDS=()

cleanup() {
  local p i
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  # a process under memcheck checks its heap for leaks as it exits: wait longer
  for i in $(seq "$([ "${VALGRIND:-0}" = 1 ] && echo 600 || echo 30)"); do
    local alive=0
    for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break; sleep 0.1
  done
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  [ -z "$KAFKA_DIR" ] || "$ROOT/spec/kafka/cluster.sh" down --dir "$KAFKA_DIR" >/dev/null 2>>"$T/kafka.err"
  # a sanitizer report in any process's stderr fails the test (make test SAN=1)
  if grep -lE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T"/*.err >/dev/null 2>&1; then
    not_ok "sanitizer reports in: $(grep -lE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T"/*.err | xargs -n1 basename | tr '\n' ' ')"
  fi
  [ "${VALGRIND:-0}" = 1 ] && memcheck_logs_ok
  if [ "$FAILED" = 0 ]; then rm -rf "$T"; else echo "# scratch kept in $T"; fi
}
trap cleanup EXIT

ok()     { TESTNO=$((TESTNO+1)); echo "ok $TESTNO - $*"; }
not_ok() { TESTNO=$((TESTNO+1)); FAILED=1; echo "not ok $TESTNO - $*"; }
# exits_with RC WANT PATTERN TEXT: RC is WANT and TEXT has a line matching PATTERN.
exits_with() { [ "$1" = "$2" ] && grep -q -- "$3" <<<"$4"; }
# VG: valgrind memcheck with a full leak check; vg_ok RC WANT LOG: the exit
# code is WANT, memcheck found no error and no definite/indirect leak, and it
# saw the heap: build/errgate allocates through jemalloc (Makefile, MALLOC),
# and a memcheck that did not replace jemalloc's malloc would count a few
# allocations of libc's own and find no leak whatever errgate did.
VG=(valgrind --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --error-exitcode=99
    '--soname-synonyms=somalloc=*jemalloc*')
vg_heap_seen() { local n; n=$(sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' "$1" | tr -d , | tail -1); [ "${n:-0}" -ge 100 ]; }
vg_clean() { grep -q 'ERROR SUMMARY: 0 errors' "$1" && ! grep -qE 'definitely lost: [1-9]|indirectly lost: [1-9]' "$1" && vg_heap_seen "$1"; }
vg_ok() { [ "$1" = "$2" ] && vg_clean "$3"; }

# VALGRIND=1 (make test VALGRIND=1, spec/run.sh; the default `make test`
# runs the suites listed in spec/run.sh this way once more): every errgate
# process the suite starts through $EG runs under memcheck (VG), each with
# its log in $T/memcheck/PID.log, except the embedded broker and `errgate
# offsets`, the suite's own tools (the broker is the test's Kafka; offsets
# is the lag probe, called every 0.1 s). At the exit (cleanup) every log is
# read: a process that found a memory error or a definite/indirect leak (or
# did not let memcheck see its heap) fails the suite; one killed before its
# summary (kill -9) is only counted. Not with SAN=1 (valgrind cannot run an
# ASan binary).
VALGRIND=${VALGRIND:-0}
if [ "$VALGRIND" = 1 ] && [ "${SAN:-}" = 1 ]; then echo "# VALGRIND=1 ignored under SAN=1"; VALGRIND=0; fi
if [ "$VALGRIND" = 1 ]; then
  command -v valgrind >/dev/null || { echo "not ok 1 - VALGRIND=1 but valgrind is not installed"; exit 1; }
  mkdir -p "$T/memcheck"
  {
    echo '#!/bin/sh'
    echo '# errgate under memcheck (spec/e2e/lib.sh, VALGRIND=1)'
    printf 'case "${1:-}" in broker | offsets) exec %q "$@" ;; esac\n' "$EG_BIN"
    printf 'exec'; printf ' %q' "${VG[@]}" "--log-file=$T/memcheck/%p.log" "$EG_BIN"; printf ' "$@"\n'
  } >"$T/memcheck/errgate"
  chmod +x "$T/memcheck/errgate"
  EG="$T/memcheck/errgate"
fi

# memcheck_logs_ok: reports the memcheck logs of the suite's processes (see
# VALGRIND above): one failure per process that is not clean, then one line
# with the counts.
memcheck_logs_ok() {
  local f clean=0 killed=0 bad=0
  for f in "$T"/memcheck/*.log; do
    [ -e "$f" ] || continue
    if ! grep -q 'ERROR SUMMARY' "$f"; then killed=$((killed + 1))
    elif vg_clean "$f"; then clean=$((clean + 1))
    else
      bad=$((bad + 1))
      not_ok "memcheck: $(sed -n 's/^==[0-9]*== Command: //p' "$f" | head -1 | cut -c1-200): $(grep -E 'ERROR SUMMARY|definitely lost|indirectly lost' "$f" | sed 's/^==[0-9]*== *//' | tr '\n' ' ') ($f)"
    fi
  done
  if [ $((clean + killed + bad)) = 0 ]; then diag "memcheck: no errgate process ran under valgrind"
  elif [ "$bad" = 0 ] && [ "$clean" -gt 0 ]; then ok "memcheck: $clean errgate processes without memory errors or leaks ($killed killed before their summary)"
  elif [ "$bad" = 0 ]; then not_ok "memcheck: none of the $killed errgate processes under valgrind reached its summary"
  fi
}
# check DESC CMD...: run CMD, report ok/not ok under DESC.
check()  { local d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d"; fi; }
diag()   { echo "# $*"; }
die()    { not_ok "$*"; exit 1; }

# bg NAME CMD...: run CMD in the background, stdout/stderr to $T/NAME.{out,err}.
bg() { local n=$1; shift; "$@" >"$T/$n.out" 2>"$T/$n.err" & PIDS+=($!); LASTPID=$!; }

# wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds or time runs out.
wait_for() {
  local limit=$(( $1 * 10 )) i=0; shift
  while ! "$@" 2>/dev/null; do
    i=$((i+1)); [ $i -ge $limit ] && return 1; sleep 0.1
  done
}

# The broker the suite runs on: BROKER=embedded (`errgate broker`, the
# default) or BROKER=kafka (a real Apache Kafka cluster of its own, started
# by spec/kafka/cluster.sh in $T/kafka and removed at the exit). spec/run.sh
# runs a suite that has the line "# spec/run.sh: kafka" on both.
BROKER=${BROKER:-embedded}
case $BROKER in embedded | kafka) ;; *) echo "BROKER must be embedded or kafka, not '$BROKER'" >&2; exit 2 ;; esac
KAFKA_DIR=""

# start_broker [--brokers N] [--topic NAME:PARTITIONS]...: start the suite's
# broker (BROKER); sets BOOTSTRAP, and CONTROL on the embedded broker (its
# fault-injection port; empty on a real cluster, where broker_ctl fails).
start_broker() {
  [ "$BROKER" = kafka ] && { start_kafka "$@"; return; }
  bg broker "$EG" broker "$@"
  BROKER_PID=$LASTPID
  wait_for 10 grep -q '^control=' "$T/broker.out" || die "broker did not start: $(cat "$T/broker.err")"
  BOOTSTRAP=$(sed -n 's/^bootstrap.servers=//p' "$T/broker.out" | head -1)
  CONTROL=$(sed -n 's/^control=//p' "$T/broker.out" | head -1)
  export ERRGATE_BOOTSTRAP=$BOOTSTRAP
}

# start_kafka [--brokers N] [--topic NAME:PARTITIONS]...: a real cluster of
# N brokers (1 by default) with the topics created (spec/e2e/topics.py).
start_kafka() {
  local n=1 topics=()
  while [ $# -gt 0 ]; do
    case $1 in
      --brokers) n=$2; shift 2 ;;
      --topic) topics+=("$2"); shift 2 ;;
      *) die "start_broker: $1 has no meaning on a real cluster" ;;
    esac
  done
  KAFKA_DIR=$T/kafka
  "$ROOT/spec/kafka/cluster.sh" up --dir "$KAFKA_DIR" --brokers "$n" >"$T/kafka.out" 2>"$T/kafka.err" ||
    die "the Kafka cluster did not start: $(tail -5 "$T/kafka.err")"
  BOOTSTRAP=$(sed -n 's/^bootstrap.servers=//p' "$T/kafka.out" | head -1)
  CONTROL=""
  export ERRGATE_BOOTSTRAP=$BOOTSTRAP
  [ ${#topics[@]} = 0 ] || $PY "$ROOT/spec/e2e/topics.py" "$BOOTSTRAP" "${topics[@]}" 2>"$T/topics.err" ||
    die "topics not created: $(cat "$T/topics.err")"
}

# create_topic NAME PARTITIONS: creates a topic on the suite's broker.
create_topic() {
  if [ "$BROKER" = kafka ]; then $PY "$ROOT/spec/e2e/topics.py" "$BOOTSTRAP" "$1:$2" >/dev/null
  else broker_ctl topic-create "$1" "$2" >/dev/null; fi
}

# lane_outage TOPIC SECONDS: produces to TOPIC, and only TOPIC, fail for
# SECONDS, then work again. Embedded broker: its topic fault (the topic is
# reported missing). Real cluster: TOPIC must have been created on one
# broker alone (start_broker --topic NAME:P@B); that broker is stopped
# (a controlled shutdown moves the leaders of every replicated partition
# away; TOPIC's partitions go offline) and started again SECONDS later.
lane_outage() {
  if [ "$BROKER" = embedded ]; then broker_ctl topic-fault "$1" "$2" UNKNOWN_TOPIC_OR_PART >/dev/null; return; fi
  local b
  b=$($PY "$ROOT/spec/e2e/kafka_admin.py" leader "$BOOTSTRAP" "$1" 0) || return 1
  "$ROOT/spec/kafka/cluster.sh" stop --dir "$KAFKA_DIR" --broker "$b" >>"$T/outage.out" 2>>"$T/outage.err" || return 1
  (sleep "$2"; "$ROOT/spec/kafka/cluster.sh" start --dir "$KAFKA_DIR" --broker "$b" >>"$T/outage.out" 2>>"$T/outage.err") &
}

# kafka_broker_pid N: the pid of the real cluster's broker N.
kafka_broker_pid() { sed -n "s/^broker\.$1\.pid=//p" "$KAFKA_DIR/cluster.env" | tail -1; }

# broker_ctl COMMAND...: send one line to the broker's control socket, print the reply.
broker_ctl() {
  [ -n "$CONTROL" ] || { echo "broker_ctl: the real cluster has no control port (BROKER=kafka)"; return 1; }
  local host=${CONTROL%:*} port=${CONTROL##*:} reply
  exec 9<>"/dev/tcp/$host/$port" || return 1
  echo "$*" >&9
  read -r reply <&9
  exec 9<&- 9>&-
  echo "$reply"
  [ "${reply%% *}" = ok ]
}

# start_handler [ARGS...]: start the flaky handler logging successes to $T/ok.log; sets HANDLER_URL.
start_handler() {
  bg handler "$FLAKY" --log "$T/ok.log" "$@"
  HANDLER_PID=$LASTPID
  wait_for 10 grep -q '^listening=' "$T/handler.out" || die "handler did not start: $(cat "$T/handler.err")"
  HANDLER_URL="http://$(sed -n 's/^listening=//p' "$T/handler.out" | head -1)/"
}

# gen_records N [MODE_SPEC]: see examples/gen-records.sh.
gen_records() { "$ROOT/examples/gen-records.sh" "$@"; }

# produce TOPIC < lines: produce "key<TAB>value" lines with kcat (acks=all).
produce() {
  kcat -P -b "$BOOTSTRAP" -t "$1" -K $'\t' -X acks=all -X linger.ms=20 2>"$T/kcat-produce.err" || die "kcat produce failed: $(cat "$T/kcat-produce.err")"
}

# dump TOPIC FILE: every record of TOPIC as kcat JSON lines (headers included).
dump() {
  # kcat -J copies binary header bytes (errgate.history is msgpack) into its
  # JSON as they are: replace invalid UTF-8 so every line parses as JSON
  kcat -C -b "$BOOTSTRAP" -t "$1" -e -J -q 2>"$T/kcat-dump.err" |
    $PY -c 'import sys; sys.stdout.write(sys.stdin.buffer.read().decode("utf-8", "replace"))' >"$2"
}

# write_config FILE GROUP ORDERING [EXTRA_LUA]: a gateway config for topic "src"
# with the HTTP target at $HANDLER_URL and the default policy.
write_config() {
  cat >"$1" <<CFG
return {
  group = "$2",
  source = { topics = { "src" }, ordering = "$3", max_inflight = 500 },
  target = { http = { url = "$HANDLER_URL", timeout = 3000, concurrency = 16 } },
  policy = "$ROOT/policies/default.lua",
  commit_interval = 200,
  shutdown_timeout = 5000,
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
  ${4:-}
}
CFG
}

# start_gateway NAME CONFIG: run `errgate run` in the background (logs in $T/NAME.err).
start_gateway() { bg "$1" "$EG" run -c "$2"; GW_PID=$LASTPID; }

# lag GROUP TOPIC: total lag of GROUP on TOPIC (committed vs end), or "?" on error.
lag() { "$EG" offsets -b "$BOOTSTRAP" -g "$1" "$2" 2>/dev/null | awk '$1=="total"{print $4; f=1} END{if(!f) print "?"}'; }

# wait_drained GROUP TOPIC SECONDS: wait until the group's lag on TOPIC is 0.
lag_is_zero() { [ "$(lag "$1" "$2")" = 0 ]; }
wait_drained() { wait_for "$3" lag_is_zero "$1" "$2"; }

# stop_gateway PID: SIGTERM and wait; sets RC to its exit code.
stop_gateway() { kill -TERM "$1" 2>/dev/null; RC=0; wait "$1" || RC=$?; }

PY=/usr/bin/python3

# account GROUP LANE_PARTITIONS LOG_GLOB [OPTIONS...]: dump src and its lanes
# and run the accounting oracle (spec/e2e/account.py, given OPTIONS too) over
# them; marks the test failed if the oracle fails.
account() {
  dump src "$T/src.json"
  dump src.dlq "$T/dlq.json"
  dump src.quarantine "$T/q.json"
  $PY "$ROOT/spec/e2e/account.py" --src "$T/src.json" --dlq "$T/dlq.json" --quarantine "$T/q.json" \
    --handler-log "$T/ok.log" --gateway-logs "$3" --group "$1" --lane-partitions "$2" "${@:4}" || FAILED=1
}

# ---- admin endpoint helpers --------------------------------------------------

# admin_addr NAME: wait for the gateway NAME's admin_listening log line and
# print its address (host:port); empty when it never came.
admin_addr() {
  wait_for 20 grep -q '"event":"admin_listening"' "$T/$1.err" || return 1
  sed -n 's/.*"event":"admin_listening".*"address":"\([^"]*\)".*/\1/p' "$T/$1.err" | head -1
}

# admin_get ADDR PATH [CURL_ARGS...]: print the body; the status code goes to $T/http_code.
admin_get() {
  local addr=$1 path=$2; shift 2
  curl -s -m 5 -o "$T/http_body" -w '%{http_code}' "$@" "http://$addr$path" >"$T/http_code" 2>/dev/null
  cat "$T/http_body" 2>/dev/null
}

# metric ADDR NAME [LABEL_MATCH]: the sum of NAME's samples (those whose
# label set contains LABEL_MATCH, e.g. 'to="open"') from the gateway's
# /metrics at ADDR; "?" when it has none.
metric() {
  admin_get "$1" /metrics | awk -v n="$2" -v m="${3:-}" '
    { name = $1; sub(/\{.*/, "", name) }
    name == n && (m == "" || index($1, m)) { s += $2; f = 1 }
    END { if (f) printf "%.15g\n", s; else print "?" }'
}
http_code() { cat "$T/http_code"; }

# json_lines_ok FILE MARKER: every line of FILE parses as a JSON object and
# none contains MARKER (prints a diagnostic and fails otherwise).
json_lines_ok() {
  $PY - "$1" "$2" <<'PY'
import json, sys
bad = 0; n = 0
for i, line in enumerate(open(sys.argv[1], encoding="utf-8", errors="replace"), 1):
    n += 1
    if sys.argv[2] in line:
        print("# line %d carries the payload marker" % i); bad += 1
    try:
        if not isinstance(json.loads(line), dict): raise ValueError("not an object")
    except Exception as e:
        print("# line %d is not JSON (%s): %s" % (i, e, line[:200].rstrip())); bad += 1
print("# %d log lines checked" % n)
sys.exit(1 if bad or n == 0 else 0)
PY
}

# start_reloadable_gateway GROUP TOKEN: a gateway on topic "src" (partition
# ordering) whose policy is $T/policy.lua, a copy of the default policy kept
# as $T/base.lua (its id in BASE_ID), reloadable through the admin endpoint
# at ADDR with TOKEN; once it has its assignment, /healthz is probed every
# 50 ms (healthz_probe.py, pid PROBE) until $T/probe.stop exists.
start_reloadable_gateway() {
  cp "$ROOT/policies/default.lua" "$T/base.lua"
  cp "$T/base.lua" "$T/policy.lua"
  BASE_ID=$("$EG" policy check "$T/base.lua" | awk '/^policy/{print $2}')
  echo "$2" >"$T/token"
  write_config "$T/gw.lua" "$1" partition "admin = { listen = \"127.0.0.1:0\", token_file = \"$T/token\" },"
  sed -i "s|policy = \".*\"|policy = \"$T/policy.lua\"|" "$T/gw.lua"
  start_gateway gw "$T/gw.lua"
  ADDR=$(admin_addr gw) || die "no admin endpoint: $(tail -3 "$T/gw.err")"
  wait_for 30 grep -q '"event":"assign"' "$T/gw.err" || die "no assignment"
  $PY "$ROOT/spec/e2e/healthz_probe.py" "$ADDR" "$T/probe.stop" >"$T/probe.out" 2>&1 &
  PROBE=$!
}
