#!/usr/bin/env bash
# test_hostile.sh — the hostile corpus (spec/hostile/): every attack file is
# run through `errgate policy check` and hot-reloaded into ONE live gateway
# under load; every Lua target attack runs as the target of a short-lived
# gateway. Files are picked up by glob (spec/hostile/policy/*.lua,
# spec/hostile/target/*.lua); each file's first comment line names its
# attack and expected outcome, printed as a diagnostic. The expectations are
# generic, never per file:
#   policy check   ends within 60 s, exit 0 (loaded) or 1 (refused), never
#                  a signal or a hang;
#   hot reload     POST /reload answers 200 (swapped in) or 422 (refused)
#                  within 60 s; the gateway is alive and /healthz answers
#                  within 1 s right after; /healthz is polled every 50 ms
#                  during the whole run (its max latency is reported and
#                  must stay under 1 s); an accepted attack is replaced by
#                  the base policy again before the next file;
#   at the end     every record has its one durable outcome (account.py),
#                  the gateway exits 0 on SIGTERM;
#   Lua target     the gateway stays alive, drains every record (a failure
#                  goes to the DLQ by the test's policy) and exits 0.
source "$(dirname "$0")/lib.sh"
HOSTILE="$ROOT/spec/hostile"
BATCH=${HOSTILE_BATCH:-300}
RELOAD_MAX_MS=${RELOAD_MAX_MS:-9000}

first_comment() { sed -n '1s/^-- *//p' "$1" | cut -c1-300; }

start_broker --topic src:4 --topic src.dlq:4 --topic src.quarantine:4 --topic tgt:1 --topic tgt.dlq:1 \
  --topic tgt.quarantine:1
start_handler
# /healthz every 50 ms until $T/probe.stop exists: max latency and misses
start_reloadable_gateway hostile hostile-token

# the load: ok and permanent records (outcomes no accepted attack changes:
# they route everything to the DLQ or fall back to hold), one batch per file
policies=("$HOSTILE"/policy/*.lua)
NP=${#policies[@]}
gen_records $(( (NP + 1) * BATCH )) "ok:80 permanent:20" | split -l "$BATCH" - "$T/batch."
batches=("$T"/batch.*)

reload() { # prints the HTTP code of POST /reload (waits for the build)
  curl -s -m 60 -o "$T/reload.json" -w '%{http_code}' -X POST -H "Authorization: Bearer hostile-token" \
    "http://$ADDR/reload" 2>/dev/null
}
install() { cp "$1" "$T/next.lua" && mv "$T/next.lua" "$T/policy.lua"; }
below() { [ -n "$1" ] && [ "$1" -lt "$2" ]; } # below N LIMIT: N is set and under LIMIT

i=0
for f in "${policies[@]}"; do
  name=$(basename "$f")
  diag "$name: $(first_comment "$f")"
  produce src <"${batches[$i]}"
  i=$((i + 1))
  t0=$(date +%s%N)
  timeout 60 "$EG" policy check "$f" >"$T/check.out" 2>&1; rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  check "$name: policy check ends (exit $rc in ${ms} ms)" [ "$rc" = 0 -o "$rc" = 1 ]
  install "$f"
  n0=$(grep -c '"event":"reload"' "$T/gw.err")
  t0=$(date +%s%N)
  code=$(reload)
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  check "$name: the reload is answered, swapped in or refused (HTTP $code in ${ms} ms)" [ "$code" = 200 -o "$code" = 422 ]
  # the build runs on a worker thread: the load budget (5 s) must hold there
  # as on the loop, C calls included (the VM watchdog's signal reaches it).
  # Each build's own time (took_ms), not the POST's: the file watch may have
  # started a build of the same file just before, and the POST then waits
  # for the build after it (coalesced)
  took=$(grep '"event":"reload"' "$T/gw.err" | tail -n +$((n0 + 1)) |
    sed -n 's/.*"took_ms":\([0-9]*\).*/\1/p' | sort -n | tail -1)
  check "$name: each build kept the 5 s load budget (${took:-none} ms < ${RELOAD_MAX_MS} ms)" \
    below "$took" "$RELOAD_MAX_MS"
  check "$name: the gateway is alive and /healthz answers" \
    bash -c "kill -0 $GW_PID && curl -sf -m 1 http://$ADDR/healthz >/dev/null"
  install "$T/base.lua"
  if [ "$code" = 200 ]; then
    code=$(reload)
    check "$name: the base policy is back (HTTP $code)" [ "$code" = 200 ]
  fi
done
produce src <"${batches[$i]}"
wait_for 60 bash -c "grep -q '\"event\":\"reload\",\"result\":\"ok\".*\"policy\":\"$BASE_ID\"' '$T/gw.err' || [ $NP = 0 ]"
if wait_drained hostile src 180; then ok "every record committed through $NP hostile reloads"; else not_ok "lag $(lag hostile src)"; fi
touch "$T/probe.stop"; wait "$PROBE"
diag "healthz during the hostile reloads: $(cat "$T/probe.out")"
# probe_ok MAX_MS LIMIT_MS FAILED: the probe ran, stayed under the limit, never failed
probe_ok() { [ -n "$1" ] && [ "$1" -lt "$2" ] && [ "$3" = 0 ]; }
worst=$(awk '{print $6}' "$T/probe.out")
failed=$(awk '{print $4}' "$T/probe.out")
check "/healthz answered every probe within 1 s throughout (max ${worst} ms, ${failed} failed)" \
  probe_ok "$worst" 1000 "$failed"
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
ids=$(sed -n 's/.*"event":"reload","result":"ok".*"policy":"\([^"]*\)".*/\1/p' "$T/gw.err" | sort -u | tr '\n' ,)
account hostile 4 "$T/gw.err" --policies "${ids}${BASE_ID}"

# ---- Lua targets: one short gateway each, everything failed goes to the DLQ
printf 'k%d\tv%d\n' 1 1 2 2 3 3 4 4 5 5 | produce tgt
for f in "$HOSTILE"/target/*.lua; do
  [ -e "$f" ] || continue
  name=$(basename "$f" .lua)
  diag "$name: $(first_comment "$f")"
  cat >"$T/$name.cfg" <<CFG
return {
  group = "$name",
  source = { topics = { "tgt" }, ordering = "partition" },
  target = { lua = "$f" },
  policy = "$FIXTURES/dlq_everything.lua",
  commit_interval = 200,
  admin = { listen = "127.0.0.1:0" },
}
CFG
  bg "$name" "$EG" run -c "$T/$name.cfg"; pid=$LASTPID
  addr=$(admin_addr "$name")
  if wait_drained "$name" tgt 60; then ok "$name: every record drained"; else not_ok "$name: lag $(lag "$name" tgt)"; fi
  check "$name: the gateway is alive and /healthz answers" \
    bash -c "kill -0 $pid && curl -sf -m 1 http://$addr/healthz >/dev/null"
  stop_gateway "$pid"
  check "$name: the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
done
exit $FAILED
