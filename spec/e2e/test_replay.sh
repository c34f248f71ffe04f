#!/usr/bin/env bash
# test_replay.sh — `errgate replay` on the payment story (dlq_story.sh): the
# dry run counts exactly what the real replay then replays; replayed records
# carry key, value and headers with replay.from-dlq, retry.count=0 and
# errgate.replays; a rerun replays nothing; an interrupted replay resumed
# with the same group republishes nothing twice; --where selects exactly
# and refuses bad expressions before replaying anything; the loop guard
# refuses records replayed --max-replays times, through a real
# replay -> gateway -> DLQ loop, and --force overrides it. The lane is
# replayed again and again: past the first replays its items are
# `replayed`, so those runs pass --include-resolved (the lifecycle itself
# is test_dlq_approval's).
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/dlq_story.sh"

story 40
[ "$N_TRANSIENT" -ge 5 ] && [ "$N_PERMANENT" -ge 3 ] || die "the story needs transient and permanent records"
check "the DLQ holds exactly the transient and permanent records ($N_DLQ)" [ "$N_DLQ" = $((N_TRANSIENT + N_PERMANENT)) ]
create_topic src.replay 4
create_topic src.resume 4
create_topic src.where 4
create_topic manual.dlq 1
create_topic manual.out 1

# field NAME FILE: the number after NAME in the summary line of FILE.
field() { sed -n "s/.*[ :]$1 \([0-9][0-9]*\).*/\1/p" "$2" | tail -1; }
replay() { "$EG" replay -b "$BOOTSTRAP" "$@"; }
# expect DESC 'SHELL CONDITION': ok when the condition (evaluated here) holds.
expect() { local d=$1; shift; if eval "$*"; then ok "$d"; else not_ok "$d"; fi; }

# ---- dry run, then the real thing --------------------------------------------
replay --from src.dlq --to src.replay --class transient --since 1h --dry-run >"$T/dry.out" 2>"$T/dry.err"; rc=$?
would=$(field "would replay" "$T/dry.out")
check "dry run exits 0 (rc $rc)" [ "$rc" = 0 ]
check "dry run: would replay every transient record ($would of $N_TRANSIENT)" [ "$would" = "$N_TRANSIENT" ]
check "dry run: a table row per record, with lane and original coordinates, class and code" \
  [ "$(grep -cE '^src\.dlq/[0-3]/[0-9]+ +src/[0-3]/[0-9]+ +transient +http_503 +0 +by key +replay$' "$T/dry.out")" = "$N_TRANSIENT" ]
check "dry run: writes nothing" [ "$(count_topic src.replay)" = 0 ]
replay --from-topic src.dlq --to-topic src.replay --error-class transient --since 1h --dry-run >"$T/alias.out" 2>"$T/alias.err"; rc=$?
expect "--from-topic, --to-topic and --error-class are --from, --to and --class (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(field "would replay" "$T/alias.out")" = "$N_TRANSIENT" ] && cmp -s "$T/dry.out" "$T/alias.out"'
# group_of FILE: the progress group a replay printed on its first line.
group_of() { sed -n 's/^replay .* group \([^ ]*\).*/\1/p' "$1"; }
# uncommitted GROUP: GROUP has committed nothing on src.dlq.
uncommitted() {
  [ -n "$1" ] && "$EG" offsets -b "$BOOTSTRAP" -g "$1" src.dlq >"$T/offsets.txt" &&
    [ "$(awk '$1=="src.dlq" && $3 == -1' "$T/offsets.txt" | wc -l)" = 4 ]
}
group=$(group_of "$T/dry.out")
check "dry run: commits nothing (group $group)" uncommitted "$group"

sed "s|kafka = { |kafka = { [\"bootstrap.servers\"] = \"$BOOTSTRAP\", |" "$T/gw.lua" >"$T/conn.lua"
env -u ERRGATE_BOOTSTRAP "$EG" replay -c "$T/conn.lua" --from src.dlq --to src.replay --class transient --since 1h --dry-run \
  >"$T/dryc.out" 2>"$T/dryc.err"; rc=$?
