"""soak.py — errgate's soak run (`make soak MINUTES=N`).

    soak.py [--minutes N] [--rate R] [--seed S] [--period P] [--csv FILE] [--out DIR]

The chaos runner's setting (chaos.py: one `errgate broker --brokers 3`,
the flaky handler, three gateways in one group with spill journals and the
ladder policy; admin endpoints on) under a steady load of R records a second
(default 150, the chaos mix of modes, one long-lived idempotent producer)
for N minutes, with one fault every P seconds (default 30) drawn from the
seed: kill -9 or SIGTERM (and restart) of gw1 or gw2, request errors, a lane
fault past spill.after, a target slowdown, a reload (good or broken).
gw0 is never killed: its series is the one without restarts.

Every 10 s it samples, per running gateway: RSS (VmRSS), open fds
(/proc/PID/fd), errgate_tracked_offsets and errgate_inflight_records (sums
from /metrics); and for the run: spill journal bytes on disk (all journals)
and the group's lag on the source and the rungs. The series is printed as a
table as it comes and written as CSV (--csv, default soak.csv in the
scratch directory, whose path is printed; the scratch directory, with
every process's log, is kept).

After a warm-up (the first fifth, at least 60 s or a third of a short
run) it asserts no upward trend:
for gw0's RSS, gw0's fds, tracked offsets and lag, the least-squares growth
over the rest of the run must stay within its noise (3 standard deviations
of the residuals) or a floor (RSS 4 MiB, fds 2, tracked and lag 10 s of
load); and gw0's highest fd count in the last third is at most the highest
of the first third (after warm-up) + 2. Then it settles and audits exactly
as a chaos seed does (missing, misrouted, committed = end, journals empty).
Exit 0 when all holds.
"""
import argparse
import heapq
import os
import random
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import chaos  # noqa: E402

SOAK_FAULTS = ["kill9", "sigterm", "req_err", "lane_fault", "slowdown", "reload"]


class SoakPlan:
    """What a chaos.Run needs of a plan; records are appended as produced."""

    def __init__(self, seed):
        self.seed, self.short, self.ordering = seed, False, "none"
        self.broker, self.transactional, self.fence = "embedded", False, None  # what chaos.Run reads
        self.records = []


