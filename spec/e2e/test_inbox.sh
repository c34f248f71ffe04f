#!/usr/bin/env bash
# test_inbox.sh — inbox mode (source.inbox): the source topic is a DLQ other
# systems wrote (Spring Kafka, Kafka Connect, Kafka Streams, a share group,
# x-dlq-metadata, errgate itself; foreign_dlq.py writes each with its exact
# headers); every record is a recorded failure the policy triages, with
# code = the innermost exception class (a Spring NullPointerException
# wrapped in ListenerExecutionFailedException matches "NullPointerException$").
# No target exists: a config with both source.inbox and a target is refused.
# Audit: every record has exactly one outcome (normalized, quarantined, or
# accepted with the reason its decision line states, and recorded as
# accepted-loss in inbox.state) and the group commits to the end.
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"

start_broker --topic inbox:1
$PY "$ROOT/spec/e2e/foreign_dlq.py" "$BOOTSTRAP" inbox >"$T/produce.out" || die "cannot produce: $(cat "$T/produce.out")"

inbox_config() { # FILE GROUP FORMAT [EXTRA]
  cat >"$1" <<CFG
return {
  group = "$2",
  source = { topics = { "inbox" }, inbox = "$3" },
  policy = "$FIXTURES/inbox_triage.lua",
  lanes = { dlq = "{topic}.$2.dlq", quarantine = "{topic}.$2.quarantine" },
  commit_interval = 200,
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
  ${4:-}
}
CFG
}

inbox_config "$T/both.lua" x auto 'target = { http = { url = "http://127.0.0.1:9/" } },'
out=$("$EG" run -c "$T/both.lua" 2>&1); rc=$?
check "source.inbox with a target is a config error" exits_with "$rc" 2 'source.inbox calls no target' "$out"
inbox_config "$T/badfmt.lua" x jms
out=$("$EG" run -c "$T/badfmt.lua" 2>&1); rc=$?
check "an unknown inbox format is a config error" exits_with "$rc" 2 'source.inbox' "$out"

# run_inbox GROUP FORMAT: triage the inbox, then read its decisions and lanes
run_inbox() {
  inbox_config "$T/$1.lua" "$1" "$2"
  start_gateway "$1" "$T/$1.lua"
  if wait_drained "$1" inbox 60; then ok "$2: every inbox record committed"; else not_ok "$2: lag $(lag "$1" inbox)"; fi
  stop_gateway "$GW_PID"
  $PY "$ROOT/spec/e2e/profile_reader.py" "$BOOTSTRAP" "$T/$1.lanes.json" "inbox.$1.dlq" "inbox.$1.quarantine" ||
    die "cannot read the lanes of $1"
}

# audit GROUP EXPECT_JSON: decisions (key -> class, code, action) as expected,
# one outcome per record: a decision line each, a lane record for dlq and
# quarantine, none for ignore
audit() {
  $PY - "$T/$1.err" "$T/$1.lanes.json" "$2" "$T/inbox.json" <<'PY'
import json, sys
log, lanes, want = sys.argv[1], json.load(open(sys.argv[2])), json.loads(sys.argv[3])
src = {r["offset"]: r["key"] for r in json.load(open(sys.argv[4]))}
dec = {}
for line in open(log):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("msg") == "decision" or e.get("event") == "decision":
        dec.setdefault(src[e["offset"]], []).append(e)
bad = []
for key, (klass, code, action) in want.items():
    d = dec.get(key, [])
    if len(d) != 1:
        bad.append("%s: %d decisions" % (key, len(d)))
        continue
    d = d[0]
    if (d["class"], d["code"], d["action"], d["kind"]) != (klass, code, action, "recorded"):
        bad.append("%s: decided %s/%s/%s kind %s, want %s/%s/%s" % (key, d["class"], d["code"], d["action"], d["kind"], klass, code, action))
    written = [r for r in lanes if r["key"] == key]
    lane = {"dlq": ".dlq", "quarantine": ".quarantine"}.get(action)
    if lane is None and written:
        bad.append("%s: ignored but written to %s" % (key, written[0]["topic"]))
    if action == "ignore" and not d.get("reason"):
        bad.append("%s: accepted (ignore) without a reason in its decision line" % key)
    if lane and (len(written) != 1 or not written[0]["topic"].endswith(lane)):
        bad.append("%s: %d lane records %s" % (key, len(written), [r["topic"] for r in written]))
    if lane and written and written[0]["errgate"].get("error.code") != code:
        bad.append("%s: lane error.code %r" % (key, written[0]["errgate"].get("error.code")))
if set(dec) != set(want):
    bad.append("decisions for %s" % sorted(dec))
print("# %d records, %d problems" % (len(want), len(bad)))
for b in bad:
    print("# " + b)
sys.exit(1 if bad else 0)
PY
}

