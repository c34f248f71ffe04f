#!/usr/bin/env bash
# test_target_rate.sh — the rate limit towards the target (issue 30 item 3):
# target.rate = { per_second = 20, burst = 5 }, concurrency 16, ordering key.
# 60 records succeed at once and 20 fail once and climb a 1s rung
# (ladder_1s.lua), so the rung's consumer sends 20 more: 100 requests. The
# handler (rate_handler.py) logs when each one arrived. Checked:
#   - every record succeeded and every offset (source and rung) is committed;
#   - the requests took at least (100 - burst) / rate = 4.75 s (less 10%);
#   - no window of arrivals holds more than burst + rate x its length (plus
#     one request and 100 ms of arrival jitter): without the limit the first
#     80 arrive within a fraction of a second;
#   - the rung's 20 requests are among them, within the same bound (the
#     ladder obeys the same bucket);
#   - commits went on while records waited for tokens (a sample of the lag
#     between 0 and all), and errgate_target_rate_wait_seconds_total counted
#     the wait (> 1 s), errgate_target_rate_per_second shows 20.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ladder_lib.sh"
RATE=20 BURST=5 NOK=60 NTR=20
start_broker $(ladder_topics src 1s)
{
  for i in $(seq 1 $NOK); do printf 'k%d\t{"id":"ok%d","mode":"ok"}\n' $((i % 7)) "$i"; done
  for i in $(seq 1 $NTR); do printf 'k%d\t{"id":"tr%d","mode":"transient-1"}\n' $((i % 7)) "$i"; done
} | produce src
bg h $PY "$ROOT/spec/e2e/rate_handler.py" "$T/h.log"
wait_for 10 grep -q '^listening=' "$T/h.out" || die "handler did not start: $(cat "$T/h.err")"
HANDLER_URL="http://$(sed -n '1s/^listening=//p' "$T/h.out")/"
ladder_config "$T/gw.lua" rate src key "$FIXTURES/ladder_1s.lua" "rate = { per_second = $RATE, burst = $BURST }," \
  'admin = { listen = "127.0.0.1:0" },'
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin address: $(tail -3 "$T/gw.err")"

TOTAL=$((NOK + NTR))
: >"$T/lags.txt"
t_end=$((SECONDS + 90))
until [ "$(grep -c ' 200$' "$T/h.log" 2>/dev/null)" -ge "$TOTAL" ] && all_committed rate src src.retry.1s; do
  [ "$SECONDS" -ge "$t_end" ] && break
  lag rate src >>"$T/lags.txt"
  sleep 0.3
done
all_committed rate src src.retry.1s && [ "$(grep -c ' 200$' "$T/h.log")" -ge "$TOTAL" ] &&
  ok "every record succeeded and every offset is committed (source and rung)" ||
  not_ok "after 90 s: $(grep -c ' 200$' "$T/h.log") of $TOTAL succeeded, lag $(lag rate src)"
WAITED=$(metric "$ADDR" errgate_target_rate_wait_seconds_total)
PERSEC=$(metric "$ADDR" errgate_target_rate_per_second)
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]

pycheck "$T/h.log" "$RATE" "$BURST" "$NOK" "$NTR" "$T/lags.txt" "$WAITED" "$PERSEC" <<'PY'
import sys
from ladder_lanes import check, done
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
rate, burst, nok, ntr = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
t = sorted(float(r[0]) for r in rows)
n = len(t)
span = t[-1] - t[0] if n else 0
need = (n - burst) / rate
print("# %d requests over %.2f s (%.1f/s); at least %.2f s expected at %g/s, burst %g" % (n, span, (n - 1) / span if span else 0, need, rate, burst))
check(n == nok + 2 * ntr, "the handler saw %d requests (%d first attempts, %d from the rung)" % (n, nok + ntr, ntr))
check(span >= 0.9 * need, "they took %.2f s, at least (N - burst) / rate less 10%% (%.2f s)" % (span, 0.9 * need))
def worst(ts):
    """The window of arrivals with the largest excess over its allowance."""
    best = None
    for i in range(len(ts)):
        for j in range(i, len(ts)):
            cnt, allowed = j - i + 1, burst + rate * (ts[j] - ts[i] + 0.1) + 1
            if best is None or cnt - allowed > best[0] - best[3]:
                best = (cnt, i, j, allowed)
    return best
cnt, i, j, allowed = worst(t)
print("# tightest window: %d requests in %.3f s (allowed %.1f)" % (cnt, t[j] - t[i], allowed))
check(cnt <= allowed, "no window holds more than burst + rate x its length (+1, +100 ms jitter): worst %d in %.3f s, allowed %.1f"
      % (cnt, t[j] - t[i], allowed))
rung = sorted(float(r[0]) for r in rows if r[1].startswith("tr") and r[3] == "200")
first = {r[1]: float(r[0]) for r in reversed(rows) if r[1].startswith("tr")}
check(len(rung) == ntr and all(x - first[r[1]] >= 0.9 for r in rows if r[1].startswith("tr") and r[3] == "200" for x in [float(r[0])]),
      "the %d rung requests came at least the rung's 1 s after their first attempt" % len(rung))
lags = [int(x) for x in open(sys.argv[6]).read().split() if x.isdigit()]
total = nok + ntr
mid = [x for x in lags if 0 < x < total]
print("# source lag samples: %s" % " ".join(map(str, lags[:40])))
check(len(mid) >= 2, "commits went on while records waited for tokens (%d lag samples strictly between 0 and %d)" % (len(mid), total))
waited = float(sys.argv[7]) if sys.argv[7] not in ("", "?") else -1
check(waited > 1, "errgate_target_rate_wait_seconds_total counted the wait (%.2f s)" % waited)
check(sys.argv[8] not in ("", "?") and float(sys.argv[8]) == rate, "errgate_target_rate_per_second is %s" % sys.argv[8])
done()
PY
[ "$FAILED" = 0 ]
