"""idle_clients.py ADDR N SECONDS OUT — open N TCP connections to ADDR
(host:port), send nothing, and watch them for SECONDS. Writes one JSON line
to OUT: how many could not connect, how many the server closed within 1 s,
and how many it closed later (with the time of the last close)."""
import json, select, socket, sys, time

host, port = sys.argv[1].rsplit(":", 1)
n, secs, out = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
t0 = time.time()
socks, failed = [], 0
for _ in range(n):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((host, int(port)))
        s.setblocking(False)
        socks.append(s)
    except OSError:
        failed += 1
        s.close()
open_ = {s.fileno(): s for s in socks}
closed_fast = closed_late = 0
last_close = 0.0
while open_ and time.time() - t0 < secs:
    r, _, _ = select.select(list(open_.values()), [], [], 0.2)
    for s in r:
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if data:
            continue
        now = time.time() - t0
        if now < 1.0:
            closed_fast += 1
        else:
            closed_late += 1
            last_close = now
        del open_[s.fileno()]
        s.close()
with open(out, "w") as f:
    f.write(json.dumps({"failed": failed, "closed_fast": closed_fast, "closed_late": closed_late,
                        "still_open": len(open_), "last_close_s": round(last_close, 2)}) + "\n")
