#!/usr/bin/env bash
# test_inbox_hostile.sh — foreign DLQ records with hostile header values
# (hostile_dlq.py: class names that are no class names, control bytes, NULs,
# a 400 KiB message, repeated headers, NULL and empty values, numbers out of
# range, a forged errgate code, JSON-breaking bytes) through every reader of
# foreign DLQs: inbox mode (each record exactly one decision, the code by
# the rule, the group committed to the end, every log line JSON with the
# fields errgate wrote), dlq tail (one line per record, no raw control
# byte, no forged column), dlq tail --json, dlq stats and policy test
# --from-topic (a row per record, no crash).
source "$(dirname "$0")/lib.sh"

start_broker --topic hostile:1
WANT=$($PY "$ROOT/spec/e2e/hostile_dlq.py" "$BOOTSTRAP" hostile) || die "cannot produce"
N=$($PY -c 'import json,sys; print(len(json.loads(sys.argv[1])))' "$WANT")
$PY "$ROOT/spec/e2e/profile_reader.py" "$BOOTSTRAP" "$T/src.json" hostile || die "cannot read hostile"

cat >"$T/gw.lua" <<CFG
return {
  group = "hostile",
  source = { topics = { "hostile" }, inbox = "auto" },
  policy = "$FIXTURES/inbox_triage.lua",
  commit_interval = 200,
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
}
CFG
start_gateway gw "$T/gw.lua"
if wait_drained hostile hostile 60; then ok "inbox: every hostile record committed (lag 0)"; else not_ok "inbox: lag $(lag hostile hostile)"; fi
stop_gateway "$GW_PID"
check "inbox: the gateway stopped cleanly (exit $RC)" [ "$RC" = 0 ]
$PY "$ROOT/spec/e2e/profile_reader.py" "$BOOTSTRAP" "$T/lanes.json" hostile.dlq hostile.quarantine || die "cannot read the lanes"
check "inbox: one decision per record, code by the rule, one lane record with that error.code; log lines are JSON" \
  $PY - "$T/gw.err" "$T/lanes.json" "$T/src.json" "$WANT" <<'PY'
import json, re, sys
log, lanes, src, want = open(sys.argv[1], "rb").read(), json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), json.loads(sys.argv[4])
key_of = {r["offset"]: r["key"] for r in src}
bad, dec = [], {}
for raw in log.splitlines():
    try:
        e = json.loads(raw)
    except ValueError:
        bad.append("not a JSON log line: %r" % raw[:120])
        continue
    if not isinstance(e, dict) or "level" in e and e["level"] == "fatal":
        bad.append("forged field: %r" % raw[:120])
    if e.get("msg") == "decision" or e.get("event") == "decision":
        dec.setdefault(key_of[e["offset"]], []).append(e)
for k, code in want.items():
    d = dec.get(k, [])
    if len(d) != 1 or d[0]["code"] != code:
        bad.append("%s: decisions %r" % (k, [x.get("code") for x in d]))
    w = [r for r in lanes if r["key"] == k]
    if len(w) != 1 or w[0]["errgate"].get("error.code") != code:
        bad.append("%s: lane records %r" % (k, [r["errgate"].get("error.code") for r in w]))
    for r in w:
        for name in ("error.code", "original.topic", "original.partition", "original.offset"):
            v = r["errgate"].get(name)
            if v is not None and not re.match(r"^[A-Za-z0-9._$-]+$", v):
                bad.append("%s: %s = %r" % (k, name, v))
    for r in w:
        m = r["errgate"].get("error.message") or ""
        if re.search(r"[\x00-\x1f\x7f]", m) or len(m.encode()) > 1100:
            bad.append("%s: error.message %r..." % (k, m[:60]))
rows = {r["key"]: r["errgate"] for r in lanes}
# a topic that is no topic name is no origin: the inbox's own coordinates
checks = {"badtopic": ("hostile", "0"), "dup": ("two", None), "range": ("orders", None)}
for k, (t, p) in checks.items():
    got = (rows.get(k, {}).get("original.topic"), rows.get(k, {}).get("original.partition"))
    if got[0] != t or (p is not None and got[1] != p) or (k == "range" and got[1] is not None):
        bad.append("%s: original %r" % (k, got))
print("# %d records, %d decided, %d problems" % (len(want), len(dec), len(bad)))
for b in bad[:20]:
    print("# " + b)
sys.exit(1 if bad else 0)
PY

