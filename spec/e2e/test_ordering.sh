#!/usr/bin/env bash
# test_ordering.sh — ordering is a choice per source (DESIGN §2.7):
# "partition": the handler sees each partition's records in offset order, a
# failing record blocking those behind it; "key": records with the same key
# reach the handler in offset order while other keys pass a failing one.
source "$(dirname "$0")/lib.sh"

start_broker --topic po:2 --topic po.dlq:2 --topic po.quarantine:2 --topic ko:1 --topic ko.dlq:1 --topic ko.quarantine:1
start_handler
gen_records 400 "ok:80 transient-2:20" | produce po
write_config "$T/po.lua" po partition
sed -i 's/"src"/"po"/' "$T/po.lua"
start_gateway gwpo "$T/po.lua"
wait_drained po po 60 && ok "partition ordering: all delivered" || not_ok "lag $(lag po po)"
stop_gateway "$GW_PID"
# ok.log: "ok <id> <topic/partition/offset>", in the order the handler answered 200
check "partition ordering: successes of each partition are in offset order" \
  awk '$3 ~ /^po\// { split($3, c, "/"); if (c[3] + 0 < last[c[2]]) bad++; last[c[2]] = c[3] + 0; n++ } END { exit !(n == 400 && !bad) }' "$T/ok.log"

# key ordering: key A's first record fails four times; A's later records must wait,
# key B's records (after it in the partition) must not
{ printf 'A\t{"id":"a1","mode":"transient-4"}\n'
  for i in 2 3 4; do printf 'A\t{"id":"a%d","mode":"ok"}\n' $i; done
  for i in 1 2 3 4 5 6; do printf 'B\t{"id":"b%d","mode":"ok"}\n' $i; done; } | produce ko
write_config "$T/ko.lua" ko key
sed -i 's/"src"/"ko"/' "$T/ko.lua"
start_gateway gwko "$T/ko.lua"
wait_drained ko ko 60 && ok "key ordering: all delivered" || not_ok "lag $(lag ko ko)"
stop_gateway "$GW_PID"
order=$(awk '$2 ~ /^[ab][0-9]$/ {printf "%s ", $2}' "$T/ok.log")
diag "handler order: $order"
check "key ordering: key A's records in offset order behind the failing a1" \
  bash -c "[ \"\$(echo '$order' | tr ' ' '\n' | grep '^a' | tr '\n' ' ')\" = 'a1 a2 a3 a4 ' ]"
check "key ordering: key B's records in offset order" \
  bash -c "[ \"\$(echo '$order' | tr ' ' '\n' | grep '^b' | tr '\n' ' ')\" = 'b1 b2 b3 b4 b5 b6 ' ]"
check "key ordering: key B did not wait behind the failing key A (b6 before a1)" \
  bash -c "echo '$order' | grep -q 'b6.*a1'"