expect "-c CONFIG: the same dry run through a gateway config's connection settings (rc $rc)" '[ "$rc" = 0 ] && cmp -s "$T/dry.out" "$T/dryc.out"'
replay --from src.dlq --to src.replay --class transient --since 1h >"$T/real.out" 2>"$T/real.err"; rc=$?
check "replay exits 0 (rc $rc)" [ "$rc" = 0 ]
check "replay uses the dry run's group" grep -q "group $group\$" "$T/real.out"
expect "replay replays exactly what the dry run counted ($(field replayed "$T/real.out") = $would)" \
  '[ "$(field replayed "$T/real.out")" = "$would" ] && [ "$(field failed "$T/real.out")" = 0 ]'
check "the target holds exactly those records" [ "$(count_topic src.replay)" = "$would" ]
hdr_dump src.dlq "$T/dlq.json"
hdr_dump src.replay "$T/replayed.json"
check "replayed records: key, value and headers kept; replay.from-dlq, replay.timestamp, retry.count=0, errgate.replays=1" \
  $PY - "$T/dlq.json" "$T/replayed.json" <<'PY'
import json, re, sys
lane = {"src.dlq/%d/%d" % (r["partition"], r["offset"]): r for r in map(json.loads, open(sys.argv[1]))}
out = [json.loads(l) for l in open(sys.argv[2])]
bad = 0
for r in out:
    h = r["headers"]
    src = lane.get(h.get("replay.from-dlq"))
    if not src:
        print("# no lane record for", h.get("replay.from-dlq")); bad += 1; continue
    sh = src["headers"]
    want = dict(sh); want.update({"retry.count": "0", "errgate.replays": "1"})
    got = {k: v for k, v in h.items() if k not in ("replay.from-dlq", "replay.timestamp")}
    if got != want: print("# headers differ:", sorted(set(got.items()) ^ set(want.items()))); bad += 1
    if r["key"] != src["key"] or r["payload"] != src["payload"]: print("# key/value changed"); bad += 1
    if sh.get("error.class") != "transient": print("# not transient:", sh.get("error.class")); bad += 1
    if not re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", h.get("replay.timestamp", "")): bad += 1
    for k in ("original.topic", "original.partition", "original.offset", "errgate.id", "errgate.history"):
        if k not in h: print("# lost", k); bad += 1
print("# %d replayed records checked" % len(out))
sys.exit(1 if bad or not out else 0)
PY
replay --from src.dlq --to src.replay --class transient --since 1h >"$T/again.out" 2>&1; rc=$?
expect "the same command again resumes at the end: nothing replayed twice (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(field replayed "$T/again.out")" = 0 ] && [ "$(count_topic src.replay)" = "$would" ]'

# ---- time filters and --limit ------------------------------------------------------
replay --from src.dlq --to src.replay --until 2001-01-01T00:00:00Z --dry-run >"$T/u1.out" 2>&1; rc=$?
expect "--until before the story matches nothing (rc $rc)" '[ "$rc" = 0 ] && [ "$(field matched "$T/u1.out")" = 0 ]'
replay --from src.dlq --to src.replay --until "$(date -u +%Y-%m-%dT%H:%M:%S.000Z)" --since 1h --dry-run >"$T/u2.out" 2>&1; rc=$?
expect "--since 1h --until now matches every record (rc $rc)" '[ "$rc" = 0 ] && [ "$(field matched "$T/u2.out")" = "$N_DLQ" ]'
create_topic src.limit 4
replay --from src.dlq --to src.limit --class permanent --limit 2 --group lim >"$T/l1.out" 2>&1; rc=$?
expect "--limit 2 replays 2 (rc $rc)" '[ "$rc" = 0 ] && [ "$(field replayed "$T/l1.out")" = 2 ] && [ "$(count_topic src.limit)" = 2 ]'
replay --from src.dlq --to src.limit --class permanent --group lim >"$T/l2.out" 2>&1; rc=$?
expect "the next run with the same group replays the rest (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(field replayed "$T/l2.out")" = $((N_PERMANENT - 2)) ] && [ "$(count_topic src.limit)" = "$N_PERMANENT" ]'

