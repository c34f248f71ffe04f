#!/usr/bin/env bash
# test_envelope.sh — the dead-letter envelope (issue 32 item 2, DESIGN §4):
# every lane record says which application and stage failed it, its schema
# (configured name, and the id of a Confluent wire-format payload), a
# fingerprint that groups the copies of one bug, whether a replay can help,
# the class's remediation hint from the policy, when it first and last
# failed, and on rung records how many steps the ladder has and when the
# next attempt is due. Records of four kinds go through a real gateway
# (policy spec/fixtures/policies/envelope.lua, a Lua target that fails them
# by key): permanent (400, a message naming the record), permanent in wire
# format (magic byte 0, schema id 300), transient (503 with a message whose
# counter and address change at every attempt) climbing two rungs (1s, 2s)
# to the DLQ, and semantic (422, quarantine, a class without a hint). Each header is checked on each record
# (python3-confluent-kafka, raw bytes), then read back through `dlq tail
# --json`, grouped by `dlq stats --by fingerprint|stage|app|schema|retryable`
# and selected with `replay --where` on the fingerprint; copies of lane
# records (a crash's duplicates) are counted once. The Connect profile
# names the application as its connector.
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"

start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2 --topic src.retry.1s:2 --topic src.retry.2s:2
cat >"$T/target.lua" <<'LUA'
local seen = {}
return function(record)
  local k = record.key
  if k:find("^perm") or k:find("^wire") then return { status = 400, message = "cannot store order " .. k } end
  if k:find("^tr") then
    seen[k] = (seen[k] or 0) + 1
    return { status = 503, message = "transient failure " .. seen[k] .. "/1000 from 10.0.0." .. #k + seen[k] .. ":8080" }
  end
  if k:find("^sem") then return { status = 422, message = "amount 'x" .. #k .. "' is not a number" } end
end
LUA
T0=$(date +%s%3N)
$PY - "$BOOTSTRAP" <<'PY' || die "cannot produce the records"
import json, sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "acks": "all"})
for i in range(6):
    p.produce("src", key=b"perm-%d" % i, value=json.dumps({"id": "perm-%d" % i, "mode": "permanent"}).encode(),
              partition=i % 2)
for i in range(4):  # Confluent wire format: magic 0, schema id 300, then an Avro-ish body
    p.produce("src", key=b"wire-%d" % i, value=b"\x00\x00\x00\x01\x2c\x02\x06abc" + bytes([48 + i]), partition=i % 2)
for i in range(4):
    p.produce("src", key=b"tr-%d" % i, value=json.dumps({"id": "tr-%d" % i, "mode": "transient-1000"}).encode(),
              partition=i % 2)
for i in range(3):
    p.produce("src", key=b"sem-%d" % i, value=json.dumps({"id": "sem-%d" % i, "mode": "semantic"}).encode(),
              partition=i % 2)
p.flush(10)
PY

cat >"$T/gw.lua" <<CFG
return {
  group = "env",
  app = { name = "orders-app", version = "2.3.1" },
  source = { topics = { "src" }, ordering = "none", schema = "orders-value" },
  target = { lua = "$T/target.lua" },
  policy = "$ROOT/spec/fixtures/policies/envelope.lua",
  metrics = { stage = "enrich" },
  lanes = { profiles = { "connect" } },
  commit_interval = 200,
  shutdown_timeout = 5000,
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
}
CFG
start_gateway gw "$T/gw.lua"
dlq_count() { [ "$("$EG" dlq stats src.dlq -b "$BOOTSTRAP" 2>/dev/null | awk '$1=="total"{print $2}')" = 14 ]; }
wait_for 40 dlq_count || die "the DLQ did not reach 14 items: $("$EG" dlq stats src.dlq -b "$BOOTSTRAP" 2>&1 | tail -3)"
wait_drained env src 30 && ok "all source records committed" || not_ok "lag $(lag env src)"
T1=$(date +%s%3N)
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
$PY "$ROOT/spec/e2e/ladder_lanes.py" "$BOOTSTRAP" "$T/lanes.jsonl" src.dlq src.quarantine src.retry.1s src.retry.2s ||
  die "cannot read the lanes"

