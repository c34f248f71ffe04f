"""capacity_handler.py — an HTTP target with a fixed capacity, for
e2e/test_target_adaptive: it serves at most CAP requests at once, each
taking DELAY seconds; one that arrives while CAP are in service is answered
503 at once (an overloaded service shedding load).

    capacity_handler.py LOG CAP DELAY

Listens on 127.0.0.1, a free port; the first stdout line is
`listening=127.0.0.1:PORT`. Every request appends `T INFLIGHT STATUS` to LOG
(T: time.monotonic() at arrival; INFLIGHT: requests in service when it
arrived, itself excluded). SIGTERM ends it.
"""
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = open(sys.argv[1], "a", buffering=1)
CAP, DELAY = int(sys.argv[2]), float(sys.argv[3])
LOCK = threading.Lock()
INFLIGHT = [0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        t = time.monotonic()
        n = int(self.headers.get("Content-Length") or 0)
        if n > 0:
            self.rfile.read(n)
        with LOCK:
            busy = INFLIGHT[0]
            admitted = busy < CAP
            if admitted:
                INFLIGHT[0] += 1
            LOG.write("%.6f %d %d\n" % (t, busy, 200 if admitted else 503))
        if admitted:
            time.sleep(DELAY)
            with LOCK:
                INFLIGHT[0] -= 1
        self.send_response(200 if admitted else 503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_PUT = do_POST


srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
print("listening=127.0.0.1:%d" % srv.server_address[1], flush=True)
srv.serve_forever()
