#!/usr/bin/env bash
# test_sources.sh — several sources in one gateway (issue 30 item 4):
# `sources = { alpha, beta }` in one config, one consumer group.
#   - bad input gets one clear error each, and nothing starts: a topic in
#     two sources, a setting of the whole gateway in an entry, an unknown
#     key, no name, two sources of one name, a pattern topic, source and
#     sources both, a fence without key ordering, --source of no source;
#   - alpha (topic a: default policy, handler 1, {topic}.dlq) and beta
#     (topic b: every failure to the DLQ, handler 2, {topic}.dead) each
#     route by their own policy to their own target and lanes: alpha's
#     transient failures are retried and succeed, beta's are dead-lettered
#     to b.dead; both topics' offsets committed in the one group;
#   - /metrics merges both with a source label (each family's HELP and TYPE
#     once), errgate_source_up; /sources lists them; every log line of a
#     source names it;
#   - beta's policy file changes: beta reloads, alpha does not;
#   - an override set through `ctl --source beta` is beta's alone;
#   - the commands: policy check/test -c --source, dlq stats -c --source,
#     replay -c without --source (refused, naming the sources);
#   - SIGHUP reaches both; ^C (SIGINT to the process group) stops both
#     gracefully, each told once (exit 0);
#   - kill -9 of beta's process stops alpha too and the gateway exits 1
#     (fate shared: the orchestrator restarts the whole gateway);
#   - two gateways of the config (4 processes, one group): one is stopped,
#     the other takes over both topics' partitions and drains what is
#     produced after (on the real cluster: a rebalance of members with
#     different subscriptions).
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"

start_broker --topic a:2 --topic a.dlq:2 --topic a.quarantine:2 --topic b:2 --topic b.dead:2 \
  --topic b.quarantine:2
start_handler
H1=$HANDLER_URL
bg handler2 "$FLAKY" --log "$T/ok2.log"
wait_for 10 grep -q '^listening=' "$T/handler2.out" || die "handler 2 did not start"
H2="http://$(sed -n 's/^listening=//p' "$T/handler2.out" | head -1)/"
printf 'tok-%s\n' "$RANDOM$RANDOM" >"$T/token"
cp "$ROOT/policies/default.lua" "$T/alpha.lua"
cp "$FIXTURES/dlq_everything.lua" "$T/beta.lua"