$PY "$ROOT/spec/e2e/profile_reader.py" "$BOOTSTRAP" "$T/inbox.json" inbox || die "cannot read inbox"

run_inbox auto auto
check "auto: each format is triaged by its innermost exception class, one outcome per record" audit auto '{
 "spring": ["bug", "NullPointerException", "dlq"],
 "connect": ["poison", "SerializationException", "quarantine"],
 "streams": ["bug", "NullPointerException", "dlq"],
 "share": ["other", "recorded", "dlq"],
 "xdlq": ["duplicate", "DuplicateKeyException", "ignore"],
 "errgate": ["downstream", "http_503", "dlq"],
 "plain": ["unreadable", "inbox_unrecognized", "quarantine"]}'
# an ignore in inbox mode is accepted loss, recorded durably in the inbox's
# lifecycle topic (inbox.state, keyed by the item id) with its reason: the
# DLQ commands then count it resolved
xoff=$($PY -c 'import json,sys; print([r["offset"] for r in json.load(open(sys.argv[1])) if r["key"] == "xdlq"][0])' "$T/inbox.json")
state=$(kcat -C -b "$BOOTSTRAP" -t inbox.state -e -q -f '%k %s\n' 2>/dev/null)
printf '%s\n' "$state" | sed 's/^/# /'
check "the ignored record is accepted-loss in inbox.state, by the policy, with its reason" $PY -c '
import json, sys
rows = [l.split(" ", 1) for l in sys.argv[1].splitlines() if l]
ok = len(rows) == 1 and rows[0][0] == "inbox/0/" + sys.argv[2]
v = json.loads(rows[0][1]) if ok else {}
sys.exit(0 if ok and v.get("status") == "accepted-loss" and v.get("reason") and v.get("by", "").startswith("policy ") else 1)' "$state" "$xoff"
stats=$("$EG" dlq stats inbox -b "$BOOTSTRAP" --by state 2>&1)
printf '%s\n' "$stats" | sed 's/^/# /'
check "dlq stats --by state counts it accepted-loss" grep -Eq '^accepted-loss +1( |$)' <<<"$stats"

check "the multi-line Spring message: header-safe in error.message, whole in the carried Spring header" $PY -c '
import json, sys
r = [r for r in json.load(open(sys.argv[1])) if r["key"] == "spring"][0]
m = r["errgate"]["error.message"]
orig = [bytes.fromhex(v).decode() for n, v in r["headers"] if n == "kafka_dlt-exception-message"]
print("# %r" % m)
sys.exit(0 if orig and "\n" in orig[0] and m == orig[0].replace("\n", " ") else 1)' "$T/auto.lanes.json"

check "a normalized record keeps its foreign birth place as original.* (Spring binary, Connect, Streams, share group)" $PY -c '
import json, sys
rows = {r["key"]: r["errgate"] for r in json.load(open(sys.argv[1]))}
want = {"spring": ("orders", "2", "4711", "orders-service"), "connect": ("orders", "1", "99", "auto"), "streams": ("orders", "0", "12", "auto"),
        "share": ("orders", "3", "77", "orders-share"), "errgate": ("orders", "0", "5", "auto"),
        "plain": ("inbox", "0", "6", "auto")}
bad = []
for k, (t, p, o, g) in want.items():
    e = rows.get(k, {})
    got = (e.get("original.topic"), e.get("original.partition"), e.get("original.offset"), e.get("original.consumer.group"))
    if got != (t, p, o, g):
        bad.append("%s: %r" % (k, got))
