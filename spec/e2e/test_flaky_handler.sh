#!/usr/bin/env bash
# test_flaky_handler.sh — the demo/test HTTP target answers as each record says.
#
# Starts build/flaky-handler as a real process and drives it with curl: the
# status of every mode, per-id counting (transient-N, ratelimit-MS), the
# explicit-/json- error details, slow-MS concurrency and client hang-ups,
# keep-alive, GET /stats, the success log, outage-MS (the handler's clock, no
# per-id state), --fail-all-for, the id cap, bad arguments and a clean exit 0
# on SIGTERM. Needs curl. Runs in a few seconds.

source "$(dirname "$0")/lib.sh"

command -v curl >/dev/null || die "curl is required (apt-get install curl)"
[ -x "$FLAKY" ] || die "flaky-handler is not built: $FLAKY"

# start_flaky NAME ARGS...: start a handler; sets ADDR and FPID.
start_flaky() {
  local n=$1; shift
  bg "$n" "$FLAKY" "$@"
  FPID=$LASTPID
  wait_for 10 grep -q '^listening=' "$T/$n.out" || die "$n did not start: $(cat "$T/$n.err")"
  ADDR=$(sed -n '1s/^listening=//p' "$T/$n.out")
}

# post ID MODE: POST a record {"id":ID,"mode":MODE}; print the HTTP status.
post() {
  curl -s -o /dev/null -w '%{http_code}' -H "Errgate-Id: t/0/$1" -H "Errgate-Topic: t" \
    --data "{\"id\":\"$1\",\"mode\":\"$2\",\"extra\":{\"n\":[1,2.5e3,true,null]}}" "http://$ADDR/"
}

# statuses ID MODE COUNT: COUNT posts of the same record; print the statuses.
statuses() {
  local i out=""
  for ((i = 0; i < $3; i++)); do out+="$(post "$1" "$2") "; done
  echo "${out% }"
}

# is DESC GOT WANT: report whether GOT equals WANT.
is() {
  if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1"; diag "got '$2', want '$3'"; fi
}

start_flaky flaky --log "$T/ok.log"
MAIN_PID=$FPID
check "first stdout line is listening=127.0.0.1:PORT" \
  grep -qxE 'listening=127\.0\.0\.1:[0-9]+' <(head -1 "$T/flaky.out")

# ---- stateless modes: one table row per mode --------------------------------
while read -r mode want; do
  is "mode $mode answers $want" "$(statuses "m-$mode" "$mode" 2)" "$want $want"
done <<'EOF'
ok 200
permanent 400
semantic 422
duplicate 409
bug 500
unavailable 503
no-such-mode 400
transient-x 400
slow-abc 400
explicit-nocode 400
json-x 400
EOF

# ---- per-id counters --------------------------------------------------------
is "transient-2 fails twice, then succeeds" "$(statuses tA transient-2 4)" "503 503 200 200"
is "transient counters are per id" "$(statuses tB transient-2 1)" "503"
is "transient-0 never fails" "$(statuses t0 transient-0 1)" "200"

curl -s -D "$T/rl.h" -o /dev/null --data '{"id":"rl","mode":"ratelimit-1500"}' "http://$ADDR/"
check "ratelimit-1500 answers 429 the first time" grep -q '^HTTP/1.1 429' "$T/rl.h"
check "ratelimit-1500 sends Retry-After: 2" grep -qx 'Retry-After: 2.' "$T/rl.h"
is "ratelimit then succeeds" "$(statuses rl ratelimit-1500 1)" "200"
! grep -qi '^Retry-After' < <(curl -s -D - -o /dev/null --data '{"id":"tR","mode":"transient-1"}' "http://$ADDR/") \
  && ok "transient 503 carries no Retry-After" || not_ok "transient 503 carries no Retry-After"