check "every header present and right on every lane record" $PY - "$T/lanes.jsonl" "$T0" "$T1" <<'PY'
import json, re, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
t0, t1 = int(sys.argv[2]), int(sys.argv[3])
bad = []
def want(c, what, r):
    if not c:
        bad.append("%s[%d]@%d %s: %s" % (r["topic"], r["partition"], r["offset"], r["key"], what))
by = {}
for r in recs:
    h = r["headers"]
    by.setdefault((r["topic"], r["key"].split("-")[0]), []).append(r)
    want(h.get("errgate.app") == "orders-app", "app %r" % h.get("errgate.app"), r)
    want(h.get("errgate.app-version") == "2.3.1", "app-version", r)
    want(h.get("errgate.stage") == "enrich", "stage %r" % h.get("errgate.stage"), r)
    want(h.get("errgate.schema") == "orders-value", "schema", r)
    want(re.fullmatch(r"[0-9a-f]{16}", h.get("errgate.fingerprint", "")), "fingerprint %r" % h.get("errgate.fingerprint"), r)
    ff, lf = h.get("errgate.first-failure", ""), h.get("errgate.last-failure", "")
    want(ff.isdigit() and lf.isdigit() and t0 <= int(ff) <= int(lf) <= t1, "first %r <= last %r within the run" % (ff, lf), r)
    want(h.get("__connect.errors.connector.name") == "orders-app", "connect connector.name", r)
    for n, c in r["header_counts"].items():
        want(c == 1 or not n.startswith("errgate."), "%s written %d times" % (n, c), r)
    kind = r["key"].split("-")[0]
    want((h.get("errgate.schema-id") == "300") == (kind == "wire"), "schema-id %r" % h.get("errgate.schema-id"), r)
    rung = r["topic"].startswith("src.retry.")
    want(("errgate.max-attempts" in h) == rung and ("errgate.due" in h) == rung, "max-attempts/due only on rungs", r)
    if rung:
        delay = 1000 if r["topic"].endswith("1s") else 2000
        due = int(h.get("errgate.due", "0"))
        want(h.get("errgate.max-attempts") == "2", "max-attempts %r" % h.get("errgate.max-attempts"), r)
        want(delay - 50 <= due - r["timestamp"] <= delay + 1000, "due %d ms after the record's timestamp" % (due - r["timestamp"]), r)
        want(h.get("errgate.retryable") == "true", "a rung record is retryable", r)
    if kind in ("perm", "wire"):
        want(r["topic"] == "src.dlq", "dead-lettered", r)
        want(h.get("errgate.retryable") == "false", "permanent: retryable false", r)
        want(h.get("errgate.hint") == "fix the record (schema, required fields), then replay it", "permanent hint", r)
    if kind == "tr" and r["topic"] == "src.dlq":
        want(h.get("errgate.retryable") == "true" and h.get("errgate.reason") == "exhausted", "exhausted transient: retryable", r)
        want(h.get("errgate.hint") == "the service was unavailable: replay once it is back", "transient hint", r)
        want(int(lf) - int(ff) >= 2500, "first and last failure %d ms apart (the rungs' 1 s + 2 s)" % (int(lf) - int(ff)), r)
    if kind == "sem":
        want(r["topic"] == "src.quarantine" and "errgate.hint" not in h and h.get("errgate.retryable") == "false",
             "semantic: quarantined, no hint, not retryable", r)
# the copies of one bug share a fingerprint: every transient record failed with
# another counter ("transient failure N/1000"), on every stage
fps = lambda t, k: {r["headers"].get("errgate.fingerprint") for r in by.get((t, k), [])}
want(len(by.get(("src.dlq", "tr"), [])) == 4 and len(by.get(("src.retry.1s", "tr"), [])) == 4 and
     len(by.get(("src.retry.2s", "tr"), [])) == 4, "4 transient records on each rung and in the DLQ",
     {"topic": "-", "partition": 0, "offset": 0, "key": "tr"})
tr = fps("src.dlq", "tr") | fps("src.retry.1s", "tr") | fps("src.retry.2s", "tr")
perm = fps("src.dlq", "perm")
want(len(tr) == 1 and len(perm) == 1 and tr != perm and len(fps("src.quarantine", "sem")) == 1,
     "one fingerprint per bug: transient %r, permanent %r" % (tr, perm), {"topic": "-", "partition": 0, "offset": 0, "key": "-"})