# sources_config FILE EXTRA_TOP EXTRA_ALPHA EXTRA_BETA [SOURCES_OVERRIDE]
sources_config() {
  local list=${5:-}
  [ -n "$list" ] || list="{
    { name = \"alpha\", topics = { \"a\" }, ordering = \"key\", $3 },
    { name = \"beta\", topics = { \"b\" }, policy = \"$T/beta.lua\", lanes = { dlq = \"{topic}.dead\" },
      target = { http = { url = \"$H2\", timeout = 3000 } }, $4 },
  }"
  cat >"$1" <<CFG
return {
  group = "ms",
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
  commit_interval = 200, shutdown_timeout = 5000,
  admin = { listen = "127.0.0.1:0", token_file = "$T/token" },
  target = { http = { url = "$H1", timeout = 3000 } },
  policy = "$T/alpha.lua",
  $2
  sources = $list,
}
CFG
}

# bad NAME MESSAGE_PART SOURCES: the config with that sources list exits 2
# at once with one line holding MESSAGE_PART.
bad() {
  sources_config "$T/bad.lua" "" "" "" "$3"
  local out rc=0
  out=$(timeout 20 "$EG" run -c "$T/bad.lua" 2>&1) || rc=$?
  check "refused: $1 (exit $rc: ${out:0:160})" exits_with "$rc" 2 "$2" "$out"
  check "  ... in one line" [ "$(printf '%s\n' "$out" | wc -l)" = 1 ]
}
bad "a topic in two sources" "topic a is claimed by sources x and y" \
  '{ { name = "x", topics = { "a" } }, { name = "y", topics = { "b", "a" } } }'
bad "a setting of the whole gateway in an entry" "a setting of the whole gateway, not of one source: 'group'" \
  '{ { name = "x", topics = { "a" }, group = "other" } }'
bad "an unknown key in an entry" "sources\[1\] (x): unknown key 'topik'" '{ { name = "x", topik = { "a" } } }'
bad "an entry without a name" "sources\[2\].name: missing" '{ { name = "x", topics = { "a" } }, { topics = { "b" } } }'
bad "a name that is no name" "sources\[1\].name: not a valid name" '{ { name = "a b", topics = { "a" } } }'
bad "two sources of one name" "two sources are named x" \
  '{ { name = "x", topics = { "a" } }, { name = "x", topics = { "b" } } }'
bad "a pattern topic among several sources" "several sources take literal topics only" \
  '{ { name = "x", topics = { "^zz[0-9]+$" } }, { name = "y", topics = { "b" } } }'
bad "a fence without key ordering (the source named)" 'source y: source.fence: "ladder" needs source.ordering = "key"' \
  '{ { name = "x", topics = { "a" } }, { name = "y", topics = { "b" }, fence = "ladder" } }'
bad "a source's topic that is another's rung" "source y's topic a.retry.30s is a rung topic of source x" \
  '{ { name = "x", topics = { "a" } }, { name = "y", topics = { "a.retry.30s" } } }'
sources_config "$T/both.lua" 'source = { topics = { "c" } },' "" ""
out=$("$EG" run -c "$T/both.lua" 2>&1); rc=$?
check "refused: source and sources both" exits_with "$rc" 2 "either source (one source) or sources" "$out"
sources_config "$T/gw.lua" "" "" ""
out=$("$EG" run -c "$T/gw.lua" --source gamma 2>&1); rc=$?
check "refused: --source of no source, naming the sources" exits_with "$rc" 2 "no source named gamma (its sources: alpha, beta)" "$out"

# ---- two sources, each by its own policy, target and lanes --------------
{ for i in $(seq 1 10); do printf 'k%d\t{"id":"a-ok%d","mode":"ok"}\n' "$i" "$i"; done
  for i in $(seq 1 10); do printf 'k%d\t{"id":"a-tr%d","mode":"transient-1"}\n' "$i" "$i"; done; } | produce a
{ for i in $(seq 1 10); do printf 'k%d\t{"id":"b-ok%d","mode":"ok"}\n' "$i" "$i"; done
  for i in $(seq 1 10); do printf 'k%d\t{"id":"b-tr%d","mode":"transient-1"}\n' "$i" "$i"; done; } | produce b
# in a session of its own, as under a terminal: ^C goes to its process group
bg gw setsid "$EG" run -c "$T/gw.lua"
GW_PID=$LASTPID
ADDR=$(admin_addr gw) || die "no admin address: $(tail -3 "$T/gw.err")"
wait_drained ms a 60 && wait_drained ms b 60 && ok "both topics drained and committed in the one group" ||
  not_ok "lag a $(lag ms a), b $(lag ms b)"
# at-least-once: the sources join the group one after the other, and the
# embedded broker refuses the revoke's commit during that rebalance (a real
# broker takes it), so a record may be delivered twice: ids are counted once
check "alpha's records reached handler 1 only (20: transient ones retried)" \
  [ "$(grep '^ok a-' "$T/ok.log" | cut -d' ' -f2 | sort -u | wc -l)/$(grep -c '^ok b-' "$T/ok.log")" = 20/0 ]
check "beta's successes reached handler 2 only (10)" \
  [ "$(grep '^ok b-ok' "$T/ok2.log" | cut -d' ' -f2 | sort -u | wc -l)/$(grep -c '^ok a-' "$T/ok2.log")" = 10/0 ]
dump b.dead "$T/bdead.json"
dump a.dlq "$T/adlq.json"
check "beta's policy dead-lettered its 10 transient failures to b.dead" [ "$(grep -o 'b-tr[0-9]*' "$T/bdead.json" | sort -u | wc -l)" = 10 ]
check "alpha's DLQ holds nothing (its policy retried)" [ "$(grep -c . "$T/adlq.json")" = 0 ]

admin_get "$ADDR" /metrics >"$T/metrics.txt"
received() { sed -n "s/^errgate_records_received_total{source=\"$1\",topic=\"$2\"} //p" "$T/metrics.txt"; }
check "/metrics: received by source (alpha on a: $(received alpha a), at least 20)" [ "$(received alpha a)" -ge 20 ]
check "/metrics: received by source (beta on b: $(received beta b), at least 20)" [ "$(received beta b)" -ge 20 ]
check "/metrics: no cross series (alpha on b, beta on a)" [ -z "$(received alpha b)$(received beta a)" ]
check "/metrics: errgate_source_up 1 for both" [ "$(grep -c '^errgate_source_up{source="\(alpha\|beta\)"} 1$' "$T/metrics.txt")" = 2 ]
check "/metrics: each family's TYPE once ($(grep -c '^# TYPE' "$T/metrics.txt") families)" \
  [ "$(grep '^# TYPE' "$T/metrics.txt" | sort | uniq -d | wc -l)" = 0 ]
check "/metrics: every sample names its source (but errgate_source_up's)" \
  [ "$(grep -v '^#' "$T/metrics.txt" | grep -v '^errgate_source_up' | grep -vc 'source="')" = 0 ]
admin_get "$ADDR" /sources >"$T/sources.json"
check "/sources lists both running" $PY -c '
import json,sys; s=json.load(open(sys.argv[1]))["sources"]
sys.exit(0 if [x["name"] for x in s]==["alpha","beta"] and all(x["state"]=="running" for x in s) else 1)' "$T/sources.json"
check "/readyz: ready" [ "$(admin_get "$ADDR" /readyz)" = '{"ready":true}' ]
check "every line of a source names it" grep -q '"event":"assign","source":"beta"' "$T/gw.err"

# ---- a policy reloaded on its own ---------------------------------------
B0=$(admin_get "$ADDR" /sources/beta/policy)
A0=$(admin_get "$ADDR" /sources/alpha/policy)
sed -i 's/version = "1"/version = "2"/' "$T/beta.lua"
wait_for 10 grep -q '"event":"reload","source":"beta".*"result":"ok"' "$T/gw.err" &&
  ok "beta's policy file changed: beta reloaded" || not_ok "no reload of beta"
sleep 1.5
check "alpha did not reload" bash -c "! grep -q '\"event\":\"reload\",\"source\":\"alpha\"' '$T/gw.err'"
check "beta's /policy changed" [ "$(admin_get "$ADDR" /sources/beta/policy)" != "$B0" ]
check "alpha's /policy did not" [ "$(admin_get "$ADDR" /sources/alpha/policy)" = "$A0" ]

# ---- an override of one source -------------------------------------------
"$EG" ctl --admin "http://$ADDR" --source beta --token-file "$T/token" override set hold-b --class any --action hold \
  --ttl 5m --reason test >"$T/ctl.out" 2>&1
check "ctl --source beta override set (exit $?)" grep -q hold-b "$T/ctl.out"
check "beta lists it" bash -c "'$EG' ctl --admin 'http://$ADDR' --source beta override list | grep -q hold-b"
sleep 1
check "alpha does not (an override is the source's own)" \
  bash -c "! '$EG' ctl --admin 'http://$ADDR' --source alpha override list | grep -q hold-b"
check "a control without --source is pointed to /sources/NAME" \
  bash -c "'$EG' ctl --admin 'http://$ADDR' override list 2>&1 | grep -q 'several sources'"
"$EG" ctl --admin "http://$ADDR" --source beta --token-file "$T/token" override clear hold-b >/dev/null 2>&1

# ---- the commands ----------------------------------------------------------
out=$("$EG" policy check -c "$T/gw.lua" --source beta 2>&1); rc=$?
check "policy check -c --source beta: beta's policy (exit $rc)" exits_with "$rc" 0 "dlq-all@2" "$out"
out=$("$EG" policy check -c "$T/gw.lua" 2>&1); rc=$?
check "policy check -c without --source: refused, naming them" exits_with "$rc" 2 "2 sources (alpha, beta)" "$out"
printf '{"name":"c1","failure":{"kind":"http","status":503},"expect":"dlq"}\n' >"$T/cases.jsonl"
out=$("$EG" policy test -c "$T/gw.lua" --source beta "$T/cases.jsonl" 2>&1); rc=$?
check "policy test -c --source beta CASES (exit $rc)" [ "$rc" = 0 ]
out=$("$EG" dlq stats b.dead -c "$T/gw.lua" --source beta 2>&1); rc=$?
check "dlq stats -c --source beta (exit $rc)" exits_with "$rc" 0 "10" "$out"
out=$("$EG" replay -c "$T/gw.lua" --dry-run 2>&1); rc=$?
check "replay -c without --source: refused, naming them" exits_with "$rc" 2 "name one with --source" "$out"
out=$("$EG" replay -c "$T/gw.lua" --source beta --dry-run 2>&1); rc=$?
check "replay -c --source beta --dry-run: beta's DLQ lane b.dead (exit $rc)" exits_with "$rc" 0 "b.dead" "$out"

# ---- signals ----------------------------------------------------------------
kill -HUP "$GW_PID"
wait_for 10 bash -c "[ \$(grep -c '\"event\":\"reload\".*\"trigger\":\"sighup\"' '$T/gw.err') -ge 2 ]" &&
  ok "SIGHUP reached both sources" || not_ok "SIGHUP: $(grep -c '"trigger":"sighup"' "$T/gw.err") reloads"
kids=$(pgrep -P "$GW_PID" | tr '\n' ' ')
own=1; for k in $kids; do [ "$(ps -o pgid= -p "$k" | tr -d ' ')" = "$k" ] || own=0; done
check "each source's process is a process group of its own (a ^C is passed on once, by the supervisor)" \
  [ "${kids:+y}$own" = y1 ]
kill -INT -- -"$GW_PID" # ^C: the whole process group
RC=0; wait "$GW_PID" || RC=$?
check "^C (SIGINT to the process group): the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
check "  ... each source exited 0" [ "$(grep -c '"event":"source_exited".*"exit_code":0' "$T/gw.err")" = 2 ]


# ---- fate shared -------------------------------------------------------------
start_gateway gw2 "$T/gw.lua"
wait_for 20 bash -c "[ \$(grep -c '\"event\":\"assign\"' '$T/gw2.err') -ge 2 ]" || diag "not assigned"
BPID=$(sed -n 's/.*"event":"source_started","source":"beta","pid":\([0-9]*\).*/\1/p' "$T/gw2.err" | head -1)
APID=$(sed -n 's/.*"event":"source_started","source":"alpha","pid":\([0-9]*\).*/\1/p' "$T/gw2.err" | head -1)
kill -9 "$BPID"
RC=0; timeout 30 tail --pid="$GW_PID" -f /dev/null; wait "$GW_PID" || RC=$?
check "kill -9 of beta's process: the gateway exits 1 (exit $RC)" [ "$RC" = 1 ]
check "  ... alpha was stopped, gracefully" grep -q '"event":"source_exited","source":"alpha".*"exit_code":0' "$T/gw2.err"
check "  ... no process is left" bash -c "! kill -0 $APID 2>/dev/null"

# ---- two gateways, one group: a rebalance of different subscriptions -----
start_gateway g1 "$T/gw.lua"; P1=$GW_PID
start_gateway g2 "$T/gw.lua"; P2=$GW_PID
wait_for 40 bash -c "[ \$(grep -c '\"event\":\"assign\"' '$T/g2.err') -ge 2 ]" || diag "g2 not assigned"
sleep 3
stop_gateway "$P1"
check "the first gateway stops (exit $RC)" [ "$RC" = 0 ]
{ for i in $(seq 1 20); do printf 'k%d\t{"id":"a2-%d","mode":"ok"}\n' "$i" "$i"; done; } | produce a
{ for i in $(seq 1 20); do printf 'k%d\t{"id":"b2-%d","mode":"ok"}\n' "$i" "$i"; done; } | produce b
wait_drained ms a 60 && wait_drained ms b 60 && ok "the other gateway took over both topics and drained them" ||
  not_ok "lag a $(lag ms a), b $(lag ms b)"
check "  ... records after the rebalance reached each source's own target (20 + 20)" \
  [ "$(grep '^ok a2-' "$T/ok.log" | cut -d' ' -f2 | sort -u | wc -l)/$(grep '^ok b2-' "$T/ok2.log" | cut -d' ' -f2 | sort -u | wc -l)" = 20/20 ]
stop_gateway "$P2"
check "the second gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
exit $FAILED