# ---- error details in headers and body --------------------------------------
curl -s -D "$T/ex.h" -o /dev/null --data '{"mode":"explicit-permanent-bad_request","id":"ex"}' "http://$ADDR/"
check "explicit- answers 400" grep -q '^HTTP/1.1 400' "$T/ex.h"
check "explicit- sets Error-Class" grep -qx 'Error-Class: permanent.' "$T/ex.h"
check "explicit- sets Error-Code (dashes allowed)" grep -qx 'Error-Code: bad_request.' "$T/ex.h"

curl -s -D "$T/js.h" -o "$T/js.b" --data '{"id":"js","mode":"json-semantic-missing-field"}' "http://$ADDR/"
check "json- answers 418" grep -q '^HTTP/1.1 418' "$T/js.h"
check "json- is application/json" grep -qix 'Content-Type: application/json.' "$T/js.h"
is "json- body carries class and code" "$(cat "$T/js.b")" \
  '{"error":{"class":"semantic","code":"missing-field","message":"from body"}}'

# ---- bodies that are not the expected JSON ----------------------------------
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Errgate-Id: raw/1/7' --data 'not json at all' "http://$ADDR/")
is "a non-JSON body is mode ok" "$code" 200
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Errgate-Id: raw/1/8' --data '{"mode":"bug"} trailing' "http://$ADDR/")
is "JSON with trailing garbage is mode ok" "$code" 200
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Errgate-Id: raw/1/9' --data '{"id":7,"mode":"ok"}' "http://$ADDR/")
is "a non-string id falls back to Errgate-Id" "$code" 200
code=$(curl -s -o /dev/null -w '%{http_code}' --data '' "http://$ADDR/")
is "an empty body without Errgate-Id is mode ok" "$code" 200
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT --data '{"id":"put","mode":"bug"}' "http://$ADDR/any/path?x=1")
is "any method and path is a record" "$code" 500

# ---- slow-MS: concurrent, and safe when the client hangs up -----------------
start=$(date +%s%N)
slow_pids=()
for i in $(seq 1 10); do
  curl -s -o /dev/null -w '%{http_code}' --data "{\"id\":\"s$i\",\"mode\":\"slow-1000\"}" "http://$ADDR/" >"$T/slow.$i" &
  slow_pids+=($!)
done
for p in "${slow_pids[@]}"; do wait "$p"; done
ms=$(( ($(date +%s%N) - start) / 1000000 ))
all200=1
for i in $(seq 1 10); do [ "$(cat "$T/slow.$i")" = 200 ] || all200=0; done
# one after the other they would take 10 s; the margin is for ten curl
# processes starting on a loaded machine (a sanitizer build took 1.5 s for 0.3 s)
diag "10 parallel slow-1000 took ${ms} ms"
check "10 parallel slow-1000 all answer 200" [ "$all200" = 1 ]
check "10 parallel slow-1000 finish well under 10 s" [ "$ms" -lt 5000 ]
check "slow-1000 takes at least 1000 ms" [ "$ms" -ge 1000 ]

curl -s -m 0.1 -o /dev/null --data '{"id":"gone","mode":"slow-300"}' "http://$ADDR/"
sleep 0.4
is "a client hanging up on slow- does no harm" "$(post after-gone ok)" 200

# ---- keep-alive ---------------------------------------------------------------
curl -sv -o /dev/null -o /dev/null --data '{"id":"ka","mode":"ok"}' \
  "http://$ADDR/a" "http://$ADDR/b" 2>"$T/ka.err"
check "keep-alive: curl re-uses the connection" grep -qi 're-using existing connection' "$T/ka.err"
curl -sv -o /dev/null -o /dev/null --data '{"id":"ka503","mode":"unavailable"}' \
  "http://$ADDR/a" "http://$ADDR/b" 2>"$T/ka2.err"
check "keep-alive survives error answers" grep -qi 're-using existing connection' "$T/ka2.err"

# ---- stats ----------------------------------------------------------------------
stats=$(curl -s "http://$ADDR/stats")
diag "stats: $stats"
check "GET /stats reports requests, ok, failed" \
  grep -qE '"requests":[0-9]+.*"ok":[0-9]+.*"failed":[0-9]+' <<<"$stats"

