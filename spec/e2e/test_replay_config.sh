#!/usr/bin/env bash
# test_replay_config.sh — `errgate replay -c CONFIG` takes its defaults from
# the config: without --from, every DLQ lane of the config's sources, one
# after the other (a shared lanes.dlq is one lane); without --to, each record
# goes back to its own original topic (original.topic, or the original topic
# of its foreign dialect: Spring, Connect, Streams, share group,
# x-dlq-metadata), to its original partition; a record without an original
# topic, or whose original topic does not exist, is unroutable: not
# replayed, not committed past, exit 1.
source "$(dirname "$0")/lib.sh"

start_broker --topic orders:4 --topic orders.dlq:1 --topic pay:2 --topic pay.dlq:1 --topic manual:1
$PY "$ROOT/spec/e2e/foreign_dlq.py" "$BOOTSTRAP" orders.dlq >/dev/null || die "cannot produce the foreign records"
kp() { kcat -P -b "$BOOTSTRAP" -t "$1" -X acks=all "${@:2}" 2>>"$T/kcat.err"; }
echo '{"p":1}' | kp pay.dlq -k p1 -H error.code=http_400 -H error.class=permanent -H errgate.id=pay/1/8 \
  -H original.topic=pay -H original.partition=1 -H original.offset=8
echo '{"p":2}' | kp pay.dlq -k p2 -H error.code=http_400 -H errgate.id=gone/0/1 -H original.topic=gone \
  -H original.partition=0 -H original.offset=1
cfg() {
  cat >"$1" <<CFG
return {
  group = "g", kafka = { ["bootstrap.servers"] = "$BOOTSTRAP" },
  source = { topics = { "orders", "pay" } },
  target = { http = { url = "http://127.0.0.1:9/" } },
  policy = "$ROOT/policies/default.lua",
  $2
}
CFG
}
cfg "$T/gw.lua" ""
# field NAME FILE: the numbers after NAME in the summary lines of FILE, one a line.
field() { sed -n "s/.*[ :]$1 \([0-9][0-9]*\).*/\1/p" "$2"; }

env -u ERRGATE_BOOTSTRAP "$EG" replay -c "$T/gw.lua" --dry-run >"$T/dry.out" 2>"$T/dry.err"; rc=$?
check "dry run without --from/--to: exit 1, two records are unroutable (rc $rc)" [ "$rc" = 1 ]
check "both DLQ lanes of the config are read, each to its records' original topics" \
  bash -c 'grep -q "^replay orders.dlq -> original topics, group errgate-replay.orders.dlq.original." "$1" &&
           grep -q "^replay pay.dlq -> original topics, group errgate-replay.pay.dlq.original." "$1"' _ "$T/dry.out"
want_rows() {
  cat <<'W'
orders.dlq/0/0 orders/2/4711 orders/2
orders.dlq/0/1 orders/1/99 orders/1
orders.dlq/0/2 orders/0/12 orders/0
orders.dlq/0/3 orders/3/77 orders/3
orders.dlq/0/4 orders/-/- orders by key
orders.dlq/0/5 orders/0/5 orders/0
orders.dlq/0/6 -/-/- - skip: unroutable
pay.dlq/0/0 pay/1/8 pay/1
pay.dlq/0/1 gone/0/1 - skip: unroutable
W
}
awk '$1 ~ /\.dlq\/0\// { v = $NF; to = $(NF-1); if (v == "unroutable") { to = "-"; v = "skip: unroutable" }
     else if ($(NF-1) == "key") to = $(NF-3) " by key"; print $1, $2, to (v == "replay" ? "" : " " v) }' \
  "$T/dry.out" | sed 's/ skip: skip:/ skip:/' >"$T/rows"
check "every dialect's record goes to its own original topic and partition (Spring binary, Connect, Streams, share group, x-dlq-metadata, errgate)" \
  diff <(want_rows) "$T/rows"
check "the unroutable records are named on stderr with the reason" \
  bash -c 'grep -q "unroutable orders.dlq/0/6 .*no original topic" "$1" && grep -q "unroutable pay.dlq/0/1 .*original topic gone does not exist" "$1"' _ "$T/dry.err"