"$EG" dlq tail hostile -b "$BOOTSTRAP" -n 100 >"$T/tail.out" 2>"$T/tail.err"; rc=$?
check "dlq tail: exit 0, a line per record (rc $rc)" [ "$rc/$(wc -l <"$T/tail.out")" = "0/$N" ]
check "dlq tail: no raw control byte, each line exactly its columns (no forged name=value), codes by the rule" \
  $PY - "$T/tail.out" "$WANT" <<'PY'
import json, re, sys
want, bad = json.loads(sys.argv[2]), []
lines = open(sys.argv[1], "rb").read().split(b"\n")[:-1]
cols = ["class", "code", "reason", "retry.count", "attempts", "message"]
for l in lines:
    if re.search(rb"[\x00-\x1f\x7f]", l):
        bad.append("control byte: %r" % l[:100])
    t = l.decode("utf-8", "replace")
    names = re.findall(r" ([a-z.]+)=", t.split(' message="')[0] + ' message=')
    if names != cols:
        bad.append("columns %r in %r" % (names, t[:160]))
codes = sorted(re.search(r" code=(\S+) ", l.decode("utf-8", "replace")).group(1) for l in lines)
# errgate's own record shows its header as recorded (escaped), not the inbox reading
exp = sorted(c if k != "errcode" else "X\\nreason=forged" for k, c in want.items())
exp = sorted("-" if c == "recorded" else c for c in exp)
if codes != exp:
    bad.append("codes %r, want %r" % (codes, exp))
print("# %d lines, %d problems" % (len(lines), len(bad)))
for b in bad[:10]:
    print("# " + b)
sys.exit(1 if bad else 0)
PY
"$EG" dlq tail hostile -b "$BOOTSTRAP" -n 100 --json >"$T/tailj.out" 2>&1
check "dlq tail --json: one JSON object per record" $PY -c '
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if len(objs) == int(sys.argv[2]) and all(isinstance(o, dict) for o in objs) else 1)' "$T/tailj.out" "$N"
"$EG" dlq stats hostile -b "$BOOTSTRAP" --by code >"$T/stats.out" 2>&1; rc=$?
check "dlq stats --by code: every row one token, the total adds up (rc $rc)" $PY - "$T/stats.out" "$N" <<'PY'
import re, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
rows = rows[:[r[0] for r in rows].index("total") + 1]
body = [r for r in rows[1:] if r and r[0] != "total"]
tot = [r for r in rows if r and r[0] == "total"]
ok = all(len(r) == len(rows[0]) and r[1].isdigit() for r in body) and tot and sum(int(r[1]) for r in body) == int(tot[0][1]) == int(sys.argv[2])
print("# %r" % [r[:2] for r in body])
sys.exit(0 if ok else 1)
PY
create_topic hostile-out 1
"$EG" replay -b "$BOOTSTRAP" --from hostile --to hostile-out --dry-run >"$T/dry.out" 2>"$T/dry.err"; rc=$?
check "replay --dry-run: a table row per record, each exactly its 7 cells, no raw control byte (rc $rc)" \
  $PY - "$T/dry.out" "$N" <<'PY'
import re, sys
raw = open(sys.argv[1], "rb").read()
rows = [l.split() for l in raw.decode("utf-8", "replace").splitlines() if l.startswith("hostile/")]
bad = [r for r in rows if len(r) != 7 and not (len(r) == 8 and r[5:7] == ["by", "key"])]
print("# %d rows, %d malformed %r" % (len(rows), len(bad), bad[:2]))
sys.exit(0 if len(rows) == int(sys.argv[2]) and not bad and not re.search(rb"[\x00-\x09\x0b-\x1f\x7f]", raw) else 1)
PY
"$EG" replay -b "$BOOTSTRAP" --from hostile --to hostile-out --max-replays 0 >"$T/refused.out" 2>"$T/refused.err"; rc=$?
check "replay refusing every record names each on one line, no raw control byte (rc $rc)" \
  $PY -c 'import re, sys; raw = open(sys.argv[1], "rb").read(); n = raw.count(b"errgate replay: refused ")
print("# %d refused lines" % n); sys.exit(0 if n == int(sys.argv[2]) and all(l.startswith(b"errgate replay: ") for l in raw.splitlines()) and not re.search(rb"[\x00-\x09\x0b-\x1f\x7f]", raw) else 1)' \
  "$T/refused.err" "$N"
"$EG" policy test "$FIXTURES/inbox_triage.lua" --from-topic hostile -b "$BOOTSTRAP" >"$T/ptest.out" 2>"$T/ptest.err"; rc=$?
check "policy test --from-topic: a row per record, no crash (rc $rc)" \
  bash -c '[ "$1" -le 1 ] && grep -q ": $2 records, " "$3"' _ "$rc" "$N" "$T/ptest.out"
exit $FAILED
