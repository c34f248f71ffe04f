# ladder_lib.sh — helpers shared by the retry-ladder, circuit-breaker and
# retry-budget end-to-end tests (test_ladder*.sh, test_breaker*.sh,
# test_budget*.sh). Source it after lib.sh.
#
# The gateway config these tests use mirrors examples/payments/config.lua:
# lanes with the rung template "{topic}.retry.{rung}", an HTTP target whose
# breaker and retry budget are given per test. Lane topics with raw header
# bytes (errgate.history is msgpack) are read by ladder_lanes.py.

# ladder_topics SRC [RUNG...]: the `errgate broker` arguments for SRC, its
# DLQ and quarantine lanes and its rung topics, 4 partitions each.
# rung_topics SRC RUNG...: the rung topic names "SRC.retry.RUNG ...".
ladder_topics() {
  local s=$1 t; shift
  for t in "$s" "$s.dlq" "$s.quarantine" $(rung_topics "$s" "$@"); do printf -- '--topic %s:4 ' "$t"; done
}
rung_topics() { local s=$1 r; shift; for r in "$@"; do printf '%s.retry.%s ' "$s" "$r"; done; }

# ladder_config FILE GROUP TOPIC ORDERING POLICY [TARGET_EXTRA_LUA] [TOP_EXTRA_LUA]:
# a gateway config for source TOPIC with the HTTP target at $HANDLER_URL;
# TARGET_EXTRA_LUA goes into the target table (breaker, retry_budget),
# TOP_EXTRA_LUA into the top level (admin, kafka).
ladder_config() {
  cat >"$1" <<CFG
return {
  group = "$2",
  source = { topics = { "$3" }, ordering = "$4", max_inflight = 500 },
  target = {
    http = { url = "$HANDLER_URL", timeout = 2000, concurrency = 16 },
    ${6:-}
  },
  policy = "$5",
  lanes = { dlq = "{topic}.dlq", quarantine = "{topic}.quarantine", retry = "{topic}.retry.{rung}" },
  commit_interval = 200,
  shutdown_timeout = 5000,
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
  ${7:-}
}
CFG
}

# handler_at NAME [ARGS...]: start another flaky handler (success log
# $T/NAME.log); sets HANDLER_URL, HANDLER_PID and HANDLER_ADDR.
handler_at() {
  local n=$1; shift
  bg "$n" "$FLAKY" --log "$T/$n.log" "$@"
  HANDLER_PID=$LASTPID
  wait_for 10 grep -q '^listening=' "$T/$n.out" || die "$n did not start: $(cat "$T/$n.err")"
  HANDLER_ADDR=$(sed -n '1s/^listening=//p' "$T/$n.out")
  HANDLER_URL="http://$HANDLER_ADDR/"
}

# handler_stats ADDR FIELD: one counter of the handler's GET /stats.
handler_stats() {
  curl -s -m 5 "http://$1/stats" | $PY -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$2"
}

# offsets_all GROUP FILE TOPIC...: `errgate offsets` of GROUP on TOPICs into FILE.
offsets_all() {
  local g=$1 f=$2; shift 2
  "$EG" offsets -b "$BOOTSTRAP" -g "$g" "$@" >"$f" 2>"$f.err"
}

# committed_ok FILE [PARTITIONS]: the `errgate offsets` output in FILE shows
# committed == end on every partition (a partition never written, end 0, may
# show no commit), and PARTITIONS rows when given.
committed_ok() {
  awk -v want="${2:-0}" '$1 != "total" { n++; if ($4 != 0 && $3 != $4) bad++ }
    END { exit !(n > 0 && !bad && (want == 0 || n == want)) }' "$1"
}

# all_committed GROUP TOPIC...: committed_ok for TOPICs, asked now.
all_committed() {
  local g=$1; shift
  "$EG" offsets -b "$BOOTSTRAP" -g "$g" "$@" >"$T/all_committed.txt" 2>/dev/null && committed_ok "$T/all_committed.txt"
}

# lanes_read OUT TOPIC...: every record of TOPICs with raw headers (ladder_lanes.py).
lanes_read() {
  local out=$1; shift
  $PY "$ROOT/spec/e2e/ladder_lanes.py" "$BOOTSTRAP" "$out" "$@" 2>"$T/lanes_read.err" ||
    die "reading ${*}: $(cat "$T/lanes_read.err")"
}

# start_tail NAME LOG: timestamp every line appended to LOG (a handler's
# success log) into $T/NAME.tl as "<unix seconds> <line>"; stops when
# $T/NAME.stop exists. The handler's log has no times of its own.
start_tail() {
  bg "$1" $PY -c '
import os, sys, time
log, out, stop = sys.argv[1:4]
o = open(out, "w")
f = None
buf = ""
while True:
    stopping = os.path.exists(stop)  # then one last read
    if f is None and os.path.exists(log):
        f = open(log)
    if f is not None:
        chunk = f.read()
        if chunk:
            now = time.time()
            buf += chunk
            *lines, buf = buf.split("\n")
            for line in lines:
                o.write("%.3f %s\n" % (now, line))
            o.flush()
    if stopping:
        break
    time.sleep(0.01)
' "$2" "$T/$1.tl" "$T/$1.stop"
}
stop_tail() { touch "$T/$1.stop"; for _ in $(seq 50); do kill -0 "$2" 2>/dev/null || break; sleep 0.05; done; }

# pycheck ARGS... (the script on stdin): run a Python check (it may
# `from ladder_lanes import check, done, ...`) whose TAP lines carry on this
# test's numbering; marks the test failed when the script fails.
pycheck() {
  local rc=0
  rm -f "$T/tapno"
  PYTHONPATH="$ROOT/spec/e2e" TAP_START=$TESTNO TAP_END="$T/tapno" $PY - "$@" || rc=$?
  if [ -s "$T/tapno" ]; then
    TESTNO=$(cat "$T/tapno")
    [ "$rc" = 0 ] || FAILED=1
  else
    not_ok "a Python check stopped before its end (exit $rc)"
  fi
  rm -f "$T/tapno"
}
