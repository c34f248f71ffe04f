"""idle_hold.py ADDR N SECONDS OUT [SRC...] — hold N idle TCP connections to
ADDR (host:port) for SECONDS: send nothing, and open a new one at once for
each the server closes, so N stay open from the client's side all along.
With SRC addresses (e.g. 127.0.0.2 127.0.0.3) the connections are spread
over them round-robin (several peers); else they all come from the default
source (one peer). Writes one JSON line to OUT: connects made, connects
that failed, closes seen (by the server), and the most connections open at
once."""
import json, select, socket, sys, time

host, port = sys.argv[1].rsplit(":", 1)
n, secs, out = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
srcs = sys.argv[5:] or [None]
st = {"connects": 0, "failed": 0, "closed": 0, "max_open": 0}
open_ = {}  # fileno -> socket
k = 0


def connect():
    global k
    src = srcs[k % len(srcs)]
    k += 1
    s = socket.socket()
    s.settimeout(2)
    try:
        if src:
            s.bind((src, 0))
        s.connect((host, int(port)))
        s.setblocking(False)
        open_[s.fileno()] = s
        st["connects"] += 1
    except OSError:
        st["failed"] += 1
        s.close()


t0 = time.time()
while time.time() - t0 < secs:
    while len(open_) < n and time.time() - t0 < secs:
        connect()
    st["max_open"] = max(st["max_open"], len(open_))
    r, _, _ = select.select(list(open_.values()), [], [], 0.05)
    for s in r:
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if data:
            continue
        del open_[s.fileno()]
        s.close()
        st["closed"] += 1
for s in open_.values():
    s.close()
with open(out, "w") as f:
    f.write(json.dumps(st) + "\n")
