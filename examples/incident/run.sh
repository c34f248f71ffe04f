#!/usr/bin/env bash
# run.sh — the incident story on the embedded broker, in one command.
#
# The payment provider goes down (the flaky handler answers 503 for its
# first 25 s). The policy in force misclassifies 503 as permanent: the
# flood guard (dlq_guard) stops the storm from draining into the DLQ after
# a handful of dead letters and holds the rest. The SRE slows the 5s rung
# to 15s with an override set through instance A (seen by instance B at
# once, through the audit topic); the fixed policy, which has been running
# as the shadow policy, shows on the storm's failures what it would have
# done (errgate ctl shadow); the policy file is replaced with the fixed one
# and both instances hot-reload it; the held orders climb the
# ladder (waiting the overridden 15 s) and succeed once the provider is
# back; the override expires on its own (a short TTL here). Each step is
# checked: the script exits non-zero, naming the step, when one does not
# hold. Environment: PAYMENTS_RECORDS (default 40), BUILD (build). Logs
# are kept in a temporary folder named at the end.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/examples/incident"
BUILD=${BUILD:-build}
EG="$ROOT/$BUILD/errgate"
N=${PAYMENTS_RECORDS:-40}
TTL=${INCIDENT_TTL:-30s}
W=$(mktemp -d /tmp/errgate-incident.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT
fail() { echo "incident: $*" >&2; echo "incident: logs kept in $W" >&2; exit 1; }
# wait_line PATTERN FILE [SECONDS]
wait_line() { for _ in $(seq $((${3:-10} * 10))); do grep -q "$1" "$2" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
count() { kcat -C -b "$ERRGATE_BOOTSTRAP" -t "$1" -e -q -f 'x\n' 2>/dev/null | wc -l; }
admin_of() { sed -n 's/.*"event":"admin_listening".*"address":"\([^"]*\)".*/\1/p' "$1" | head -1; }
for tool in kcat python3; do command -v $tool >/dev/null || fail "$tool is required (make deps installs it)"; done
[ -x "$EG" ] && [ -x "$ROOT/$BUILD/flaky-handler" ] || fail "build first: make"

echo "==> the embedded broker: payments, its DLQ and its rungs 5s / 20s / 30s (2 partitions each)"
topics=""
for t in payments payments.dlq payments.retry.5s payments.retry.20s payments.retry.30s; do topics="$topics --topic $t:2"; done
"$EG" broker $topics >"$W/broker.out" 2>"$W/broker.err" &
PIDS+=($!)
wait_line '^control=' "$W/broker.out" || fail "broker did not start"
export ERRGATE_BOOTSTRAP=$(sed -n 's/^bootstrap.servers=//p' "$W/broker.out")

echo "==> the provider is down: it answers 503 for its first 25 s"
"$ROOT/examples/gen-records.sh" "$N" "outage-25000:1" >"$W/records.tsv"
"$ROOT/$BUILD/flaky-handler" --log "$W/ok.log" >"$W/handler.out" 2>"$W/handler.err" &
PIDS+=($!)
wait_line '^listening=' "$W/handler.out" || fail "handler did not start"
export PAYMENTS_TARGET_URL="http://$(sed -n 's/^listening=//p' "$W/handler.out")/"

echo "==> two gateway instances, A and B, in group payments, with the misclassifying policy (503 = permanent)"
cp "$HERE/policy.lua" "$W/policy.lua"
echo "incident-token-$$" >"$W/token"
export INCIDENT_POLICY="$W/policy.lua" INCIDENT_TOKEN_FILE="$W/token"
for g in A B; do
  "$EG" run -c "$HERE/config.lua" 2>"$W/gateway-$g.log" &
  PIDS+=($!)
  eval "GW_$g=$!"
done
wait_line '"event":"admin_listening"' "$W/gateway-A.log" 20 && wait_line '"event":"admin_listening"' "$W/gateway-B.log" 20 ||
  fail "the gateways did not start: $(tail -2 "$W/gateway-A.log" "$W/gateway-B.log")"
A=$(admin_of "$W/gateway-A.log")
B=$(admin_of "$W/gateway-B.log")
ctl() { local at=$1; shift; "$EG" ctl --admin "http://$at" --token-file "$W/token" "$@"; }
kcat -P -b "$ERRGATE_BOOTSTRAP" -t payments -K $'\t' -X acks=all <"$W/records.tsv" 2>"$W/kcat.err" || fail "kcat: $(cat "$W/kcat.err")"

echo "==> the storm: 503s are dead-lettered as permanent, until the flood guard trips and holds them"
wait_line '"event":"dlq_guard_tripped"' "$W/gateway-A.log" 30 || wait_line '"event":"dlq_guard_tripped"' "$W/gateway-B.log" 5 ||
  fail "the flood guard did not trip"
grep -h '"event":"dlq_guard_tripped"' "$W"/gateway-?.log | head -2 | cut -c1-200 | sed 's/^/    /'
sleep 2
N_DLQ=$(count payments.dlq)
[ "$N_DLQ" -lt $((N / 2)) ] || fail "the guard let $N_DLQ of $N orders into the DLQ"
echo "    $N_DLQ of $N orders reached the DLQ before the guard tripped; the rest are held"

echo "==> the SRE slows the 5s rung to 15s for $TTL (ctl override set through A)"
ctl "$A" override set slow-5s --rung 5s --delay 15s --ttl "$TTL" \
  --reason "provider down: give it time" --by sre-on-call | sed 's/^/    /' || fail "override set through A failed"
for _ in $(seq 50); do ctl "$B" override list 2>/dev/null | grep -q '^slow-5s ' && break; sleep 0.1; done
ctl "$B" override list | sed 's/^/    B: /'
ctl "$B" override list | grep -q '^slow-5s  rung=5s  delay 15000 ms' || fail "instance B does not see the override"

echo "==> the fix, tried on the real failures first: policy-fixed.lua has decided every failure as shadow_policy"
ctl "$A" shadow | sed 's/^/    /' || fail "ctl shadow failed"
ctl "$A" shadow --json | python3 -c '
import json, sys
t = json.load(sys.stdin)
cells = [c for c in t["table"] if c["live"] == "dlq" and c["shadow"] == "ladder" and c["examples"]]
print("    the candidate would have laddered %d failures the live policy dead-lettered (e.g. %s)"
      % (sum(c["count"] for c in cells), cells[0]["examples"][0] if cells else "-"))
sys.exit(0 if cells and t["errors"] == 0 else 1)' || fail "the shadow table does not show the fix laddering the 503s"

echo "==> the fixed policy (503 = transient) replaces the file; both instances hot-reload it"
cp "$HERE/policy-fixed.lua" "$W/policy.lua.new" && mv "$W/policy.lua.new" "$W/policy.lua"
for g in A B; do
  wait_line '"event":"reload","result":"ok".*"policy":"payments-incident@2' "$W/gateway-$g.log" 20 ||
    fail "instance $g did not reload the fixed policy: $(grep '"event":"reload"' "$W/gateway-$g.log" | tail -1)"
done
grep -h '"event":"reload","result":"ok"' "$W"/gateway-?.log | cut -c1-200 | sed 's/^/    /'

echo "==> held orders now climb the ladder: the 5s rung waits the overridden 15 s (errgate.not-before)"
for _ in $(seq 300); do [ "$(count payments.retry.5s)" -ge 1 ] && break; sleep 0.1; done
python3 - "$ERRGATE_BOOTSTRAP" <<'PY' || fail "rung records do not carry the override's delay"
import subprocess, sys, json
out = subprocess.run(["kcat", "-C", "-b", sys.argv[1], "-t", "payments.retry.5s", "-e", "-q", "-J"],
                     capture_output=True).stdout.decode("utf-8", "replace").splitlines()
ok = 0
for line in out:
    m = json.loads(line)
    h = dict(zip(m["headers"][0::2], m["headers"][1::2]))
    wait = int(h.get("errgate.not-before", "0")) - m["ts"]
    if h.get("errgate.override") == "slow-5s" and 13000 <= wait <= 17000:
        ok += 1
print(f"    {ok} of {len(out)} records on payments.retry.5s wait ~15 s, errgate.override=slow-5s")
sys.exit(0 if ok >= 1 else 1)
PY

echo "==> the provider is back; every held order succeeds; the override expires on its own"
lag() { "$EG" offsets -g payments "$@" 2>/dev/null | awk '$1=="total"{print $4}'; }
for _ in $(seq 1200); do
  [ "$(lag payments)" = 0 ] && [ "$(wc -l <"$W/ok.log" 2>/dev/null || echo 0)" -ge $((N - N_DLQ)) ] && break
  sleep 0.1
done
N_OK=$(wc -l <"$W/ok.log")
[ "$N_OK" -ge $((N - N_DLQ)) ] || fail "only $N_OK of $((N - N_DLQ)) held orders succeeded"
echo "    $N_OK orders succeeded, $(count payments.dlq) in the DLQ (from before the guard tripped)"
for g in A B; do
  wait_line '"event":"override_expired".*"name":"slow-5s"' "$W/gateway-$g.log" 60 || fail "instance $g did not log the expiry"
  grep -h '"event":"override_expired"' "$W/gateway-$g.log" | cut -c1-160 | sed "s/^/    $g: /"
done
ctl "$A" override list | grep -q 'no overrides in force' || fail "the override is still listed on A"
echo "==> the audit topic errgate.audit: every operator change, with its author and reason"
kcat -C -b "$ERRGATE_BOOTSTRAP" -t errgate.audit -e -q -f '    %k %s\n' 2>/dev/null

for g in A B; do
  pid_var="GW_$g"
  kill -TERM "${!pid_var}"; rc=0; wait "${!pid_var}" || rc=$?
  [ "$rc" = 0 ] || fail "instance $g exited $rc"
done
echo "incident: every step held (logs in $W)"
