#!/usr/bin/env bash
# test_spill_cmd.sh — `errgate spill ls` and `errgate spill drain` on real
# journals (written by the test tool spill-write-test, spec/tools/) against the
# embedded broker:
#   - a clean journal: ls lists every segment; drain delivers every record
#     exactly once with key, value, headers (nil and empty ones too) and
#     partition intact, deletes every segment and exits 0;
#   - a corrupted tail (a flipped byte in one segment, a torn write in
#     another): a clear report with the lost byte ranges, no crash, the
#     intact frames drain, the damaged frames are never applied, the segments
#     are kept as *.corrupt, exit 1 — and a second drain says the same
#     without redoing it (damage in the middle of segments: test_spill_damaged.sh);
#   - a topic with fewer partitions than the frames name: partition % count;
#   - a lane that fails: failed deliveries are counted and retried, nothing
#     is deleted, exit 1; once the topic is back everything drains;
#   - a journal in use: ls shows the active segment and the lock's owner;
#   - ls and drain under valgrind (not under SAN=1);
#   - kill -9 of an appender: every acknowledged append reaches Kafka;
#   - kill -9 of a slow drain, then a second drain: every record present
#     (duplicates allowed and counted), the journal empty;
#   - the lock: a drain while another process holds the journal is refused
#     with a clear message; usage errors exit 2.
# Records are compared byte for byte with python3-confluent-kafka (kcat's
# JSON cannot show binary keys and values faithfully).
source "$(dirname "$0")/lib.sh"

start_broker --topic small:2

source "$(dirname "$0")/spill_lib.sh"

# expect DESC: ok/not ok by the exit status of the command just before.
expect() { if [ $? = 0 ]; then ok "$1"; else not_ok "$1"; fi; }
segments() { ls "$1" 2>/dev/null | grep -c '^spill-[0-9]*\.eg$'; }
corrupt_files() { ls "$1" 2>/dev/null | grep -c '\.eg\.corrupt$'; }

# ---- a clean journal ----------------------------------------------------------
J=$T/clean
"$SPILL_WRITE_TEST" "$J" spilled 3000 --segment-bytes 100000 >"$T/clean.jsonl" 2>"$T/write.err" \
  || die "write-test failed: $(cat "$T/write.err")"
diag "$(cat "$T/write.err")"
NSEG=$(segments "$J")
"$EG" spill ls "$J" >"$T/ls.out" 2>"$T/ls.err"
check "ls exits 0" [ $? = 0 ]
{ [ "$NSEG" -ge 5 ] && [ "$(grep -c ' ok$' "$T/ls.out")" = "$NSEG" ]; }
expect "ls: one line per segment, all ok ($NSEG segments)"
check "ls: the total counts 3000 frames" grep -q "^total $NSEG segments, 3000 frames, " "$T/ls.out"
"$EG" spill ls "$T/nonexistent" >/dev/null 2>"$T/ls-missing.err"
rc=$?
{ [ $rc = 1 ] && grep -q "nonexistent: No such file or directory" "$T/ls-missing.err"; }
expect "ls of a missing directory: exit 1 naming it"

"$EG" spill drain "$J" -b "$BOOTSTRAP" >"$T/drain.out" 2>"$T/drain.err"
rc=$?
diag "$(head -1 "$T/drain.out")"
check "drain exits 0 (exit $rc)" [ $rc = 0 ]
{ grep -q "^drained 3000 frames ($NSEG segments deleted)" "$T/drain.out" && grep -q '^journal empty$' "$T/drain.out"; }
expect "drain: 3000 frames drained, $NSEG segments deleted, journal empty"
{ [ "$(segments "$J")" = 0 ] && [ "$(corrupt_files "$J")" = 0 ]; }
expect "no segment file is left"
check "every record arrived once: key, value, headers, partition and timestamp intact" verify "$T/clean.jsonl" spilled exact
dump spilled "$T/spilled.json"
{ [ "$(wc -l <"$T/spilled.json")" = 3000 ] && grep -q '"h-null",null' "$T/spilled.json"; }
expect "kcat sees 3000 records, with headers (nil included)"

