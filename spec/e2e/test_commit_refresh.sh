#!/usr/bin/env bash
# test_commit_refresh.sh — a committed offset that goes back under its
# owner is committed again (found by make chaos, seed 24: after a rebalance
# with the coordinator failing OffsetCommit, two partitions' committed
# offsets went back ~580 records below what their new owner had committed,
# and stayed there: the lag never drained, and a restart would have
# redelivered those records).
#
# librdkafka defers a commit that meets an unavailable coordinator and
# re-sends it later with the member's current generation; the broker takes a
# commit from any member of the generation, for any partition. So a previous
# owner's late commit can land after the new owner's. Here a second member
# (stale_commit.py) plays that previous owner: it commits an old offset for
# the gateway's partition once the gateway has committed everything. The
# gateway must bring the offset back (COMMIT_REFRESH_MS, 10 s) without new
# records and without handling any record twice. Then a hostile member
# commits past the log's end, which would make the next owner skip records:
# the gateway must bring that back too.
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"
N=200

start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2
start_handler
write_config "$T/gw.lua" cr none
start_gateway gw1 "$T/gw.lua"; GW1=$GW_PID
mkdir "$T/m"
bg member "$PY" "$ROOT/spec/e2e/stale_commit.py" "$BOOTSTRAP" cr src "$T/m"
one_each() { [ "$(wc -l <"$T/m/assigned" 2>/dev/null)" = 1 ]; }
wait_for 40 one_each || die "the member did not get one of the two partitions: $(cat "$T/m/assigned" 2>/dev/null) $(tail -2 "$T/member.err")"
PM=$(cat "$T/m/assigned"); PG=$((1 - PM))
gw_owns() { grep '"event":"assign"' "$T/gw1.err" | tail -1 | grep -q "src\[$PG\]"; }
wait_for 20 gw_owns || die "the gateway did not take src[$PG]"
diag "the member owns src[$PM], the gateway src[$PG]"

gen_records "$N" ok:1 | kcat -P -b "$BOOTSTRAP" -t src -p "$PG" -K $'\t' -X acks=all 2>"$T/kcat.err" ||
  die "kcat failed: $(cat "$T/kcat.err")"
committed() { "$EG" offsets -b "$BOOTSTRAP" -g cr src 2>/dev/null | awk -v p="$PG" '$1=="src" && $2==p {print $3}'; }
committed_is() { [ "$(committed)" = "$1" ]; }
wait_for 30 committed_is "$N" && ok "the gateway committed its $N records" || die "committed $(committed), not $N"

STALE=$((N - 50))
echo "$PG $STALE" >"$T/m/commit.1"
wait_for 10 [ -s "$T/m/committed.1" ] || die "the member did not commit"
t0=$(date +%s%N)
check "the member's stale commit was accepted ($(cat "$T/m/committed.1"))" grep -qx ok "$T/m/committed.1"
# the scenario: the group's offset went back under its owner (read at once:
# the gateway's next refresh is 10 s after its last commit, which came before)
c=$(committed)
check "the group's committed offset went back ($c, was $N)" [ "$c" = "$STALE" ]
if wait_for 25 committed_is "$N"; then
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  ok "the gateway committed $N again, $ms ms later"
else
  not_ok "the committed offset stayed at $(committed)"
fi
AHEAD=$((N + 1000))
echo "$PG $AHEAD" >"$T/m/commit.2"
wait_for 10 [ -s "$T/m/committed.2" ] || die "the member did not commit again"
c=$(committed)
check "a commit past the log's end was accepted too ($(cat "$T/m/committed.2"), offset $c)" \
  eval 'grep -qx ok "$T/m/committed.2" && [ "$c" = "$AHEAD" ]'
wait_for 25 committed_is "$N" && ok "the gateway brought that back to $N as well" ||
  not_ok "the committed offset stayed at $(committed) (a next owner would skip records)"
check "no record was handled twice ($(wc -l <"$T/ok.log") handled, $(sort -u "$T/ok.log" | wc -l) distinct)" \
  eval '[ "$(wc -l <"$T/ok.log")" = "$N" ] && [ "$(sort -u "$T/ok.log" | wc -l)" = "$N" ]'
touch "$T/m/leave"
stop_gateway "$GW1"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
exit $FAILED