# ---- an interrupted replay resumes without republishing ------------------------
bg resume1 "$EG" replay -b "$BOOTSTRAP" --from src.dlq --to src.resume --rate 1 --group resume --include-resolved
p=$LASTPID
# one record a second: the kill lands mid-way even when polling kcat takes seconds on a loaded machine
wait_for 10 bash -c "[ \$(kcat -C -b '$BOOTSTRAP' -t src.resume -e -q -f 'x\n' 2>/dev/null | wc -l) -ge 1 ]"
kill -TERM "$p"; rc=0; wait "$p" || rc=$?
first=$(count_topic src.resume)
expect "SIGTERM mid-way: exit 1, says interrupted, $first of $N_DLQ sent (rc $rc)" \
  '[ "$rc" = 1 ] && grep -q "^interrupted" "$T/resume1.out" && [ "$first" -gt 0 ] && [ "$first" -lt "$N_DLQ" ]'
check "the interrupted run committed what it replayed" [ "$(field replayed "$T/resume1.out")" = "$first" ]
replay --from src.dlq --to src.resume --group resume --include-resolved >"$T/resume2.out" 2>&1; rc=$?
expect "the resumed run replays the rest ($(field replayed "$T/resume2.out") = $N_DLQ - $first, rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(field replayed "$T/resume2.out")" = $((N_DLQ - first)) ]'
hdr_dump src.resume "$T/resume.json"
check "every errgate.id of the lane is on the target exactly once" $PY - "$T/dlq.json" "$T/resume.json" <<'PY'
import collections, json, sys
want = collections.Counter(json.loads(l)["headers"]["errgate.id"] for l in open(sys.argv[1]))
got = collections.Counter(json.loads(l)["headers"]["errgate.id"] for l in open(sys.argv[2]))
extra = {k: v for k, v in got.items() if v != 1}
print("# %d ids, %d on target, repeated: %s" % (len(want), len(got), extra))
sys.exit(0 if got == want and all(v == 1 for v in want.values()) else 1)
PY

# after kill -9 nothing is lost (a few deliveries of the last commit interval may repeat)
bg resume9 "$EG" replay -b "$BOOTSTRAP" --from src.dlq --to src.where --rate 1 --group resume9 --include-resolved
p=$LASTPID
wait_for 10 bash -c "[ \$(kcat -C -b '$BOOTSTRAP' -t src.where -e -q -f 'x\n' 2>/dev/null | wc -l) -ge 1 ]"
kill -9 "$p"; wait "$p" 2>/dev/null
replay --from src.dlq --to src.where --group resume9 --include-resolved >"$T/resume9.out" 2>&1; rc=$?
hdr_dump src.where "$T/resume9.json"
check "kill -9 then resume: every lane record reached the target (rc $rc)" $PY - "$T/dlq.json" "$T/resume9.json" <<'PY'
import json, sys
want = {"src.dlq/%d/%d" % (r["partition"], r["offset"]) for r in map(json.loads, open(sys.argv[1]))}
got = [json.loads(l)["headers"]["replay.from-dlq"] for l in open(sys.argv[2])]
print("# %d lane records, %d deliveries, %d repeated" % (len(want), len(got), len(got) - len(set(got))))
sys.exit(0 if set(got) == want else 1)
PY

# ---- a failed delivery is reported, stops the run and is not committed ------------
# (a topic that refuses writes: the embedded broker's fault injection)
if [ "$BROKER" = embedded ]; then
  create_topic src.fail 4
  broker_ctl topic-fault src.fail 0 >/dev/null || not_ok "topic-fault refused"
  sed 's|kafka = { |kafka = { ["message.timeout.ms"] = 1500, |' "$T/conn.lua" >"$T/fail.lua"
  env -u ERRGATE_BOOTSTRAP "$EG" replay -c "$T/fail.lua" --from src.dlq --to src.fail --group failg --include-resolved >"$T/f1.out" 2>"$T/f1.err"; rc=$?
  expect "deliveries that fail: exit 1, counted, each reported, none counted as replayed (rc $rc, failed $(field failed "$T/f1.out"))" \
    '[ "$rc" = 1 ] && [ "$(field failed "$T/f1.out")" -ge 1 ] && [ "$(field replayed "$T/f1.out")" = 0 ] &&
     grep -q "^stopped after a failed delivery" "$T/f1.out" && grep -q "^errgate replay: src.dlq/[0-9]*/[0-9]* -> src.fail: delivery failed: " "$T/f1.err"'
  check "nothing was committed past the failed deliveries" uncommitted failg
  broker_ctl topic-recover src.fail >/dev/null
  replay --from src.dlq --to src.fail --group failg --include-resolved >"$T/f2.out" 2>&1; rc=$?
  expect "after recovery the same group replays everything, once (rc $rc)" \
    '[ "$rc" = 0 ] && [ "$(field replayed "$T/f2.out")" = "$N_DLQ" ] && [ "$(count_topic src.fail)" = "$N_DLQ" ]'