# partitions a topic lacks: records go to partition % count
J=$T/small
"$SPILL_WRITE_TEST" "$J" small 40 >"$T/small.jsonl" 2>/dev/null
"$EG" spill drain "$J" -b "$BOOTSTRAP" >"$T/drain-small.out" 2>"$T/drain-small.err"
rc=$?
$PY - "$T/small.jsonl" >"$T/small-mapped.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    # a keyed record: partition % count; one without a key goes where
    # librdkafka's sticky partitioner puts it
    r["partition"] = r["partition"] % 2 if r["key"] is not None else None
    print(json.dumps(r))
PY
[ $rc = 0 ] && verify "$T/small-mapped.jsonl" small exact
expect "a topic with 2 partitions: keyed records land on partition % 2, drain exits 0 (exit $rc)"
check "the remapping is logged" grep -q 'spill_partition_remapped' "$T/drain-small.err"

# ---- a corrupted tail -----------------------------------------------------------
J=$T/tail
"$SPILL_WRITE_TEST" "$J" tailed 60 --segment-bytes 6000 >"$T/tail.jsonl" 2>/dev/null
S1=$J/spill-0000000000000001.eg
S2=$J/spill-0000000000000002.eg
N1=$("$EG" spill ls "$J" | awk '$1=="spill-0000000000000001.eg"{print $2}')
N2=$("$EG" spill ls "$J" | awk '$1=="spill-0000000000000002.eg"{print $2}')
NT=$("$EG" spill ls "$J" | awk '$1=="total"{print $4}')
[ -n "$N1" ] && [ -n "$N2" ] || die "write-test did not make two segments: $(ls "$J")"
# segment 1: flip a byte inside its last frame; segment 2: a torn write (cut 10 bytes)
size1=$(stat -c %s "$S1")
printf '\xff' | dd of="$S1" bs=1 seek=$((size1 - 5)) conv=notrunc status=none
truncate -s -10 "$S2"
"$EG" spill ls "$J" >"$T/ls-tail.out"
check "ls reports segment 1 damaged from its last frame to its end, after $((N1 - 1)) intact frames" grep -qE "^spill-0000000000000001.eg +$((N1 - 1)) +$size1 damaged, lost [0-9]+\.\.$size1: CRC mismatch" "$T/ls-tail.out"
check "ls reports segment 2 torn" grep -qE "^spill-0000000000000002.eg +$((N2 - 1)) .*damaged, lost [0-9]+\.\.[0-9]+: torn frame" "$T/ls-tail.out"
"$EG" spill drain "$J" -b "$BOOTSTRAP" >"$T/drain-tail.out" 2>"$T/drain-tail.err"
rc=$?
sed "s/^/# /" "$T/drain-tail.out"
diag "$(tail -1 "$T/drain-tail.err")"
check "drain of a corrupted journal exits 1 (exit $rc)" [ $rc = 1 ]
{ grep -qE "^drained $((NT - 2)) frames \(.*; 2 corrupt segments \(2 damaged regions, [0-9]+ bytes lost\);" "$T/drain-tail.out"; }
expect "the summary counts the drained frames and 2 corrupt segments"
{ grep -qE "^corrupt spill-0000000000000001.eg.corrupt: $((N1 - 1)) intact frames \(delivered\); lost [0-9]+\.\.$size1: CRC mismatch" "$T/drain-tail.out" && grep -qE "^corrupt spill-0000000000000002.eg.corrupt: $((N2 - 1)) intact frames .*torn frame" "$T/drain-tail.out"; }
expect "each corrupt segment is reported with its intact frames, the lost byte range and the reason"
check "stderr says the files were kept, holding only delivered frames and damaged bytes" grep -q "2 files kept for the operator.*hold only delivered frames and the damaged bytes" "$T/drain-tail.err"
{ [ "$(segments "$J")" = 0 ] && [ "$(stat -c %s "$S1.corrupt")" = "$size1" ] && [ -f "$S2.corrupt" ]; }
expect "the segments are renamed .corrupt, bytes untouched"
check "the good frames arrived; the bad frames (and nothing after them) did not" verify "$T/tail.jsonl" tailed exact $((N1 - 1)) $((N1 + N2 - 1))
"$EG" spill drain "$J" -b "$BOOTSTRAP" >"$T/drain-tail2.out" 2>"$T/drain-tail2.err"
rc=$?
{ [ $rc = 1 ] && grep -q "^drained 0 frames" "$T/drain-tail2.out" && [ "$(grep -c '^corrupt ' "$T/drain-tail2.out")" = 2 ]; }
expect "a second drain drains nothing, still reports both and exits 1 (exit $rc)"
"$EG" spill ls "$J" >"$T/ls-tail2.out"
check "ls lists the kept .corrupt files" [ "$(grep -c '\.eg\.corrupt .*corrupt (its intact frames were delivered), lost [0-9]' "$T/ls-tail2.out")" = 2 ]

