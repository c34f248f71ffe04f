#!/usr/bin/env bash
# table.sh — prints bench/run.sh's one table from $W/results.
#
# Each cell is the median of the repetitions stored under its key (lib.sh's
# record/median). Ratios are errgate's median over the peer's median; the
# goal column states the target from issue 7 and whether this run met it
# (a report, never an assertion: the exit status does not depend on it).
set -u
source "$(dirname "$0")/lib.sh"

fmt()   { [ -n "$1" ] && printf "%.0f" "$1" || printf -- "-"; }
ratio() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}' || printf -- "-"; }
# goal VALUE OP BOUND TEXT: "TEXT: met" or "TEXT: MISSED".
goal()  { awk -v v="$1" -v b="$3" -v op="$2" -v t="$4" 'BEGIN{ok = (op==">=") ? v>=b : v<=b; printf "%s %s", t, ok ? "met" : "MISSED"}'; }

row() { # LABEL KEY [RATIO_TEXT] [GOAL_TEXT]
  printf "%-44s %12s %8s %8s   %-7s %s\n" "$1" "$(fmt "$(median "$2.rps")")" \
    "$(median "$2.cpu")" "$(median "$2.rss")" "${3:-}" "${4:-}"
}

echo
echo "errgate bench: $N records over $P partitions (Python peer: $PEER_N), median of $REPS; load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-44s %12s %8s %8s   %-7s %s\n" "path / system" "records/s" "CPU/100k" "RSS MiB" "ratio" "goal"
printf '%.0s-' $(seq 100); echo

if [ -n "$(median happy.errgate.rps)" ]; then # absent under BENCH_ONLY=http
r=$(ratio "$(median happy.errgate.rps)" "$(median happy.kcat.rps)")
row "happy  errgate, no-op Lua target" happy.errgate "$r" "$(goal "$r" '>=' 0.9 '>=0.9x kcat')"
row "happy  kcat -G (consume only)" happy.kcat
r=$(ratio "$(median dlq.errgate.rps)" "$(median dlq.kcat.rps)")
row "dlq    errgate, 100% 400 -> DLQ" dlq.errgate "$r" "$(goal "$r" '>=' 0.8 '>=0.8x pipe')"
row "dlq    kcat -C | kcat -P (idempotent, all)" dlq.kcat
fi
r=$(ratio "$(median http.errgate.rps)" "$(median http.peer.rps)")
r2=$(ratio "$(median http.errgate.rps)" "$(median http.ceiling.rps)")
# the peer goal is bounded by the handler: no client gets more than the
# ceiling through it, so the ceiling's own multiple of the peer is printed
r3=$(ratio "$(median http.ceiling.rps)" "$(median http.peer.rps)")
row "http   errgate -> handler (c=$CONC, $ORDERING)" http.errgate "$r" "$(goal "$r" '>=' 5 '>=5x peer') (ceiling: ${r3}x peer); x$r2 of ceiling: $(goal "$r2" '>=' 0.7 '>=0.7x')"
row "http   python peer -> handler" http.peer
row "http   wrk -> handler (ceiling, c=$CONC)" http.ceiling
r=$(ratio "$(median https.errgate.rps)" "$(median https.ceiling.rps)")
row "https  errgate -> TLS proxy -> handler" https.errgate "$r" "of the TLS ceiling"
row "https  wrk -> TLS proxy -> handler (ceiling)" https.ceiling
printf '%.0s-' $(seq 100); echo
rss=$(for k in happy dlq http https; do median "$k.errgate.rss"; done | sort -g | tail -1)
echo "peak RSS of errgate (max over paths): ${rss} MiB   $(goal "$rss" '<=' 64 '<=64 MiB')"
echo
printf "%-44s %12s   %s\n" "decision cost (policy:failure)" "ns/decision" "goal"
for k in $(awk '$1 ~ /^decide\./{print $1}' "$W/results" | sort -u); do
  v=$(median "$k")
  name=${k#decide.}; name=${name%.ns}
  printf "%-44s %12s   %s\n" "$name" "$(fmt "$v")" "$(goal "$v" '<=' 1000 '<=1us')"
done
