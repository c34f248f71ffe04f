#!/usr/bin/env bash
# test_spill_hostile.sh — whoever can write the spill directory cannot make
# errgate write elsewhere (issue 28, item 4). The gateway refuses to start
# (exit 2, one line naming the directory) on a journal directory that is
# world- or group-writable or owned by another user, and on a LOCK that is a
# symbolic link (its target, a file outside, is unchanged); `spill drain`
# refuses the same; `spill ls` does not follow a LOCK link nor hang on a
# FIFO; a segment that is a link is not listed, scanned or drained. With a
# sound directory the gateway starts.
source "$(dirname "$0")/lib.sh"
start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2
start_handler
J=$T/journal
mkdir -m 0700 "$J"
write_config "$T/gw.lua" sh none "lanes = { dlq = '{topic}.dlq', quarantine = '{topic}.quarantine', spill = { dir = '$J' } },"
echo "precious" >"$T/victim"

# run_gw: the gateway until it refuses (RC, $T/gw.err) or, started, is stopped
run_gw() {
  bg gw "$EG" run -c "$T/gw.lua"; local pid=$LASTPID
  if wait_for 20 bash -c "! kill -0 $pid 2>/dev/null || grep -q '\"event\":\"start\"' '$T/gw.err'"; then :; fi
  if kill -0 "$pid" 2>/dev/null; then stop_gateway "$pid"; STARTED=1; else wait "$pid"; RC=$?; STARTED=0; fi
}

chmod 0777 "$J"
run_gw
check "a world-writable journal directory: the gateway refuses to start (exit $RC), naming it" \
  bash -c "[ $RC = 2 ] && [ $STARTED = 0 ] && grep -q 'spill journal $J: writable by everyone (mode 0777)' '$T/gw.err'"
chmod 0770 "$J"
run_gw
check "a group-writable one too (exit $RC)" \
  bash -c "[ $RC = 2 ] && grep -q 'spill journal $J: writable by its group' '$T/gw.err'"
if [ "$(id -u)" = 0 ]; then
  chmod 0700 "$J"; chown 65534 "$J"
  run_gw
  check "a journal directory owned by another user: refused (exit $RC)" \
    bash -c "[ $RC = 2 ] && grep -q 'owned by uid 65534, not by this user' '$T/gw.err'"
  chown 0 "$J"
fi
chmod 0700 "$J"

ln -s "$T/victim" "$J/LOCK"
run_gw
check "a LOCK planted as a symbolic link: refused (exit $RC), its target unchanged" \
  bash -c "[ $RC = 2 ] && grep -q 'LOCK: is a symbolic link' '$T/gw.err' && [ \"\$(cat '$T/victim')\" = precious ]"
"$EG" spill drain "$J" -b "$BOOTSTRAP" >"$T/drain.out" 2>"$T/drain.err"; rc=$?
check "spill drain refuses it too (exit $rc), the target unchanged" \
  bash -c "[ $rc != 0 ] && grep -q 'LOCK: is a symbolic link' '$T/drain.err' && [ \"\$(cat '$T/victim')\" = precious ]"
timeout 10 "$EG" spill ls "$J" >"$T/ls.out" 2>&1; rc=$?
check "spill ls does not follow it (exit $rc, no 'precious' printed)" bash -c "[ $rc != 124 ] && ! grep -q precious '$T/ls.out'"
rm "$J/LOCK"
mkfifo "$J/LOCK"
timeout 10 "$EG" spill ls "$J" >"$T/ls2.out" 2>&1; rc=$?
check "spill ls does not hang on a FIFO as LOCK (exit $rc)" [ "$rc" != 124 ]
rm "$J/LOCK"

ln -s "$T/victim" "$J/spill-0000000000000001.eg"
run_gw
check "a segment name planted as a link: the gateway starts (and stops, exit $RC) without touching the target" \
  bash -c "[ $STARTED = 1 ] && [ $RC = 0 ] && [ \"\$(cat '$T/victim')\" = precious ]"
"$EG" spill ls "$J" >"$T/ls3.out" 2>&1
check "spill ls does not list the link as a segment" bash -c "! grep -q '^spill-0000000000000001.eg' '$T/ls3.out'"
check "the sound directory's LOCK is a regular file of the gateway's" bash -c "[ -f '$J/LOCK' ] && [ ! -L '$J/LOCK' ]"
echo "1..$TESTNO"
exit $FAILED