# ---- a lane that fails ----------------------------------------------------------------
cat >"$T/fail.lua" <<CFG
return {
  group = "spill-test", source = { topics = { "src" } },
  target = { http = { url = "http://127.0.0.1:9/" } },
  policy = "$ROOT/policies/default.lua",
  kafka = { ["bootstrap.servers"] = "$BOOTSTRAP", ["message.timeout.ms"] = 500,
            ["topic.metadata.propagation.max.ms"] = 200 },
}
CFG
J=$T/faulty
"$SPILL_WRITE_TEST" "$J" faulty 100 >"$T/faulty.jsonl" 2>/dev/null
broker_ctl topic-fault faulty 0 UNKNOWN_TOPIC_OR_PART >/dev/null || die "topic-fault refused"
"$EG" spill drain "$J" -c "$T/fail.lua" --timeout-ms 3000 >"$T/drain-fail.out" 2>"$T/drain-fail.err"
rc=$?
diag "$(head -1 "$T/drain-fail.out")"
diag "$(tail -1 "$T/drain-fail.err")"
check "drain while the topic is missing exits 1 (exit $rc)" [ $rc = 1 ]
{ grep -qE "^drained 0 frames \(0 segments deleted\) in [0-9]+ ms; [1-9][0-9]* failed delivery attempts" "$T/drain-fail.out"; }
expect "failed delivery attempts are counted, nothing drained"
{ [ "$(segments "$J")" = 1 ] && grep -q "^left spill-0000000000000001.eg: 100 frames" "$T/drain-fail.out"; }
expect "the segment is kept and reported as left"
{ grep -q "1 segment not drained within the time-out; last error: faulty" "$T/drain-fail.err"; }
expect "stderr names what was not drained and the last error"
broker_ctl topic-recover faulty >/dev/null
"$EG" spill drain "$J" -c "$T/fail.lua" >"$T/drain-fail2.out" 2>"$T/drain-fail2.err"
rc=$?
{ [ $rc = 0 ] && [ "$(segments "$J")" = 0 ]; }
expect "after the topic is back the drain exits 0 (exit $rc)"
check "every record of the failed drain arrived" verify "$T/faulty.jsonl" faulty atleast

# ---- a journal in use: its active segment --------------------------------------------
J=$T/active
bg holder "$SPILL_WRITE_TEST" "$J" active 10 --hold-ms 3000
HOLDER=$LASTPID
all_ten() { [ "$(wc -l <"$T/holder.out")" = 10 ]; }
wait_for 10 all_ten || not_ok "write-test --hold-ms wrote no 10 records"
"$EG" spill ls "$J" >"$T/ls-active.out"
grep -qE "^spill-0000000000000001.eg +10 +[0-9]+ active$" "$T/ls-active.out" && grep -q "^locked by pid=$HOLDER role=write-test$" "$T/ls-active.out"
expect "ls shows the owner's segment as active and who holds the journal"
wait "$HOLDER"
"$EG" spill ls "$J" >"$T/ls-active2.out"
grep -qE "^spill-0000000000000001.eg +10 +[0-9]+ ok$" "$T/ls-active2.out" && ! grep -q "^locked" "$T/ls-active2.out"
expect "once the owner has closed it the segment is sealed (ok) and nobody holds the journal"

