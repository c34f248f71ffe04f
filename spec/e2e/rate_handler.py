"""rate_handler.py — an HTTP target that logs when each request arrived (for
e2e/test_target_rate and test_budget_keyed).

    rate_handler.py LOG

Listens on 127.0.0.1, a free port; the first stdout line is
`listening=127.0.0.1:PORT`. Every request appends `T ID MODE STATUS` to LOG
(T: time.monotonic() at arrival, seconds; ID: the record value's "id" or
"-"; flushed per line), then answers by the value's "mode": `transient-N`
503 for the first N requests of that id then 200, `unavailable` 503 always,
`permanent` 400, anything else 200. SIGTERM ends it.
"""
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = open(sys.argv[1], "a", buffering=1)
LOCK = threading.Lock()
SEEN = {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        t = time.monotonic()
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n > 0 else b""
        try:
            v = json.loads(body)
            rid, mode = str(v.get("id", "-")), str(v.get("mode", "ok"))
        except (ValueError, AttributeError):
            rid, mode = "-", "ok"
        with LOCK:
            SEEN[rid] = SEEN.get(rid, 0) + 1
            seen = SEEN[rid]
        status = 200
        if mode.startswith("transient-") and seen <= int(mode.split("-", 1)[1]):
            status = 503
        elif mode == "unavailable":
            status = 503
        elif mode == "permanent":
            status = 400
        with LOCK:
            LOG.write("%.6f %s %s %d\n" % (t, rid, mode, status))
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_PUT = do_POST


srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
print("listening=127.0.0.1:%d" % srv.server_address[1], flush=True)
srv.serve_forever()