fi

# ---- --where ---------------------------------------------------------------------
create_topic src.w400 4
replay --from src.dlq --to src.w400 --where 'headers["error.code"] == "http_400"' --include-resolved --dry-run >"$T/w1.out" 2>&1; rc=$?
expect "--where dry run selects the permanent records ($(field "would replay" "$T/w1.out") of $N_PERMANENT, rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(field "would replay" "$T/w1.out")" = "$N_PERMANENT" ]'
replay --from src.dlq --to src.w400 --where 'headers["error.code"] == "http_400"' --include-resolved >"$T/w2.out" 2>&1; rc=$?
hdr_dump src.w400 "$T/w400.json"
expect "--where replays exactly the http_400 records (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(wc -l <"$T/w400.json")" = "$N_PERMANENT" ] &&
   [ "$(grep -c "\"error.code\": \"http_400\"" "$T/w400.json")" = "$N_PERMANENT" ]'
create_topic src.wbad 4
replay --from src.dlq --to src.wbad --where 'headers["error.code" ==' >"$T/w3.out" 2>"$T/w3.err"; rc=$?
expect "--where syntax error: exit 2, one clear line naming --where (rc $rc)" \
  '[ "$rc" = 2 ] && grep -q "^errgate replay: --where:1: .*near" "$T/w3.err" && [ "$(wc -l <"$T/w3.err")" = 1 ]'
t0=$(date +%s%N)
replay --from src.dlq --to src.wbad --where 'while true do end' >"$T/w4.out" 2>"$T/w4.err"; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect "--where 'while true do end': exit 2 after the 50 ms budget, naming the record ($ms ms, rc $rc)" \
  '[ "$rc" = 2 ] && grep -q "^errgate replay: --where failed on src.dlq/[0-9]*/[0-9]*: .*exceeded its 50 ms budget" "$T/w4.err"'
replay --from src.dlq --to src.wbad --where 'os.exit(3)' >"$T/w5.out" 2>"$T/w5.err"; rc=$?
expect "--where has no os (sandbox): exit 2 (rc $rc)" '[ "$rc" = 2 ] && grep -q "global .os." "$T/w5.err"'
replay --from src.dlq --to src.wbad --where 'headers["error.code"] = "x"' >"$T/w6.out" 2>"$T/w6.err"; rc=$?
expect "--where cannot assign to the record: exit 2 (rc $rc)" '[ "$rc" = 2 ] && grep -q "read-only" "$T/w6.err"'
check "bad --where expressions replayed nothing" [ "$(count_topic src.wbad)" = 0 ]
check "and committed nothing" uncommitted "$(group_of "$T/w4.out")"

# ---- the loop guard --------------------------------------------------------------
# a real loop: replay the transient records home to src while the gateway
# runs; they fail again and come back to the DLQ carrying errgate.replays=1
n_before=$(count_topic src.dlq)
start_gateway gw2 "$T/gw.lua"
replay --from src.dlq --to src --class transient --group home --include-resolved >"$T/home.out" 2>&1; rc=$?
expect "replay home to src (rc $rc)" '[ "$rc" = 0 ] && [ "$(field replayed "$T/home.out")" = "$N_TRANSIENT" ]'
wait_for 40 bash -c "[ \$(kcat -C -b '$BOOTSTRAP' -t src.dlq -e -q -f 'x\n' 2>/dev/null | wc -l) -ge $((n_before + N_TRANSIENT)) ]" \
  || not_ok "replayed records did not come back to the DLQ"