ts = rows.get("spring", {}).get("original.timestamp")
if ts != "2026-01-01T00:00:00.000Z":
    bad.append("spring timestamp %r" % ts)
print("# " + ("; ".join(bad) if bad else "all as recorded"))
sys.exit(1 if bad else 0)' "$T/auto.lanes.json"

# what a policy sees besides code and message: the format, the outer
# exception class, the original coordinates, a share group's delivery count
inbox_config "$T/fields.lua" fields auto
sed -i "s|inbox_triage.lua|inbox_fields.lua|" "$T/fields.lua"
start_gateway fields "$T/fields.lua"
wait_drained fields inbox 60 || not_ok "fields: lag $(lag fields inbox)"
stop_gateway "$GW_PID"
$PY "$ROOT/spec/e2e/profile_reader.py" "$BOOTSTRAP" "$T/fields.lanes.json" inbox.fields.dlq || die "cannot read inbox.fields.dlq"
check "the policy sees failure.format, .exception, .original and .delivery_count" $PY -c '
import json, sys
got = {r["key"]: r["errgate"]["error.message"] for r in json.load(open(sys.argv[1]))}
want = {
 "spring": "format=spring exception=org.springframework.kafka.listener.ListenerExecutionFailedException original=orders/2/4711@1767225600000 group=orders-service delivery=nil",
 "connect": "format=connect exception=org.apache.kafka.common.errors.SerializationException original=orders/1/99@nil group=nil delivery=nil",
 "streams": "format=streams exception=java.lang.NullPointerException original=orders/0/12@nil group=nil delivery=nil",
 "share": "format=share-group exception=nil original=orders/3/77@nil group=orders-share delivery=5",
 "xdlq": "format=x-dlq-metadata exception=com.acme.DuplicateKeyException original=orders/nil/nil@1767225600000 group=billing delivery=nil",
 "errgate": "format=errgate exception=nil original=orders/0/5@nil group=nil delivery=nil",
 "plain": "format=nil exception=nil original=nil/nil/nil@nil group=nil delivery=nil"}
bad = ["%s: %r" % (k, got.get(k)) for k in want if got.get(k) != want[k]]
for b in bad: print("# " + b)
sys.exit(1 if bad else 0)' "$T/fields.lanes.json"

run_inbox conn connect
check "connect: only the Connect record is read; the others are unrecognized" audit conn '{
 "spring": ["unreadable", "inbox_unrecognized", "quarantine"],
 "connect": ["poison", "SerializationException", "quarantine"],
 "streams": ["unreadable", "inbox_unrecognized", "quarantine"],
 "share": ["unreadable", "inbox_unrecognized", "quarantine"],
 "xdlq": ["unreadable", "inbox_unrecognized", "quarantine"],
 "errgate": ["unreadable", "inbox_unrecognized", "quarantine"],
 "plain": ["unreadable", "inbox_unrecognized", "quarantine"]}'

for f in spring:spring:NullPointerException streams:streams:NullPointerException share-group:share:recorded \
         x-dlq-metadata:xdlq:DuplicateKeyException errgate:errgate:http_503; do
  fmt=${f%%:*}; rest=${f#*:}; key=${rest%%:*}; code=${rest#*:}
  g=g$(echo "$fmt" | tr -dc a-z)
  run_inbox "$g" "$fmt"
  check "$fmt: its record is read (code $code), the others are unrecognized" $PY -c '
import json, sys
log, key, code = sys.argv[1], sys.argv[2], sys.argv[3]
src = {r["offset"]: r["key"] for r in json.load(open(sys.argv[4]))}
dec = {}
for line in open(log):
    try: e = json.loads(line)
    except ValueError: continue
    if e.get("msg") == "decision" or e.get("event") == "decision": dec[src[e["offset"]]] = e["code"]
bad = {k: c for k, c in dec.items() if c != (code if k == key else "inbox_unrecognized")}
print("# %r" % dec if bad else "# 7 decisions as expected")
sys.exit(0 if len(dec) == 7 and not bad else 1)' "$T/$g.err" "$key" "$code" "$T/inbox.json"
done
echo "1..$TESTNO"
exit $FAILED