# ---- valgrind: ls and drain of a journal with a corrupt tail --------------------------
if [ "${SAN:-}" != 1 ] && command -v valgrind >/dev/null; then
  J=$T/vg
  "$SPILL_WRITE_TEST" "$J" vg 200 --segment-bytes 20000 >/dev/null 2>&1
  truncate -s -3 "$J/spill-0000000000000002.eg"
  "${VG[@]}" "$EG_BIN" spill ls "$J" >/dev/null 2>"$T/vg-ls.err"
  rc=$?
  check "ls under valgrind: no memcheck errors, no leaks (exit $rc)" vg_ok "$rc" 0 "$T/vg-ls.err"
  "${VG[@]}" "$EG_BIN" spill drain "$J" -b "$BOOTSTRAP" >"$T/vg-drain.out" 2>"$T/vg-drain.err"
  rc=$?
  check "drain of a journal with a torn segment under valgrind: exit 1, no memcheck errors, no leaks (exit $rc)" \
    vg_ok "$rc" 1 "$T/vg-drain.err"
else
  diag "valgrind part skipped (SAN=1 or no valgrind)"
fi

# ---- kill -9 of an appender ----------------------------------------------------------
# write-test prints (and flushes) a record only once its append returned 0
J=$T/appender
bg appender "$SPILL_WRITE_TEST" "$J" appended 100000 --segment-bytes 100000
APP=$LASTPID
enough() { [ "$(wc -l <"$T/appender.out")" -ge 2000 ]; }
wait_for 30 enough || not_ok "the appender wrote too little"
kill -9 "$APP"
wait "$APP" 2>/dev/null
ACKED=$(wc -l <"$T/appender.out")
head -n "$ACKED" "$T/appender.out" >"$T/acked.jsonl" # whole lines only
"$EG" spill ls "$J" >"$T/ls-app.out"
rc=$?
diag "killed the appender after $ACKED acknowledged appends; ls: $(tail -1 "$T/ls-app.out")"
diag "last segment: $(grep '^spill-' "$T/ls-app.out" | tail -1)"
check "ls after kill -9 of the appender exits 0 (exit $rc)" [ $rc = 0 ]
"$EG" spill drain "$J" -b "$BOOTSTRAP" >"$T/drain-app.out" 2>"$T/drain-app.err"
rc=$?
diag "$(head -1 "$T/drain-app.out") (exit $rc)"
{ [ $rc = 0 ] || { [ $rc = 1 ] && grep -q "torn frame" "$T/drain-app.out"; }; } && [ "$(segments "$J")" = 0 ]
expect "the drain empties the journal (a torn last frame, if the kill hit a write, is kept as .corrupt)"
verify "$T/acked.jsonl" appended acked
expect "every acknowledged append reached Kafka after kill -9 of the appender"