stop_gateway "$GW_PID"
hdr_dump src "$T/src.json"
check "records replayed to their original topic went to their original partition" $PY - "$T/src.json" "$N_TRANSIENT" <<'PY'
import json, sys
rs = [r for r in map(json.loads, open(sys.argv[1])) if "replay.from-dlq" in r["headers"]]
bad = [r for r in rs if str(r["partition"]) != r["headers"]["original.partition"]]
sys.exit(0 if len(rs) == int(sys.argv[2]) and not bad else 1)
PY
LOOPED='headers["errgate.replays"] ~= nil'
replay --from src.dlq --to src.replay --where "$LOOPED" --max-replays 1 >"$T/guard.out" 2>"$T/guard.err"; rc=$?
expect "records back in the DLQ after 1 replay are refused with --max-replays 1 ($(field refused "$T/guard.out") of $N_TRANSIENT, rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(field refused "$T/guard.out")" = "$N_TRANSIENT" ] && [ "$(field replayed "$T/guard.out")" = 0 ]'
check "each refusal is reported with its errgate.id" [ "$(grep -c '^errgate replay: refused src.dlq/.* (errgate.id src/' "$T/guard.err")" = "$N_TRANSIENT" ]
n_replay=$(count_topic src.replay)
replay --from src.dlq --to src.replay --where "$LOOPED" --max-replays 1 --force --group forced >"$T/force.out" 2>&1; rc=$?
expect "--force overrides the guard (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(field replayed "$T/force.out")" = "$N_TRANSIENT" ] && [ "$(count_topic src.replay)" = $((n_replay + N_TRANSIENT)) ]'
hdr_dump src.replay "$T/replayed2.json"
check "forced replays carry errgate.replays=2" [ "$(grep -c '"errgate.replays": "2"' "$T/replayed2.json")" = "$N_TRANSIENT" ]

# the default guard (3), and a record whose count is not a number
printf 'k1\tv1\nk2\tv2\nk3\tv3\n' >"$T/manual.tsv"
kcat -P -b "$BOOTSTRAP" -t manual.dlq -K $'\t' -H errgate.replays=3 -H errgate.id=m/0/1 -l <(sed -n 1p "$T/manual.tsv") 2>/dev/null
kcat -P -b "$BOOTSTRAP" -t manual.dlq -K $'\t' -H errgate.replays=2 -H errgate.id=m/0/2 -l <(sed -n 2p "$T/manual.tsv") 2>/dev/null
kcat -P -b "$BOOTSTRAP" -t manual.dlq -K $'\t' -H errgate.replays=lots -H errgate.id=m/0/3 -l <(sed -n 3p "$T/manual.tsv") 2>/dev/null
replay --from manual.dlq --to manual.out >"$T/m1.out" 2>&1; rc=$?
expect "default --max-replays 3: replays=3 and a non-count are refused, replays=2 goes (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(field refused "$T/m1.out")" = 2 ] && [ "$(field replayed "$T/m1.out")" = 1 ] &&
   [ "$(kcat -C -b "$BOOTSTRAP" -t manual.out -e -q -f "%k\n" 2>/dev/null)" = k2 ]'

# ---- bad input -------------------------------------------------------------------
replay --from nosuch.dlq --to src.replay >"$T/b1.out" 2>"$T/b1.err"; rc=$?
expect "a missing lane: exit 2 naming it (rc $rc)" '[ "$rc" = 2 ] && grep -q "topic nosuch.dlq does not exist" "$T/b1.err"'
replay --from src.dlq --to nosuch >"$T/b2.out" 2>"$T/b2.err"; rc=$?
expect "a missing target: exit 2 naming it (rc $rc)" '[ "$rc" = 2 ] && grep -q "topic nosuch does not exist" "$T/b2.err"'
for bad in "--until yesterday" "--rate 0" "--since soon" "--limit -1" "--bogus" "--to src.dlq"; do
  # shellcheck disable=SC2086
  replay --from src.dlq --to src.replay $bad >/dev/null 2>"$T/b3.err"; rc=$?
  expect "bad argument '$bad': exit 2 with a reason (rc $rc)" '[ "$rc" = 2 ] && head -1 "$T/b3.err" | grep -q "^errgate replay: "'
done
env -u ERRGATE_BOOTSTRAP "$EG" replay --from src.dlq --to src.replay >/dev/null 2>"$T/b4.err"; rc=$?
expect "no broker given: exit 2 (rc $rc)" '[ "$rc" = 2 ] && grep -q "no broker" "$T/b4.err"'
