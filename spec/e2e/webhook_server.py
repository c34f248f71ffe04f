"""webhook_server.py — an alert receiver for `errgate dlq watch` tests.

Appends every POST body (it must be JSON) as one line to the file argv[1],
and answers 200, except to the first N requests (`--fail N`), which get 500
and are not logged. With `--hang` it logs every POST body and never answers
(a receiver that hangs). Prints `listening=127.0.0.1:PORT` first.
"""
import json, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log = open(sys.argv[1], "a", buffering=1)
fail = [int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--fail" else 0]
hang = "--hang" in sys.argv[2:]
lock = threading.Lock()

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if hang:
            with lock:
                log.write(body.decode() + "\n")
            time.sleep(3600)
            return
        with lock:
            failing = fail[0] > 0
            if failing:
                fail[0] -= 1
            else:
                json.loads(body)
                log.write(body.decode() + "\n")
        self.send_response(500 if failing else 200)
        self.send_header("Content-Length", "0")
        self.end_headers()

srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.daemon_threads = True
print("listening=127.0.0.1:%d" % srv.server_address[1], flush=True)
srv.serve_forever()