def rss_kib(pid):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def fds(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return None


def metric_sum(addr, name):
    try:
        body = urllib.request.urlopen("http://%s/metrics" % addr, timeout=5).read().decode()
    except OSError:
        return None
    total = 0.0
    for line in body.splitlines():
        if line.startswith(name) and line[len(name):len(name) + 1] in ("{", " "):
            total += float(line.rsplit(None, 1)[1])
    return total


def admin_addr(run, slot):
    import json
    name = run.gws[slot]["name"]
    try:
        for line in open(run.path(name + ".err"), errors="replace"):
            if '"admin_listening"' in line:
                return json.loads(line).get("address")
    except (OSError, ValueError):
        pass
    return None


def trend(xs, ys):
    """(growth over the span by least squares, standard deviation of the residuals)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    res = [y - (my + slope * (x - mx)) for x, y in zip(xs, ys)]
    return slope * (xs[-1] - xs[0]), statistics.pstdev(res)


def main():
    ap = argparse.ArgumentParser(description="errgate's soak run")
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--rate", type=int, default=150, help="records a second")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--period", type=float, default=30, help="seconds between faults")
    ap.add_argument("--csv", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    plan = SoakPlan(args.seed)
    run = chaos.Run(plan, args.out, verbose=False)
    run.protected = {0}
    csv_path = args.csv or run.path("soak.csv")
    cols = ["t", "rss0_kib", "rss1_kib", "rss2_kib", "fds0", "fds1", "fds2", "journal_bytes", "tracked", "inflight", "lag"]
    rows, failures = [], []
    mix = chaos.MIX["free"]
    modes, weights = [m for m, _ in mix], [w for _, w in mix]
    try:
        run.seqno = iter(range(1, 1 << 30))
        run.start_broker()
        run.start_handler()
        run.write_configs(admin=True)
        prod = subprocess.Popen([chaos.PY, chaos.PRODUCE, run.bootstrap, "src", "-"], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=open(run.path("stream.err"), "w"))
        run.t0 = chaos.now()
        run.mark("start")
        for slot in range(3):
            run.start_gw(slot)
        queue, seq, n = [], {}, 0
        duration = args.minutes * 60
        next_fault, next_sample = args.period, 10.0
        print("soak: %g min, %d records/s, a fault every %g s; scratch %s" % (args.minutes, args.rate, args.period, run.dir))
        print(" ".join("%10s" % c for c in cols), flush=True)
        with open(csv_path, "w") as csv:
            csv.write(",".join(cols) + "\n")
            while True:
                el = chaos.now() - run.t0
                if el >= duration:
                    break
                # the steady load: the records due by now
                due = int(el * args.rate)
                lines = []
                while n < due:
                    n += 1
                    rec = "k%d\t{\"id\":\"r%d\",\"mode\":\"%s\"}\n" % (rng.randrange(997), n, rng.choices(modes, weights)[0])
                    lines.append(rec)
                plan.records.extend(lines)
                prod.stdin.write("".join(lines).encode())
                prod.stdin.flush()
                while queue and queue[0][0] <= el:
                    run.follow_up(heapq.heappop(queue)[2])
                run.check_alive()
                if el >= next_fault:
                    kind = rng.choice(SOAK_FAULTS)
                    f = {"kind": kind, "t": el, "pick": rng.random()}
                    f.update(chaos.fault_params(rng, kind, "none", seq.get("reload", 0) == 0))
                    seq[kind] = seq.get(kind, 0) + 1
                    run.fault(f, queue, seq[kind])
                    next_fault += args.period
                if el >= next_sample:
                    row = sample(run, el)
                    rows.append(row)
                    csv.write(",".join("" if v is None else str(v) for v in row) + "\n")
                    csv.flush()
                    print(" ".join("%10s" % ("-" if v is None else v) for v in row), flush=True)
                    next_sample += 10
                time.sleep(0.2)
        prod.stdin.close()
        run.producers.append(("stream", prod))
        run.faults_done = seq
        failures += check_trends(rows, cols, args.rate)
        run.settle()
    except chaos.SeedFailed as e:
        failures.append(str(e))
    finally:
        run.close()
    failures = run.failures + failures
    res = getattr(run, "result", {})
    print("soak: records=%s missing=%s misrouted=%s dup=%s faults=%s samples=%d csv=%s" % (
        res.get("records", "?"), res.get("missing", "?"), res.get("misrouted", "?"), res.get("dup", "?"),
        ",".join("%s:%d" % kv for kv in sorted(getattr(run, "faults_done", {}).items())), len(rows), csv_path))
    for f in failures:
        print("# failure: " + f)
    if failures:
        print("# fault log:")
        for line in run.flog:
            print("#   " + line)
    sys.exit(1 if failures else 0)


def sample(run, el):
    row = [round(el)]
    rss, fd = [], []
    for slot in range(3):
        g = run.gws.get(slot)
        pid = g["proc"].pid if g and g["proc"] is not None else None
        rss.append(rss_kib(pid) if pid else None)
        fd.append(fds(pid) if pid else None)
    journal = 0
    for slot in range(4):
        d = run.path("spill%d" % slot)
        for name in os.listdir(d) if os.path.isdir(d) else []:
            try:
                journal += os.path.getsize(os.path.join(d, name))
            except OSError:
                pass
    tracked = inflight = 0
    for slot in run.running():
        addr = admin_addr(run, slot)
        if addr:
            tracked += metric_sum(addr, "errgate_tracked_offsets") or 0
            inflight += metric_sum(addr, "errgate_inflight_records") or 0
    offs = run.offsets(["src"] + ["src.retry." + r for r in chaos.RUNGS])
    lag = sum(end - (c or 0) for c, end in offs.values())
    return row + rss + fd + [journal, int(tracked), int(inflight), lag]


def check_trends(rows, cols, rate):
    """The no-upward-trend checks after the warm-up; a list of failures."""
    if len(rows) < 6:
        return ["too few samples (%d) to judge a trend" % len(rows)]
    warm = max(min(60, rows[-1][0] / 3), rows[-1][0] / 5)
    rest = [r for r in rows if r[0] >= warm]
    out = []
    floors = {"rss0_kib": 4096, "fds0": 2, "tracked": rate * 10, "lag": rate * 10}
    for col, floor in floors.items():
        i = cols.index(col)
        pts = [(r[0], r[i]) for r in rest if r[i] is not None]
        if len(pts) < 4:
            out.append("%s: too few samples after warm-up" % col)
            continue
        growth, noise = trend([p[0] for p in pts], [p[1] for p in pts])
        verdict = growth <= max(3 * noise, floor)
        print("# trend %-9s growth %+.0f over %d s after warm-up, noise %.0f, floor %d: %s" % (
            col, growth, pts[-1][0] - pts[0][0], noise, floor, "ok" if verdict else "UPWARD"))
        if not verdict:
            out.append("%s grows: %+.0f over the run (noise %.0f, floor %d)" % (col, growth, noise, floor))
    i = cols.index("fds0")
    third = max(1, len(rest) // 3)
    first = [r[i] for r in rest[:third] if r[i] is not None]
    last = [r[i] for r in rest[-third:] if r[i] is not None]
    if first and last and max(last) > max(first) + 2:
        out.append("gw0 fds grow: first third max %d, last third max %d" % (max(first), max(last)))
    return out


if __name__ == "__main__":
    main()