"$EG" replay -c "$T/gw.lua" >"$T/real.out" 2>"$T/real.err"; rc=$?
check "replay: exit 1 for the unroutable records (rc $rc)" [ "$rc" = 1 ]
check "replay: 6 + 1 replayed, 1 + 1 unroutable" \
  [ "$(field replayed "$T/real.out" | tr '\n' ' ')/$(field unroutable "$T/real.out" | tr '\n' ' ')" = "6 1 /1 1 " ]
dump orders "$T/orders.json"
dump pay "$T/pay.json"
check "the records are in their original topics and partitions, with replay.from-dlq" $PY - "$T/orders.json" "$T/pay.json" <<'PY'
import json, sys
got = []
for f in sys.argv[1:]:
    for line in open(f):
        r = json.loads(line)
        hl = r.get("headers") or []
        h = dict(zip(hl[0::2], hl[1::2]))
        got.append((r["topic"], r["partition"], r.get("key"), h.get("replay.from-dlq")))
got.sort(key=lambda g: (g[0], g[1], g[2] or ""))
print("# %r" % got)
want = [("orders", 0, "errgate", "orders.dlq/0/5"), ("orders", 0, "streams", "orders.dlq/0/2"),
        ("orders", 1, "connect", "orders.dlq/0/1"), ("orders", 2, "spring", "orders.dlq/0/0"),
        ("orders", 3, "share", "orders.dlq/0/3"), ("pay", 1, "p1", "pay.dlq/0/0")]
xd = [g for g in got if g[2] == "xdlq"]
sys.exit(0 if [g for g in got if g[2] != "xdlq"] == want and len(xd) == 1 and xd[0][3] == "orders.dlq/0/4" else 1)
PY

"$EG" replay -c "$T/gw.lua" >"$T/again.out" 2>"$T/again.err"; rc=$?
check "a rerun replays nothing again, and still names the unroutable records (rc $rc)" \
  [ "$(field replayed "$T/again.out" | tr '\n' ' ')/$(field unroutable "$T/again.out" | tr '\n' ' ')" = "0 0 /1 1 " ]

"$EG" replay -c "$T/gw.lua" --to manual --include-resolved >"$T/to.out" 2>"$T/to.err"; rc=$?
check "-c with --to: every lane of the config to that topic (rc $rc)" \
  bash -c '[ "$2" = 0 ] && grep -q "^replay orders.dlq -> manual" "$1" && grep -q "^replay pay.dlq -> manual" "$1" &&
           [ "$3" = "7 2 " ]' _ "$T/to.out" "$rc" "$(field replayed "$T/to.out" | tr '\n' ' ')"

cfg "$T/shared.lua" 'lanes = { dlq = "pay.dlq" },'
"$EG" replay -c "$T/shared.lua" --dry-run --include-resolved >"$T/shared.out" 2>&1
check "sources sharing one lanes.dlq: the lane is read once" [ "$(grep -c '^replay ' "$T/shared.out")" = 1 ]
cfg "$T/regex.lua" ''
sed -i 's/topics = { "orders", "pay" }/topics = { "^ord[a-z]+$" }/' "$T/regex.lua"
"$EG" replay -c "$T/regex.lua" --dry-run >"$T/regex.out" 2>"$T/regex.err"; rc=$?
check "a pattern source names no lane: exit 2, give --from (rc $rc)" \
  bash -c '[ "$2" = 2 ] && grep -q "is a pattern" "$1" && grep -q "give --from" "$1"' _ "$T/regex.err" "$rc"
"$EG" replay -b "$BOOTSTRAP" --from pay.dlq >/dev/null 2>"$T/noto.err"; rc=$?
check "without -c, --to stays required (rc $rc)" bash -c '[ "$2" = 2 ] && grep -q -- "--to TOPIC is required (or -c CONFIG" "$1"' _ "$T/noto.err" "$rc"
"$EG" replay -c "$T/gw.lua" --from pay.dlq --dry-run --include-resolved >"$T/from.out" 2>&1
check "-c with --from: only that lane, records to their original topics" \
  bash -c '[ "$(grep -c "^replay " "$1")" = 1 ] && grep -q "^replay pay.dlq -> original topics" "$1"' _ "$T/from.out"
exit $FAILED
