"""hostile_http.py — an HTTP target that misbehaves at the byte level.

Usage: hostile_http.py SUCCESS_LOG EVENTS_LOG. Prints `listening=127.0.0.1:PORT`.

Each request body is a record value {"id": ..., "mode": "ok"|"permanent",
"hostile": HOSTILE}. `mode` is the verdict: ok is answered 200, permanent
400 with a JSON error body. `hostile` says how the FIRST answer for that id
is framed (later attempts are answered plainly):

  legal framings (the first answer is the verdict):
    interim   100 Continue and 103 Early Hints before the final answer
    chunked   chunked body
    http10    HTTP/1.0, body delimited by closing the connection
    huge      Content-Length 400 MiB, body streamed until the client stops
    slow      status line and headers dribbled over ~1 s
    idleclose the answer, then the connection closed 30 ms later while it
              waits idle in the client's cache (a keep-alive timeout)
  framings that cannot belong to the request (the client must fail it and
  never reuse the connection):
    extra     the answer, then at once an unsolicited second response with
              the opposite status
    overlong  a body longer than its Content-Length
    chunkextra  a chunked body, then at once the start of another response
    garbage   a malformed status line
    204body   204 No Content followed by a body
    reset     headers and half the body, then a TCP reset

The success log gets `ok ID ERRGATE_ID` for every 200 sent in a legal
framing (the accounting oracle's handler log). The events log gets one JSON
line per event: {"event": "answer", id, attempt, framing, status} and
{"event": "reused", ...} when a request arrives on a connection after an
answer that must have discarded it.
"""
import json, socket, socketserver, sys, threading, time

ok_log = open(sys.argv[1], "a", buffering=1)
ev_log = open(sys.argv[2], "a", buffering=1)
lock = threading.Lock()
attempts = {}
ILLEGAL = {"extra", "overlong", "chunkextra", "garbage", "204body", "reset"}
REJECT_BODY = b'{"error":{"code":"hostile_reject","message":"rejected by the hostile server"}}'


def event(**kv):
    with lock:
        ev_log.write(json.dumps(kv) + "\n")


def response(status, body, version=b"HTTP/1.1", extra=b""):
    reason = {200: b"OK", 400: b"Bad Request", 204: b"No Content"}.get(status, b"X")
    ctype = b"application/json" if body.startswith(b"{") else b"text/plain"
    return (version + b" %d " % status + reason + b"\r\nContent-Type: " + ctype +
            b"\r\nContent-Length: %d\r\n" % len(body) + extra + b"\r\n" + body)


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        sock = self.request
        rf = sock.makefile("rb")
        tainted = None
        while True:
            line = rf.readline()
            if not line:
                return
            headers = {}
            while True:
                h = rf.readline()
                if not h or h in (b"\r\n", b"\n"):
                    break
                k, _, v = h.decode("latin-1").partition(":")
                headers[k.strip().lower()] = v.strip()
            body = rf.read(int(headers.get("content-length", "0")))
            try:
                rec = json.loads(body)
            except ValueError:
                rec = {}
            rid = str(rec.get("id", "-"))
            eid = headers.get("errgate-id", "-")
            if tainted:
                event(event="reused", after=tainted, id=rid)
            with lock:
                attempts[rid] = attempts.get(rid, 0) + 1
                attempt = attempts[rid]
            accept = rec.get("mode") == "ok"
            status = 200 if accept else 400
            vbody = b"ok" if accept else REJECT_BODY
            framing = rec.get("hostile", "plain") if attempt == 1 else "plain"
            event(event="answer", id=rid, attempt=attempt, framing=framing, status=status, port=self.client_address[1])
            if framing not in ILLEGAL and accept:
                with lock:
                    ok_log.write("ok %s %s\n" % (rid, eid))
            how = self.answer(sock, framing, status, vbody)
            if how == "reset":  # close at once (no FIN first): the peer sees a reset
                rf.close()
                sock.close()
            if how:
                return
            if framing in ILLEGAL:
                tainted = framing

    def answer(self, sock, framing, status, body):
        if framing == "interim":
            sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n")
            time.sleep(0.01)
            sock.sendall(response(status, body))
        elif framing == "chunked":
            head = response(status, b"").replace(b"Content-Length: 0\r\n", b"Transfer-Encoding: chunked\r\n")
            chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7]) for i in range(0, len(body), 7))
            sock.sendall(head + chunks)
            time.sleep(0.01)
            sock.sendall(b"0\r\n\r\n")
        elif framing == "http10":
            sock.sendall(response(status, body, b"HTTP/1.0").replace(b"Content-Length: %d\r\n" % len(body), b""))
            sock.shutdown(socket.SHUT_WR)
            return "close"
        elif framing == "huge":
            total = 400 << 20
            sock.sendall(response(status, b"").replace(b"Content-Length: 0", b"Content-Length: %d" % total) + body)
            pad = b" " * 65536
            sent = len(body)
            try:
                while sent < total:
                    sock.sendall(pad)
                    sent += len(pad)
            except OSError:
                event(event="huge_stopped", sent=sent)
                return "close"
        elif framing == "idleclose":
            sock.sendall(response(status, body))
            time.sleep(0.03)
            event(event="idle_closed")
            return "close"
        elif framing == "slow":
            for b in response(status, body):
                sock.sendall(bytes([b]))
                time.sleep(0.01)
        elif framing == "extra":
            other = 400 if status == 200 else 200
            sock.sendall(response(status, body) + response(other, b"ok" if other == 200 else REJECT_BODY))
        elif framing == "overlong":
            sock.sendall(response(status, body).replace(b"Content-Length: %d" % len(body),
                                                        b"Content-Length: %d" % (len(body) - 1)) + b"HTTP/1.1 200 OK\r\n")
        elif framing == "chunkextra":
            head = response(status, b"").replace(b"Content-Length: 0\r\n", b"Transfer-Encoding: chunked\r\n")
            sock.sendall(head + b"%x\r\n%s\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n" % (len(body), body))
        elif framing == "garbage":
            sock.sendall(b"HTZP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\nok")
        elif framing == "204body":
            sock.sendall(b"HTTP/1.1 204 No Content\r\n\r\n" + response(200, b"ok"))
        elif framing == "reset":
            full = response(status, body + b" " * 100)
            sock.sendall(full[:len(full) - 60])
            time.sleep(0.05)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            return "reset"
        else:
            sock.sendall(response(status, body))
        return None


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = Server(("127.0.0.1", 0), Handler)
print("listening=127.0.0.1:%d" % srv.server_address[1], flush=True)
srv.serve_forever()
