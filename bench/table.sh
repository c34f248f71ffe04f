#!/usr/bin/env bash
# table.sh — prints bench/run.sh's one table from $W/results.
#
# Each cell is the median of the repetitions stored under its key (lib.sh's
# record/median), with their spread (min..max) next to it. Ratios are
# errgate's median over the peer's median (records/s, and CPU/100k for the
# happy and dead-letter rows, the figure to judge by when records/s is
# noisy: it moved more than 1.5x between repetitions); the
# goal column states the target from issue 7 and whether this run met it
# (a report, never an assertion: the exit status does not depend on it).
# On a real cluster (BROKER_NAME names it) the dead-letter goal against the
# kcat pipe is issue 29's (>= 0.5x at <= 3x its CPU), and the Spring Kafka
# rows, when run, carry errgate's ratios to them (records/s, CPU/100k, peak
# RSS) with issue 29's goals.
set -u
source "$(dirname "$0")/lib.sh"

fmt()   { [ -n "$1" ] && printf "%.0f" "$1" || printf -- "-"; }
ratio() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}' || printf -- "-"; }
ratio3() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3g", a/b}' || printf -- "-"; }
# goal VALUE OP BOUND TEXT: "TEXT: met" or "TEXT: MISSED".
goal()  { awk -v v="$1" -v b="$3" -v op="$2" -v t="$4" 'BEGIN{ok = (op==">=") ? v>=b : v<=b; printf "%s %s", t, ok ? "met" : "MISSED"}'; }
# rspread KEY: records/s min..max, rounded.
rspread() { spread "$1" | awk -F'[.][.]' 'NF==2{printf "%.0f..%.0f", $1, $2}'; }
W_ROW=150

row() { # LABEL KEY [RATIO_TEXT] [GOAL_TEXT]
  printf "%-42s %10s %-17s %7s %-13s %6s   %-5s %s\n" "$1" "$(fmt "$(median "$2.rps")")" "$(rspread "$2.rps")" \
    "$(median "$2.cpu")" "$(spread "$2.cpu")" "$(median "$2.rss")" "${3:-}" "${4:-}"
}

# pair_goals ROW PEER RPS_GOAL CPU_GOAL RPS_TEXT CPU_TEXT: the goal text of a
# row against its baseline: records/s ratio and CPU/100k ratio; when either
# side's records/s moved more than 1.5x between repetitions, the CPU ratio
# is the figure to judge by (said so).
pair_goals() {
  local rr cr note=""
  rr=$(ratio "$(median "$1.rps")" "$(median "$2.rps")")
  cr=$(ratio "$(median "$1.cpu")" "$(median "$2.cpu")")
  if noisy "$1.rps" || noisy "$2.rps"; then note=" [records/s noisy: judge by CPU]"; fi
  echo "$rr|$(goal "$rr" '>=' "$3" "$5"); CPU x$cr: $(goal "$cr" '<=' "$4" "$6")$note"
}

# spring_goals PATH RPS_GOAL CPU_GOAL: errgate's ratios to the Spring row of
# PATH (errgate / Spring, three significant digits): "RPS_RATIO|goal text"
# with records/s, CPU/100k and peak RSS (an empty goal: the ratio only).
spring_goals() {
  local rr cr mr t
  rr=$(ratio3 "$(median "$1.errgate.rps")" "$(median "$1.spring.rps")")
  cr=$(ratio3 "$(median "$1.errgate.cpu")" "$(median "$1.spring.cpu")")
  mr=$(ratio3 "$(median "$1.errgate.rss")" "$(median "$1.spring.rss")")
  t="errgate/Spring"
  if [ -n "$2" ]; then t+=": $(goal "$rr" '>=' "$2" ">=${2}x")"; fi
  if [ -n "$3" ]; then t+="; CPU x$cr: $(goal "$cr" '<=' "$3" "<=${3}x")"; else t+="; CPU x$cr"; fi
  echo "$rr|$t; RSS x$mr: $(goal "$mr" '<=' 0.25 '<=0.25x')"
}
SPRING_ROWS=0; [ -n "$(median happy.spring.rps)$(median dlq.spring.rps)$(median http.spring.rps)" ] && SPRING_ROWS=1
DLQ_RPS_GOAL=0.8 DLQ_CPU_GOAL=2
case ${BROKER_NAME:-embedded} in embedded*) ;; *) DLQ_RPS_GOAL=0.5 DLQ_CPU_GOAL=3 ;; esac

