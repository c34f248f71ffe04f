#!/usr/bin/env bash
# test_http_hostile.sh — guarantee 9 against a hostile HTTP target
# (spec/e2e/hostile_http.py), every framing at once at concurrency 8: interim
# 1xx responses, chunked, HTTP/1.0 close-delimited, a 400 MiB body, slow
# headers, a connection closed while idle after its answer are answers; an unsolicited extra response, a body longer than its
# Content-Length, bytes after the last chunk, a malformed status line, a 204
# with a body and a reset mid-body fail their own request (kind connect) and their connection is
# never used again. Accounting: every record the server rejected is
# dead-lettered (with the JSON body's error.message), every record it
# accepted succeeded, nothing is credited to another record, committed = end,
# the gateway stays up and its peak RSS stays small.
source "$(dirname "$0")/lib.sh"

start_broker --topic src:4 --topic src.dlq:4 --topic src.quarantine:4
bg hostile $PY "$ROOT/spec/e2e/hostile_http.py" "$T/ok.log" "$T/events.jsonl"
wait_for 10 grep -q '^listening=' "$T/hostile.out" || die "hostile server did not start"
HANDLER_URL="http://$(sed -n 's/^listening=//p' "$T/hostile.out")/"

# 12 framings x 2 verdicts x 6, plus 60 plain records, interleaved
$PY - >"$T/records.tsv" <<'PY'
import random
random.seed(7)
modes = ["interim", "chunked", "http10", "huge", "slow", "idleclose", "extra", "overlong", "chunkextra", "garbage", "204body", "reset"]
recs = [(h, v) for h in modes for v in ("ok", "permanent") for _ in range(6)]
recs += [("plain", "ok")] * 40 + [("plain", "permanent")] * 20
random.shuffle(recs)
for i, (h, v) in enumerate(recs):
    print('k%d\t{"id":"h%d","mode":"%s","hostile":"%s"}' % (i, i, v, h))
PY
produce src <"$T/records.tsv"
write_config "$T/gw.lua" hostile none
sed -i 's/concurrency = 16/concurrency = 8/' "$T/gw.lua"
start_gateway gw "$T/gw.lua"
if wait_drained hostile src 180; then ok "every record finished: committed = end"; else not_ok "lag $(lag hostile src)"; fi
check "the gateway is alive" kill -0 "$GW_PID"
rss_kb=$(awk '/^VmHWM/{print $2}' "/proc/$GW_PID/status")
check "peak RSS stays bounded with a 400 MiB response in play (${rss_kb} kB < 150 MiB)" test "${rss_kb:-999999}" -lt 153600
stop_gateway "$GW_PID"
check "SIGTERM: exit 0 (exit $RC)" test "$RC" = 0

account hostile 4 "$T/gw.err"
$PY - "$T/src.json" "$T/gw.err" "$T/events.jsonl" "$T/dlq.json" <<'PY' || FAILED=1
import json, sys
src = {}
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = json.loads(line)
        v = json.loads(r["payload"])
        src["%s/%d/%d" % (r["topic"], r["partition"], r["offset"])] = v
failed_kinds = {}
for line in open(sys.argv[2]):
    e = json.loads(line)
    if e.get("event") == "decision" and e.get("kind") in ("connect", "timeout"):
        failed_kinds.setdefault(src[e["id"]]["id"], set()).add(e["kind"])
ILLEGAL = {"extra", "overlong", "chunkextra", "garbage", "204body", "reset"}
n = bad = 0
def check(c, d):
    global n, bad
    n += 1; bad += not c
    print(("ok" if c else "not ok") + " %d - %s" % (n, d))
illegal = [v for v in src.values() if v["hostile"] in ILLEGAL]
legal = [v for v in src.values() if v["hostile"] not in ILLEGAL]
missed = [(v["id"], v["hostile"]) for v in illegal if failed_kinds.get(v["id"]) != {"connect"}]
check(not missed, "every framing that cannot belong to its request failed that request with kind connect "
      "(%d records; wrong: %s)" % (len(illegal), missed[:5]))
spurious = [(v["id"], v["hostile"], sorted(failed_kinds[v["id"]])) for v in legal if v["id"] in failed_kinds]
check(not spurious, "1xx, chunked, HTTP/1.0, huge, slow and idle-closed answers are taken as they are (%d records; failed: %s)"
      % (len(legal), spurious[:5]))
events = [json.loads(l) for l in open(sys.argv[3])]
reused = [e for e in events if e["event"] == "reused"]
check(not reused, "no connection is used again after an answer that cannot belong to its request (%s)" % reused[:3])
idle = [e for e in events if e["event"] == "idle_closed"]
check(len(idle) == 12, "the server closed 12 idle connections after their answers (%d)" % len(idle))
huge = [e for e in events if e["event"] == "huge_stopped"]
check(len(huge) == 12 and max(e["sent"] for e in huge) < (8 << 20),
      "a 400 MiB body is not read to its end (%d stopped, at most %d bytes sent)" % (len(huge), max([e["sent"] for e in huge] or [0])))
msgs = set()
for line in open(sys.argv[4]):
    if line.startswith("{"):
        r = json.loads(line)
        h = r.get("headers") or []
        msgs.add(dict(zip(h[::2], h[1::2])).get("error.message"))
check(msgs == {"rejected by the hostile server"},
      "the JSON error body's error.message is the DLQ record's error.message (%s)" % sorted(map(str, msgs))[:3])
sys.exit(1 if bad else 0)
PY
