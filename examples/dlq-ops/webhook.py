"""webhook.py — the story's alert receiver: appends each POSTed JSON body as
one line to the file argv[1], answers 200, prints listening=HOST:PORT."""
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

out = open(sys.argv[1], "a", buffering=1)

class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        out.write(json.dumps(json.loads(body)) + "\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

srv = HTTPServer(("127.0.0.1", 0), H)
print("listening=127.0.0.1:%d" % srv.server_address[1], flush=True)
srv.serve_forever()