echo
echo "errgate bench: $N records over $P partitions (Python peer: $PEER_N), median of $REPS (kcat consume: of $((REPS * ${KRUNS:-1})) runs); malloc: ${MALLOC_NAME%% *}; load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "broker: ${BROKER_NAME:-embedded}"
[ $SPRING_ROWS = 1 ] && echo "Spring Kafka peer: happy on all $N records, dead-letter and HTTP on the first ${SPRING_N:-?}; JVM options: ${SPRING_JVM_OPTS:-none, the JVM defaults}; its CPU and RSS are the whole JVM process's, start-up included"
echo "absolute figures move with the machine's load; compare the ratios (each taken in this one run) and CPU/100k"
printf "%-42s %10s %-17s %7s %-13s %6s   %-5s %s\n" "path / system" "records/s" "(min..max)" "CPU/100k" "(min..max)" "RSS" "ratio" "goal"
printf '%.0s-' $(seq $W_ROW); echo

if [ -n "$(median happy.errgate.rps)" ]; then # absent under BENCH_ONLY=http
g=$(pair_goals happy.errgate happy.kcat 0.9 2 '>=0.9x kcat' '<=2x')
row "happy  errgate, no-op Lua target" happy.errgate "${g%%|*}" "${g#*|}"
row "happy  kcat -G (consume only)" happy.kcat
if [ -n "$(median happy.spring.rps)" ]; then
  g=$(spring_goals happy '' '')
  row "happy  Spring Kafka, no-op listener (c=1)" happy.spring "${g%%|*}" "${g#*|}"
fi
g=$(pair_goals dlq.errgate dlq.kcat "$DLQ_RPS_GOAL" "$DLQ_CPU_GOAL" ">=${DLQ_RPS_GOAL}x pipe" "<=${DLQ_CPU_GOAL}x")
row "dlq    errgate, 100% 400 -> DLQ" dlq.errgate "${g%%|*}" "${g#*|}"
row "dlq    kcat -C | kcat -P (idempotent, all)" dlq.kcat
if [ -n "$(median dlqtx.errgate.rps)" ]; then
  # lanes.transactional against the row above (same records, same run):
  # records/s and CPU ratios, and what a transaction's commit took
  rr=$(ratio "$(median dlqtx.errgate.rps)" "$(median dlq.errgate.rps)")
  cr=$(ratio "$(median dlqtx.errgate.cpu)" "$(median dlq.errgate.cpu)")
  row "dlq    errgate, lanes.transactional" dlqtx.errgate "$rr" "x$rr rec/s, CPU x$cr of the row above; commit $(median dlqtx.commit_ms) ms median of means (max $(median dlqtx.commit_max_ms) ms), $(median dlqtx.commits) transactions"
fi
if [ -n "$(median dlq.spring.rps)" ]; then
  g=$(spring_goals dlq 5 0.2)
  row "dlq    Spring Kafka, DLPR (c=$CONC)" dlq.spring "${g%%|*}" "${g#*|}"
fi
fi
r=$(ratio "$(median http.errgate.rps)" "$(median http.peer.rps)")
r2=$(ratio "$(median http.errgate.rps)" "$(median http.ceiling.rps)")
# the peer goal is bounded by the handler: no client gets more than the
# ceiling through it, so the ceiling's own multiple of the peer is printed
r3=$(ratio "$(median http.ceiling.rps)" "$(median http.peer.rps)")
row "http   errgate -> handler (c=$CONC, $ORDERING)" http.errgate "$r" "$(goal "$r" '>=' 5 '>=5x peer') (ceiling: ${r3}x peer); x$r2 of ceiling: $(goal "$r2" '>=' 0.7 '>=0.7x')"
row "http   python peer -> handler" http.peer
if [ -n "$(median http.spring.rps)" ]; then
  g=$(spring_goals http 2 '')
  row "http   Spring Kafka + HttpClient (c=$CONC)" http.spring "${g%%|*}" "${g#*|}"
fi
row "http   wrk -> handler (ceiling, c=$CONC)" http.ceiling
r=$(ratio "$(median https.errgate.rps)" "$(median https.ceiling.rps)")
row "https  errgate -> TLS proxy -> handler" https.errgate "$r" "of the TLS ceiling"
row "https  wrk -> TLS proxy -> handler (ceiling)" https.ceiling
printf '%.0s-' $(seq $W_ROW); echo
rss=$(for k in happy dlq http https; do median "$k.errgate.rss"; done | sort -g | tail -1)
echo "peak RSS of errgate (max over paths): ${rss} MiB   $(goal "$rss" '<=' 64 '<=64 MiB')"
echo
printf "%-44s %12s   %s\n" "decision cost (policy:failure)" "ns/decision" "goal"
for k in $(awk '$1 ~ /^decide\./{print $1}' "$W/results" | sort -u); do
  v=$(median "$k")
  name=${k#decide.}; name=${name%.ns}
  printf "%-44s %12s   %s\n" "$name" "$(fmt "$v")" "$(goal "$v" '<=' 1000 '<=1us')"
done