# ---- kill -9 of a drain in progress ---------------------------------------------------
cat >"$T/slow.lua" <<CFG
return {
  group = "spill-test", source = { topics = { "src" } },
  target = { http = { url = "http://127.0.0.1:9/" } },
  policy = "$ROOT/policies/default.lua",
  kafka = { ["bootstrap.servers"] = "$BOOTSTRAP", ["batch.num.messages"] = 50 },
}
CFG
J=$T/killed
N=20000
"$SPILL_WRITE_TEST" "$J" killed $N --segment-bytes 60000 --value-bytes 40 >"$T/killed.jsonl" 2>/dev/null
NSEG=$(segments "$J")
broker_ctl rtt -1 100 >/dev/null || die "rtt refused"
bg drain-slow "$EG" spill drain "$J" -c "$T/slow.lua"
SLOW=$LASTPID
first_gone() { [ ! -e "$J/spill-0000000000000001.eg" ]; }
wait_for 30 first_gone || not_ok "the slow drain deleted no segment in 30 s"
"$EG" spill ls "$J" >"$T/ls-locked.out"
"$EG" spill drain "$J" -b "$BOOTSTRAP" >"$T/drain-locked.out" 2>"$T/drain-locked.err"
rc=$?
kill -9 "$SLOW"
wait "$SLOW" 2>/dev/null
LEFT=$(segments "$J")
diag "killed the drain with $LEFT of $NSEG segments left"
check "ls while a drain runs shows who holds the journal" grep -q "^locked by pid=$SLOW role=drain" "$T/ls-locked.out"
{ [ $rc = 1 ] && grep -q "is locked by another process (pid=$SLOW role=drain)" "$T/drain-locked.err"; }
expect "a second drain is refused while the first holds the lock (exit $rc)"
{ [ "$LEFT" -gt 0 ] && [ "$LEFT" -lt "$NSEG" ]; }
expect "the kill -9 came mid-drain ($LEFT of $NSEG segments left)"
broker_ctl rtt -1 0 >/dev/null
"$EG" spill drain "$J" -b "$BOOTSTRAP" >"$T/drain-after.out" 2>"$T/drain-after.err"
rc=$?
diag "$(head -1 "$T/drain-after.out")"
{ [ $rc = 0 ] && [ "$(segments "$J")" = 0 ] && grep -q '^journal empty$' "$T/drain-after.out"; }
expect "the drain after kill -9 exits 0 and empties the journal (exit $rc)"
verify "$T/killed.jsonl" killed atleast
rc=$?
check "every one of the $N records is present after kill -9 and a second drain ($(cat "$T/killed.jsonl.dups" 2>/dev/null) duplicates)" [ $rc = 0 ]

# ---- the lock held by another process -----------------------------------------------------
J=$T/held
"$SPILL_WRITE_TEST" "$J" held 5 >/dev/null 2>&1
flock "$J/LOCK" sleep 5 &
HOLDER=$!
PIDS+=($HOLDER)
sleep 0.3
"$EG" spill drain "$J" -b "$BOOTSTRAP" >"$T/drain-held.out" 2>"$T/drain-held.err"
rc=$?
{ [ $rc = 1 ] && grep -q "spill journal $J is locked by another process" "$T/drain-held.err"; }
expect "drain of a journal locked by another process: exit 1, a clear message (exit $rc)"
check "and nothing was touched" [ "$(segments "$J")" = 1 ]
env -u ERRGATE_BOOTSTRAP "$EG" spill drain "$J" >/dev/null 2>"$T/drain-usage.err"
rc=$?
{ [ $rc = 2 ] && grep -q "no broker" "$T/drain-usage.err"; }
expect "drain without -b or -c (and no ERRGATE_BOOTSTRAP): exit 2, no broker (exit $rc)"
"$EG" spill frobnicate >/dev/null 2>"$T/usage.err"
rc=$?
{ [ $rc = 2 ] && [ "$(wc -l <"$T/usage.err")" = 1 ] && grep -q "unknown subcommand 'frobnicate'" "$T/usage.err"; }
expect "an unknown subcommand: exit 2, one line naming it (exit $rc)"
"$EG" spill --help >"$T/help.out"
rc=$?
{ [ $rc = 0 ] && grep -q "errgate spill drain DIR" "$T/help.out" && ! grep -q write-test "$T/help.out"; }
expect "spill --help prints the usage (exit 0), without write-test"
"$EG" spill write-test "$T/nojournal" x 1 >/dev/null 2>"$T/wt.err"
rc=$?
{ [ $rc = 2 ] && grep -q "unknown subcommand 'write-test'" "$T/wt.err" && [ ! -e "$T/nojournal" ]; }
expect "the shipped binary has no write-test: exit 2, unknown subcommand, no journal written (exit $rc)"

echo "1..$TESTNO"
exit $FAILED