# first-failure is carried from the first rung to the DLQ
first = {}
for r in recs:
    if r["key"].startswith("tr-"):
        first.setdefault(r["key"], set()).add(r["headers"].get("errgate.first-failure"))
want(all(len(v) == 1 for v in first.values()), "first-failure carried unchanged along the ladder %r" % first,
     {"topic": "-", "partition": 0, "offset": 0, "key": "-"})
for b in bad[:20]:
    print("# " + b)
print("# %d lane records checked" % len(recs))
sys.exit(1 if bad else 0)
PY

# dlq tail --json shows the envelope
"$EG" dlq tail src.dlq -b "$BOOTSTRAP" --json -n 100 >"$T/tail.jsonl" 2>"$T/tail.err"
check "dlq tail --json shows the envelope of every record" $PY - "$T/tail.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ok = len(rows) == 14
for r in rows:
    ok = ok and r["app"] == "orders-app" and r["app_version"] == "2.3.1" and r["stage"] == "enrich"
    ok = ok and r["schema"] == "orders-value" and len(r["fingerprint"]) == 16 and isinstance(r["retryable"], bool)
    ok = ok and isinstance(r["first_failure"], int) and r["first_failure"] <= r["last_failure"]
    ok = ok and r["hint"] and r["max_attempts"] is None and r["due"] is None
    ok = ok and (r["schema_id"] == 300) == ("wire" in r["message"])
ok = ok and sum(1 for r in rows if r["schema_id"] == 300) == 4
sys.exit(0 if ok else 1)
PY

# dlq stats --by each envelope field
stats_by() { "$EG" dlq stats src.dlq -b "$BOOTSTRAP" --by "$1" 2>&1; }
out=$(stats_by retryable)
check "stats --by retryable: 10 false, 4 true" grep -qE '^false +10 .*' <<<"$out"
grep -qE '^true +4 ' <<<"$out" && ok "stats --by retryable: 4 true" || not_ok "stats --by retryable: $out"
out=$(stats_by fingerprint)
check "stats --by fingerprint: one row of 4 (transient), one of 6 (permanent JSON), one of 4 (wire format)" \
  bash -c '[ "$(grep -cE "^[0-9a-f]{16} " <<<"$1")" = 3 ] && grep -qE "^[0-9a-f]{16} +6 " <<<"$1" &&
           [ "$(grep -cE "^[0-9a-f]{16} +4 " <<<"$1")" = 2 ]' _ "$out"
out=$(stats_by app); check "stats --by app: orders-app 14" grep -qE '^orders-app +14 ' <<<"$out"
out=$(stats_by stage); check "stats --by stage: enrich 14" grep -qE '^enrich +14 ' <<<"$out"
out=$(stats_by schema); check "stats --by schema: orders-value 14" grep -qE '^orders-value +14 ' <<<"$out"
out=$(stats_by header:errgate.schema-id)
check "stats --by header:errgate.schema-id: 300 for the 4 wire-format records" grep -qE '^300 +4 ' <<<"$out"
out=$(stats_by nonsense 2>&1); rc=$?
check "an unknown --by is a usage error naming the fields" exits_with "$rc" 2 'fingerprint, stage, app, schema, retryable' "$out"

# replay --where selects by fingerprint
fp=$($PY -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["reason"] == "exhausted": print(r["fingerprint"]); break' "$T/tail.jsonl")
out=$("$EG" replay -b "$BOOTSTRAP" --from src.dlq --to src --dry-run \
  --where "headers['errgate.fingerprint'] == '$fp'" 2>&1)
check "replay --where on the fingerprint selects the 4 transient records" grep -q 'matched 4  would replay 4 ' <<<"$out"

# a crash's copies (the same lane records written again) are one item each
$PY - "$BOOTSTRAP" <<'PY' || die "cannot copy lane records"
import sys
from confluent_kafka import Consumer, Producer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "copier", "enable.auto.commit": False})
c.assign([TopicPartition("src.dlq", p, 0) for p in (0, 1)])
got = []
while len(got) < 3:
    m = c.poll(5)
    if m is None: break
    if not m.error(): got.append(m)
p = Producer({"bootstrap.servers": sys.argv[1]})
for m in got:
    p.produce("src.dlq", key=m.key(), value=m.value(), headers=m.headers(), partition=m.partition())
