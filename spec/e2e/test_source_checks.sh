#!/usr/bin/env bash
# test_source_checks.sh — source settings the gateway cannot honour are
# refused at load, and a regex source never consumes the gateway's own lanes
#
#   - kafka partition.assignment.strategy = cooperative-sticky: exit 2 with a
#     message naming the key and the eager strategies;
#   - a regex source that matches a lane of a source topic (^src.* and
#     src.dlq): exit 2 naming the pattern and the lane;
#   - a regex too costly to compile (stacked quantifiers, huge counts): exit 2
#     at once;
#   - a regex the load-time samples cannot catch (^[a-z]+\.dlq$ next to
#     ^(src|other)$): at assignment the partitions of src.dlq are excluded
#     (logged, counted); a permanent record goes to src.dlq once and is never
#     consumed again as a source record.
source "$(dirname "$0")/lib.sh"
start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2 --topic other:1
start_handler
handler_requests() { curl -s -m 5 "${HANDLER_URL}stats" | $PY -c 'import json,sys; print(json.load(sys.stdin)["requests"])'; }

run_cfg() { OUT=$(timeout 15 "$EG" run -c "$1" 2>&1); RC=$?; }
write_config "$T/coop.lua" sc none
sed -i 's|kafka = { |kafka = { ["partition.assignment.strategy"] = "cooperative-sticky", |' "$T/coop.lua"
run_cfg "$T/coop.lua"
check "cooperative-sticky is refused at load (exit $RC): $OUT" \
  exits_with "$RC" 2 'kafka.partition.assignment.strategy: "cooperative-sticky" is a cooperative.*range or roundrobin' "$OUT"
sed -i 's|"cooperative-sticky"|"range,cooperative-sticky"|' "$T/coop.lua"
run_cfg "$T/coop.lua"
check "a list with a cooperative strategy is refused too (exit $RC)" exits_with "$RC" 2 'cooperative' "$OUT"

write_config "$T/re1.lua" sc none
sed -i 's|topics = { "src" }|topics = { "^src.*" }|' "$T/re1.lua"
run_cfg "$T/re1.lua"
check "a regex matching its own DLQ is refused at load (exit $RC): $OUT" \
  exits_with "$RC" 2 'source.topics\[1\]: the pattern "^src.\*" also matches the lane topic "src.dlq"' "$OUT"
write_config "$T/re2.lua" sc none
sed -i 's|topics = { "src" }|topics = { "src", "^src[.].*" }|' "$T/re2.lua"
run_cfg "$T/re2.lua"
check "a regex matching the lane of a literal source is refused (exit $RC)" \
  exits_with "$RC" 2 'source.topics\[2\]: .*"src.dlq"' "$OUT"
write_config "$T/re3.lua" sc none
sed -i 's|topics = { "src" }|topics = { "^src(" }|' "$T/re3.lua"
run_cfg "$T/re3.lua"
check "a broken regex is refused (exit $RC)" exits_with "$RC" 2 'not a valid regular expression' "$OUT"
# stacked quantifiers and huge counts make glibc's regcomp exponential (a
# config once took minutes to load): refused before compiling, at once
for bad in '^src+++++++++++++++++++++++++' '^src(x{200}){200}' '^s{99999}'; do
  write_config "$T/re4.lua" sc none
  sed -i "s|topics = { \"src\" }|topics = { \"$bad\" }|" "$T/re4.lua"
  t0=$(date +%s%N); run_cfg "$T/re4.lua"; ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  check "a regex too costly to compile is refused at once: $bad (exit $RC in $ms ms)" \
    bash -c "[ $ms -lt 3000 ] && grep -q 'is refused: \(stacked repetition\|a repetition count over\|repetition counts multiplying\)' <<<\"\$1\" && [ $RC = 2 ]" _ "$OUT"
done

write_config "$T/gw.lua" rx none 'admin = { listen = "127.0.0.1:0" },'
sed -i 's|topics = { "src" }|topics = { "^(src\|other)$", "^[a-z]+[.]dlq$" }|' "$T/gw.lua"
printf 'k1\t{"id":"p1","mode":"permanent"}\nk2\t{"id":"ok1","mode":"ok"}\n' | produce src
start_gateway gw "$T/gw.lua"
wait_drained rx src 30 && ok "the source records are finished" || not_ok "lag $(lag rx src)"
wait_for 20 grep -q '"event":"excluded_partition".*src.dlq' "$T/gw.err" &&
  ok "the src.dlq partitions were excluded at assignment" || not_ok "no excluded_partition line"
sleep 3 # a consumed DLQ record would be tried again within this
dump src.dlq "$T/dlq.json"
dump src.dlq.dlq "$T/dlqdlq.json"
check "src.dlq holds the permanent record once ($(wc -l <"$T/dlq.json"))" [ "$(wc -l <"$T/dlq.json")" = 1 ]
check "nothing reached src.dlq.dlq" [ ! -s "$T/dlqdlq.json" ]
check "no decision on a src.dlq record" bash -c "! grep -q '\"event\":\"decision\".*\"topic\":\"src.dlq\"' '$T/gw.err'"
check "the handler got 2 requests (p1 once, ok1 once): $(handler_requests)" [ "$(handler_requests)" = 2 ]
ADDR=$(admin_addr gw)
check "exclusions are counted" bash -c "curl -s http://$ADDR/metrics | grep -qx 'errgate_excluded_partitions_total 2'"
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
