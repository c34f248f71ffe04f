// h2_server.js — an HTTP/2-only TLS server for test_http_tls.sh (run when
// node is installed). Usage: node h2_server.js CERT KEY LOG. Answers every
// request 200 and logs one JSON line per request: the client port (one per
// connection), the protocol version and the Errgate-Id header. Prints
// `listening=127.0.0.1:PORT` first.
const http2 = require("http2"), fs = require("fs");
const [cert, key, log] = process.argv.slice(2);
const out = fs.createWriteStream(log, { flags: "a" });
const srv = http2.createSecureServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key), allowHTTP1: false });
srv.on("stream", (stream, headers) => {
  stream.resume();
  stream.on("end", () => {
    out.write(JSON.stringify({ port: stream.session.socket.remotePort, version: "2",
                               id: headers["errgate-id"] }) + "\n");
    setTimeout(() => { stream.respond({ ":status": 200 }); stream.end("ok"); }, 20);
  });
});
srv.listen(0, "127.0.0.1", () => console.log("listening=127.0.0.1:" + srv.address().port));
