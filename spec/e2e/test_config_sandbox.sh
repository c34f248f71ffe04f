#!/usr/bin/env bash
# test_config_sandbox.sh — a config file is not a program (issue 28, item 3).
# Every command that takes -c runs the file through the one loader
# (src/lib/config.c): os.execute is refused with one clear line and runs
# nothing, for `run`, `replay`, `dlq stats|tail` alike, and so are the
# librdkafka properties that run a command or load a library (the kafka
# table, and --kafka-config files); `while true do end`
# ends at the config budget (2 s), a memory bomb at the cap (64 MiB), both
# exit 2 with "config FILE: ..."; SIGTERM (and SIGINT) during a slow load
# end the gateway at once, a graceful stop (exit 0); a config that reads the environment still loads
# (under valgrind too: no leak on any of these paths).
source "$(dirname "$0")/lib.sh"
printf 'return {}\n' >"$T/policy.lua"
cfg() { printf '%s\n' "$2" >"$T/$1.lua"; }
cfg exec "os.execute('touch $T/pwned') return {}"
cfg loop 'while true do end'
cfg mem 'local t = {} for i = 1, 1e9 do t[i] = { i } end return t'
cfg slow 'local t0 = os.clock() while os.clock() - t0 < 1.9 do end return {}'  # a slow load: ends naturally at 1.9 s, the budget is 2 s

for cmd in "run -c $T/exec.lua" "replay -c $T/exec.lua --from x.dlq --dry-run" "dlq stats x.dlq -c $T/exec.lua" \
  "dlq tail x.dlq -c $T/exec.lua"; do
  out=$("$EG" $cmd 2>&1); rc=$?
  check "errgate ${cmd%% -c*}${cmd##*.lua}: os.execute refused, exit 2 (exit $rc)" \
    exits_with "$rc" 2 "config $T/exec.lua:1: os.execute is not available in a config" "$out"
done
check "nothing ran" [ ! -e "$T/pwned" ]

# nor through librdkafka: properties that run a command or load a shared
# library are refused in the kafka table and in a --kafka-config file
for prop in "sasl.kerberos.kinit.cmd=touch $T/pwned-kinit" "plugin.library.paths=$T/evil.so" \
  "SSL.Engine.Location=$T/evil.so" "ssl.providers=evil"; do
  k=${prop%%=*} v=${prop#*=}
  cat >"$T/prop.lua" <<CFG
return { group = "g", source = { topics = { "src" } }, target = { http = { url = "http://127.0.0.1:9/" } },
  policy = "$ROOT/policies/default.lua", kafka = { ["bootstrap.servers"] = "127.0.0.1:1", ["sasl.mechanism"] = "GSSAPI",
  ["security.protocol"] = "SASL_PLAINTEXT", ["$k"] = "$v" } }
CFG
  out=$(timeout 30 "$EG" run -c "$T/prop.lua" 2>&1); rc=$?
  check "kafka.$k in a config: refused, exit 2 (exit $rc)" exits_with "$rc" 2 "kafka.$k: refused: it " "$out"
  printf 'bootstrap.servers=127.0.0.1:1\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n%s\n' "$prop" \
    >"$T/prop.properties"
  out=$(timeout 30 "$EG" dlq stats x.dlq --kafka-config "$T/prop.properties" 2>&1); rc=$?
  check "$k in a --kafka-config file: refused, exit 2 (exit $rc)" \
    exits_with "$rc" 2 "--kafka-config $T/prop.properties:4: $k: refused: it " "$out"
done
check "no kinit command ran" [ ! -e "$T/pwned-kinit" ]

# elapsed_run FILE: runs errgate run -c FILE; sets RC, OUT and MS (its wall time)
elapsed_run() {
  local t0; t0=$(date +%s%N)
  OUT=$("$EG" run -c "$1" 2>&1); RC=$?
  MS=$(( ($(date +%s%N) - t0) / 1000000 ))
}
elapsed_run "$T/loop.lua"
check "while true do end: exit 2 in $MS ms, the budget named" \
  bash -c "exits_with() { [ \"\$1\" = \"\$2\" ] && grep -q -- \"\$3\" <<<\"\$4\"; }; \
    exits_with $RC 2 'config $T/loop.lua: still running after 2000 ms' \"$OUT\" && [ $MS -lt 3000 ]"
elapsed_run "$T/mem.lua"
check "a memory bomb: exit 2 in $MS ms, the cap named" \
  exits_with "$RC" 2 "config $T/mem.lua: used more than 64 MiB of memory" "$OUT"

for sig in TERM INT; do
  "$EG" run -c "$T/slow.lua" >"$T/sig.out" 2>"$T/sig.err" &
  pid=$!
  sleep 0.4
  t0=$(date +%s%N)
  kill -$sig $pid
  wait $pid; rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  check "SIG$sig during a slow load ends it at once, a graceful stop: exit 0 ($ms ms, exit $rc)" \
    bash -c "[ $rc = 0 ] && [ $ms -lt 1000 ] && grep -q 'config $T/slow.lua: loading interrupted by SIG$sig' '$T/sig.err'"
done

# a config that reads the environment still loads: the gateway gets past it
# (to its first Kafka contact, which fails fast with no broker: exit 1)
cat >"$T/env.lua" <<EOF
return {
  kafka = { ["bootstrap.servers"] = os.getenv("CFG_BROKER") },
  group = "g-" .. os.date("!%Y"),
  source = { topics = { "src" } },
  target = { http = { url = "http://127.0.0.1:9/" } },
  policy = "policy.lua",
}
EOF
out=$(CFG_BROKER=127.0.0.1:1 timeout 60 "$EG" policy test "$T/policy.lua" --from-topic x.dlq -c "$T/env.lua" 2>&1)
check "a config that uses os.getenv and os.date loads (policy test -c got past it)" \
  bash -c "! grep -q 'config ' <<<'$out'"
if command -v valgrind >/dev/null && [ "${SAN:-}" != 1 ]; then # valgrind cannot run an ASan binary
  for f in exec loop mem; do
    "${VG[@]}" "$EG_BIN" run -c "$T/$f.lua" >/dev/null 2>"$T/vg-$f.err"; rc=$?
    check "valgrind: the refused $f.lua config leaks nothing (exit $rc)" vg_ok "$rc" 2 "$T/vg-$f.err"
  done
fi
echo "1..$TESTNO"
exit $FAILED
