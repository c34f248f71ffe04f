#!/usr/bin/env bash
# test_incident_example.sh — the incident story (examples/incident/run.sh)
# runs from a clean checkout and checks itself: a 503 storm misclassified as
# permanent trips the flood guard after a handful of dead letters; an
# override slowing the 5s rung to 15s, set through instance A, is seen by
# instance B; the fixed policy, running as the shadow policy, shows the
# 503s it would have laddered (ctl shadow); it replaces the file and both
# instances reload it; the held orders climb the ladder with the override's delay and
# errgate.override header and succeed once the provider is back; the
# override expires on its own on both instances.
source "$(dirname "$0")/lib.sh"
out=$(BUILD=$BUILD bash "$ROOT/examples/incident/run.sh" 2>&1); rc=$?
printf '%s\n' "$out" | tail -3 | sed 's/^/# /'
check "examples/incident/run.sh succeeds (exit $rc)" [ "$rc" = 0 ]
check "it reports every step held" grep -q "^incident: every step held" <<<"$out"
[ "$rc" = 0 ] || printf '%s\n' "$out" | grep "^incident:" | sed 's/^/# /'
exit $FAILED
