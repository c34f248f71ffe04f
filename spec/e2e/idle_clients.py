"""idle_clients.py ADDR N SECONDS OUT — open N TCP connections to ADDR
(host:port), send nothing, and watch them until SECONDS after the first
connect. Writes one JSON line to OUT: how many could not connect, how many
the server closed within 3 s of their own connect ("fast"), how many later
("late", with the time of the last close since the first connect), and how
many were still open at the end. Closes are watched while connecting too."""
import json, select, socket, sys, time

host, port = sys.argv[1].rsplit(":", 1)
n, secs, out = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
t0 = time.time()
open_ = {}  # fileno -> (socket, connect time)
st = {"failed": 0, "closed_fast": 0, "closed_late": 0, "last_close_s": 0.0}

def watch(timeout):
    if not open_:
        time.sleep(timeout)
        return
    r, _, _ = select.select([s for s, _ in open_.values()], [], [], timeout)
    now = time.time()
    for s in r:
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if data:
            continue
        _, at = open_.pop(s.fileno())
        s.close()
        if now - at < 3.0:
            st["closed_fast"] += 1
        else:
            st["closed_late"] += 1
            st["last_close_s"] = round(now - t0, 2)

for _ in range(n):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((host, int(port)))
        s.setblocking(False)
        open_[s.fileno()] = (s, time.time())
    except OSError:
        st["failed"] += 1
        s.close()
    watch(0)
while open_ and time.time() - t0 < secs:
    watch(0.2)
st["still_open"] = len(open_)
with open(out, "w") as f:
    f.write(json.dumps(st) + "\n")
