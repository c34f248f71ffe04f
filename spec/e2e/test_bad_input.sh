#!/usr/bin/env bash
# test_bad_input.sh — bad config, missing or broken policy, missing target:
# one clear line on stderr naming the key or file, exit 2, nothing consumed
# (no request reached the handler, the group committed nothing).
source "$(dirname "$0")/lib.sh"

start_broker --topic src:2
start_handler
gen_records 20 "ok:1" | produce src
POL="$ROOT/policies/default.lua"
good_source='source = { topics = { "src" } }'
good_target="target = { http = { url = \"$HANDLER_URL\" } }"

# case NAME EXPECTED_SUBSTRING CONFIG_BODY: write the config, run, check.
case_() {
  local name=$1 want=$2 body=$3 cfg="$T/$1.lua"
  printf '%s\n' "$body" >"$cfg"
  local rc=0
  timeout 20 "$EG" run -c "$cfg" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
  local lines; lines=$(grep -c . "$T/$name.err")
  if [ "$rc" = 2 ] && [ "$lines" = 1 ] && grep -qF -- "$want" "$T/$name.err"; then
    ok "$name: exit 2, one line naming '$want'"
  else
    not_ok "$name: exit $rc, $lines lines: $(head -3 "$T/$name.err")"
  fi
}

echo 'return 42' >"$T/number.lua"

case_ unknown_key "unknown key 'sourse'" "return { group = 'g', sourse = {}, $good_source, $good_target, policy = '$POL' }"
case_ unknown_nested_key "unknown key 'source.topic'" "return { group = 'g', source = { topic = 'src' }, $good_target, policy = '$POL' }"
case_ wrong_type "source.ordering: expected a string" "return { group = 'g', source = { topics = { 'src' }, ordering = 5 }, $good_target, policy = '$POL' }"
case_ bad_ordering "source.ordering" "return { group = 'g', source = { topics = { 'src' }, ordering = 'random' }, $good_target, policy = '$POL' }"
case_ missing_group "missing required key 'group'" "return { $good_source, $good_target, policy = '$POL' }"
case_ missing_policy_file "/nonexistent/policy.lua" "return { group = 'g', $good_source, $good_target, policy = '/nonexistent/policy.lua' }"
case_ policy_syntax "syntax_error.lua:5" "return { group = 'g', $good_source, $good_target, policy = '$FIXTURES/syntax_error.lua' }"
case_ policy_wrong_return "number.lua" "return { group = 'g', $good_source, $good_target, policy = '$T/number.lua' }"
case_ policy_lint_error "lint: class 'gone'" "return { group = 'g', $good_source, $good_target, policy = '$FIXTURES/unrouted_class.lua' }"
case_ policy_no_default_route "default" "return { group = 'g', $good_source, $good_target, policy = '$FIXTURES/no_default_route.lua' }"
case_ missing_lua_target "/nonexistent/target.lua" "return { group = 'g', $good_source, target = { lua = '/nonexistent/target.lua' }, policy = '$POL' }"
case_ two_targets "exactly one of target.http or target.lua" "return { group = 'g', $good_source, target = { lua = '$POL', http = { url = 'http://x/' } }, policy = '$POL' }"
case_ bad_kafka_property "kafka.no.such.property" "return { group = 'g', kafka = { ['no.such.property'] = 'x' }, $good_source, $good_target, policy = '$POL' }"
case_ auto_commit_refused "kafka.enable.auto.commit" "return { group = 'g', kafka = { ['enable.auto.commit'] = true }, $good_source, $good_target, policy = '$POL' }"
case_ config_syntax "config_syntax.lua:2" "return { group = 'g' "
case_ not_a_table "must return a table" "return 'hello'"
rc=0; "$EG" run -c "$T/does-not-exist.lua" 2>"$T/nofile.err" || rc=$?
check "missing config file: exit 2 naming it" bash -c "[ $rc = 2 ] && grep -q does-not-exist.lua '$T/nofile.err'"

check "nothing reached the handler" bash -c "[ ! -s '$T/ok.log' ]"
check "the group committed nothing" bash -c "'$EG' offsets -b '$BOOTSTRAP' -g g src | awk '\$1==\"src\" && \$3 != -1 {bad=1} END {exit bad}'"