p.flush(10)
c.close()
PY
out=$(stats_by fingerprint)
check "duplicates counted once: still 14 items, 3 copies folded" \
  bash -c 'grep -qE "^total +14 " <<<"$1" && grep -q "^copies folded: 3 " <<<"$1"' _ "$out"

# governance: owner, severity and a note on an item (dlq annotate), signed
# with the deployment's control key like the approvals
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/ctl.key"
ID=$($PY -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["reason"] == "exhausted": print(r["id"]); break' "$T/tail.jsonl")
ann() { "$EG" dlq annotate src.dlq -b "$BOOTSTRAP" --key-file "$T/ctl.key" "$@" 2>&1; }
out=$(ann --id "$ID" --owner team-payments --severity high --note "provider outage, INC-42" --by alice); rc=$?
check "dlq annotate writes owner, severity and note (rc $rc)" \
  bash -c '[ "$1" = 0 ] && grep -q "^annotated $2 in src.dlq.state: .*\"owner\":\"team-payments\",\"severity\":\"high\"" <<<"$3"' _ "$rc" "$ID" "$out"
out=$(ann --id "$ID" --note "replay after 18:00" --by bob); rc=$?
check "a second annotation with a note alone keeps owner and severity (rc $rc)" \
  bash -c '[ "$1" = 0 ] && grep -q "\"owner\":\"team-payments\",\"severity\":\"high\",\"note\":\"replay after 18:00\".*\"by\":\"bob\"" <<<"$2"' _ "$rc" "$out"
out=$(ann --id src/9/999 --owner x); rc=$?
check "an id no record carries is refused (exit 2)" exits_with "$rc" 2 "no record of src.dlq carries that id" "$out"
out=$(ann --id "$ID" --severity urgent); rc=$?
check "an unknown severity is a usage error" exits_with "$rc" 2 "not one of critical, high, medium, low, info" "$out"
out=$(ann --id "$ID" --note $'two\nlines'); rc=$?
check "a note with control characters is a usage error" exits_with "$rc" 2 "without control characters" "$out"
# a forged annotation: produced by anyone, not signed with the key
other=$(printf '%s/0/0' src)
[ "$other" != "$ID" ] || other=src/1/0
$PY "$ROOT/spec/e2e/ctl_sign.py" "$BOOTSTRAP" src.dlq.state state "$T/ctl.key" "annotation:$other" \
  '{"annotation":true,"owner":"mallory","severity":"low"}' none >/dev/null || die "cannot produce the forged annotation"
"$EG" dlq tail src.dlq -b "$BOOTSTRAP" --json -n 100 --key-file "$T/ctl.key" >"$T/tail2.jsonl" 2>"$T/tail2.err"
check "dlq tail --json shows the signed annotation on its item only, the forged one ignored with the key" \
  $PY - "$T/tail2.jsonl" "$ID" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
mine = [r for r in rows if r["id"] == sys.argv[2]]
others = [r for r in rows if r["id"] != sys.argv[2]]
ok = len(mine) == 1 and (mine[0]["owner"], mine[0]["severity"], mine[0]["note"]) == ("team-payments", "high", "replay after 18:00")
ok = ok and all(r["owner"] is None and r["severity"] is None and r["note"] is None for r in others)
sys.exit(0 if ok else 1)
PY
out=$("$EG" dlq stats src.dlq -b "$BOOTSTRAP" --by owner --key-file "$T/ctl.key" 2>&1)
check "dlq stats --by owner: team-payments 1, unowned 13" \
  bash -c 'grep -qE "^team-payments +1 " <<<"$1" && grep -qE "^- +13 " <<<"$1" && ! grep -q mallory <<<"$1"' _ "$out"
out=$("$EG" dlq stats src.dlq -b "$BOOTSTRAP" --by owner 2>&1)
check "without the key the unsigned annotation counts (unauthenticated): mallory 1" grep -qE '^mallory +1 ' <<<"$out"
out=$("$EG" dlq stats src.dlq -b "$BOOTSTRAP" --by severity --key-file "$T/ctl.key" 2>&1)
check "dlq stats --by severity: high 1" grep -qE '^high +1 ' <<<"$out"
"$EG" dlq stats src.dlq -b "$BOOTSTRAP" --by state --key-file "$T/ctl.key" >"$T/state.out" 2>&1
check "annotations change no item's state: 14 open" grep -qE '^open +14 ' "$T/state.out"

echo "1..$TESTNO"
exit $FAILED
