"""healthz_probe.py ADDR STOPFILE — polls http://ADDR/healthz every 50 ms
until STOPFILE exists, then prints "probes N failed F max_ms M" (M: the
slowest answer; a probe that fails or takes over 10 s counts as failed).
The e2e tests use it to prove the event loop never waits (on a reload)."""
import os, sys, time, urllib.request

addr, stop = sys.argv[1], sys.argv[2]
worst, n, bad = 0.0, 0, 0
while not os.path.exists(stop):
    t0 = time.monotonic()
    try:
        ok = urllib.request.urlopen("http://%s/healthz" % addr, timeout=10).status == 200
    except Exception:
        ok = False
    dt = time.monotonic() - t0
    n += 1
    bad += not ok
    worst = max(worst, dt)
    time.sleep(0.05)
print("probes %d failed %d max_ms %d" % (n, bad, worst * 1000))
