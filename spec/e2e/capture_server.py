"""capture_server.py — an HTTP/1.1 keep-alive server for errgate's target tests.

Logs every request as one JSON line (client port, path, headers, body as
hex, concurrent requests at arrival) to the file given as argv[1], and
answers 200 after `sleep-MS` milliseconds when the body starts with
`sleep-MS`, else at once. Prints `listening=127.0.0.1:PORT` first.
With `--tls CERT KEY` it serves HTTPS; `--client-ca CA` then also requires
a client certificate signed by CA (mutual TLS).
"""
import json, ssl, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log = open(sys.argv[1], "a", buffering=1)
lock = threading.Lock()
active = [0]

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        with lock:
            active[0] += 1
            conc = active[0]
            log.write(json.dumps({"port": self.client_address[1], "path": self.path,
                                  "headers": [[k, v] for k, v in self.headers.items()],
                                  "body": body.hex(), "concurrent": conc}) + "\n")
        if body.startswith(b"sleep-"):
            time.sleep(int(body[6:].split(b" ")[0]) / 1000.0)
        with lock:
            active[0] -= 1
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.daemon_threads = True
args = sys.argv[2:]
if "--tls" in args:
    i = args.index("--tls")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args[i + 1], args[i + 2])
    if "--client-ca" in args:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(args[args.index("--client-ca") + 1])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print("listening=127.0.0.1:%d" % srv.server_address[1], flush=True)
srv.serve_forever()
