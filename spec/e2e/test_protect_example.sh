#!/usr/bin/env bash
# test_protect_example.sh — the payload protection story
# (examples/protect/run.sh) runs from a clean checkout and checks itself: no
# card number in the DLQ's or the quarantine's bytes (encrypted, masked with
# a keyed hash, a non-JSON payload written as a pointer), tail refuses the
# values without the key and decrypts them with it, replay waits for
# approval, refuses without the key and writes nothing, then republishes the
# approved payments decrypted.
source "$(dirname "$0")/lib.sh"
out=$(BUILD=$BUILD bash "$ROOT/examples/protect/run.sh" 2>&1); rc=$?
printf '%s\n' "$out" | tail -3 | sed 's/^/# /'
check "examples/protect/run.sh succeeds (exit $rc)" [ "$rc" = 0 ]
check "it reports every step held" grep -q "^protect: every step held" <<<"$out"
[ "$rc" = 0 ] || printf '%s\n' "$out" | grep "^protect:" | sed 's/^/# /'
exit $FAILED