# ---- SIGTERM and the success log ----------------------------------------------
kill -TERM "$MAIN_PID"; wait "$MAIN_PID"; rc=$?
is "SIGTERM exits 0" "$rc" 0
check "success is logged as 'ok <id> <errgate-id>'" grep -qx 'ok m-ok t/0/m-ok' "$T/ok.log"
is "transient-2 logged once per success" "$(grep -c '^ok tA ' "$T/ok.log")" 2
check "a non-JSON body logs Errgate-Id as the id" grep -qx 'ok raw/1/7 raw/1/7' "$T/ok.log"
check "no Errgate-Id logs '-'" grep -qx 'ok - -' "$T/ok.log"
is "slow- successes are logged" "$(grep -c '^ok s[0-9]* ' "$T/ok.log")" 10
check "failures are not logged" bash -c "! grep -qE '^ok (m-permanent|m-bug|m-unavailable|js|ex) ' '$T/ok.log'"
check "every log line has three fields" bash -c "awk 'NF != 3 || \$1 != \"ok\" { exit 1 }' '$T/ok.log'"

# ---- outage-MS: 503 until MS ms after the handler started, no per-id state ------
# (4 s: the first four requests must land within it on a loaded machine)
start_flaky outage --log "$T/outage.log"
OUT_T0=$(date +%s%N)
is "outage-4000: 503 while the outage lasts (the same id, repeatedly)" "$(statuses o1 outage-4000 3)" "503 503 503"
is "outage-4000: a fresh id fails too (the clock is the handler's)" "$(post o2 outage-4000)" 503
is "outage-0 never fails" "$(post o0 outage-0)" 200
is "outage-x and a MS over 3600000 are unknown modes (400)" "$(post ox outage-x) $(post oy outage-3600001)" "400 400"
is "other modes are not affected by an outage" "$(post oz ok)" 200
left=$(( 4100 - ($(date +%s%N) - OUT_T0) / 1000000 ))
[ "$left" -gt 0 ] && sleep "$(printf "%d.%03d" $((left / 1000)) $((left % 1000)))"
is "outage-4000: 200 after the outage, for an id that failed and one never seen" "$(post o1 outage-4000) $(post o3 outage-4000)" "200 200"
is "outage-4000: still 200 afterwards" "$(post o1 outage-4000)" 200
kill -TERM "$FPID"; wait "$FPID"
is "outage successes are logged once per 200" "$(grep -c '^ok o[13] ' "$T/outage.log")" 3
check "outage failures are not logged" bash -c "! grep -q '^ok o2 ' '$T/outage.log'"

# ---- --fail-all-for -------------------------------------------------------------
# (3 s: the first request must land within it on a loaded machine)
start_flaky down --fail-all-for 3000
is "--fail-all-for: 503 while down" "$(post d1 ok)" 503
sleep 3.1
is "--fail-all-for: 200 afterwards" "$(post d2 ok)" 200
kill -TERM "$FPID"; wait "$FPID"

# ---- the id table is bounded ----------------------------------------------------
start_flaky capped --max-ids 2
is "--max-ids 2: a third tracked id is refused with 500" \
  "$(post c1 transient-1) $(post c2 transient-1) $(post c3 transient-1) $(post c1 transient-1)" "503 503 500 200"
kill -TERM "$FPID"; wait "$FPID"
check "a full id table is logged on stderr" grep -q 'id table full' "$T/capped.err"

# ---- bad arguments --------------------------------------------------------------
for args in "--port abc" "--port 70000" "--port" "--bogus" "--fail-all-for -1" "--log ''"; do
  eval "\"\$FLAKY\" $args" >"$T/bad.out" 2>"$T/bad.err"; rc=$?
  if [ "$rc" = 2 ] && [ "$(wc -l <"$T/bad.err")" = 1 ] && [ ! -s "$T/bad.out" ]; then
    ok "bad arguments ($args): one stderr line, exit 2"
  else
    not_ok "bad arguments ($args): one stderr line, exit 2"; diag "rc=$rc: $(cat "$T/bad.err")"
  fi
done

[ "$FAILED" = 0 ]
