#!/usr/bin/env bash
# test_http_tls.sh — the HTTP target over TLS, against a throwaway CA made
# by openssl here: delivery with tls.ca_file; mutual TLS with cert_file and
# key_file (and server_name); a missing client certificate, a wrong CA or a
# wrong name deliver nothing, commit nothing and log code `tls`; verify =
# false is warned about; the mTLS run is under valgrind. Static headers: a file-sourced token and a literal
# arrive at the handler, the token is re-read on SIGHUP and never appears in
# a log. Every target.http key is checked (bad values: exit 2, one line).
source "$(dirname "$0")/lib.sh"
command -v openssl >/dev/null || die "openssl is not installed"

# ---- certificates: a CA, a server for localhost/127.0.0.1, a client, another CA
P=$T/pki; mkdir -p "$P"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
mkca() { openssl req -x509 "${ec[@]}" -keyout "$P/$1.key" -out "$P/$1.crt" -days 2 -subj "/CN=$1" 2>/dev/null; }
mkcert() { # NAME CA EXT
  openssl req "${ec[@]}" -keyout "$P/$1.key" -out "$P/$1.csr" -subj "/CN=$1" 2>/dev/null &&
    openssl x509 -req -in "$P/$1.csr" -CA "$P/$2.crt" -CAkey "$P/$2.key" -CAcreateserial -days 2 \
      -out "$P/$1.crt" -extfile <(printf '%s\n' "$3") 2>/dev/null
}
mkca ca && mkca otherca && mkcert server ca "subjectAltName=DNS:localhost,IP:127.0.0.1" &&
  mkcert client ca "extendedKeyUsage=clientAuth" || die "openssl could not make the test certificates"

start_broker --topic tls:1 --topic tls.dlq:1 --topic mtls:1 --topic mtls.dlq:1 --topic bad:1 --topic bad.dlq:1 \
  --topic bad.quarantine:1 --topic tls.quarantine:1 --topic mtls.quarantine:1 --topic h2:1 --topic h2.dlq:1 --topic h2.quarantine:1
bg srv $PY "$ROOT/spec/e2e/capture_server.py" "$T/srv.jsonl" --tls "$P/server.crt" "$P/server.key"
bg msrv $PY "$ROOT/spec/e2e/capture_server.py" "$T/msrv.jsonl" --tls "$P/server.crt" "$P/server.key" --client-ca "$P/ca.crt"
wait_for 10 grep -q '^listening=' "$T/srv.out" || die "TLS server did not start"
wait_for 10 grep -q '^listening=' "$T/msrv.out" || die "mTLS server did not start"
SRV=$(sed -n 's/^listening=//p' "$T/srv.out"); MSRV=$(sed -n 's/^listening=//p' "$T/msrv.out")

SECRET="s3cr3t-$RANDOM$RANDOM"
printf 'Bearer %s-v1\n' "$SECRET" >"$T/token"
# conf FILE GROUP TOPIC URL TLS_TABLE [HEADERS]
conf() {
  cat >"$1" <<CFG
return { group = "$2", source = { topics = { "$3" } },
  target = { http = { url = "$4", timeout = 3000, concurrency = 4, tls = $5, ${6:-} } },
  policy = "$ROOT/policies/default.lua", commit_interval = 200, log = { level = "debug" } }
CFG
}
nreq() { [ -f "$1" ] && grep -c . "$1" || echo 0; }

# ---- delivery with ca_file (a host name: resolved by curl off the loop), static headers
for i in $(seq 10); do printf 'k%d\tv%d\n' "$i" "$i"; done | produce tls
conf "$T/tls.lua" g-tls tls "https://localhost:${SRV##*:}/in" "{ ca_file = \"$P/ca.crt\" }" \
  'headers = { Authorization = { file = "token" }, ["X-Tenant"] = "a" }'
start_gateway gw "$T/tls.lua"
wait_drained g-tls tls 30 && ok "https with ca_file: every record delivered" || not_ok "lag $(lag g-tls tls)"
hdrs() { $PY -c '
import json, sys
for l in open(sys.argv[1]):
    h = {k.lower(): v for k, v in json.loads(l)["headers"]}
    print(h.get("authorization"), h.get("x-tenant"))' "$1" | sort | uniq -c | awk '{$1=$1; print}'; }
got=$(hdrs "$T/srv.jsonl")
check "the file-sourced token and the literal header arrive with every request" test "$got" = "10 Bearer $SECRET-v1 a"
printf 'Bearer %s-v2\n' "$SECRET" >"$T/token"
kill -HUP "$GW_PID"
wait_for 10 grep -q '"event":"reload"' "$T/gw.err"
for i in $(seq 3); do printf 'n%d\tv%d\n' "$i" "$i"; done | produce tls
wait_drained g-tls tls 30 || not_ok "lag after reload $(lag g-tls tls)"
check "after SIGHUP the token file is read again" bash -c "[ \"\$(grep -c '$SECRET-v2' '$T/srv.jsonl')\" = 3 ]"
stop_gateway "$GW_PID"

# ---- mutual TLS (and server_name: the URL names 127.0.0.1, the certificate is checked for localhost)
for i in $(seq 5); do printf 'k%d\tv%d\n' "$i" "$i"; done | produce mtls
conf "$T/mtls.lua" g-mtls mtls "https://$MSRV/in" \
  "{ ca_file = \"$P/ca.crt\", cert_file = \"$P/client.crt\", key_file = \"$P/client.key\", server_name = \"localhost\" }"
# under valgrind (memcheck, full leak check: slow, hence the long timeout) unless this is the sanitizer build
sed -i 's/timeout = 3000/timeout = 30000/' "$T/mtls.lua"
if [ "${SAN:-}" = 1 ]; then start_gateway gwm "$T/mtls.lua"; else bg gwm "${VG[@]}" "$EG_BIN" run -c "$T/mtls.lua"; GW_PID=$LASTPID; fi
wait_drained g-mtls mtls 90 && ok "mutual TLS with cert_file/key_file: every record delivered" || not_ok "lag $(lag g-mtls mtls)"
stop_gateway "$GW_PID"
[ "${SAN:-}" = 1 ] || check "mutual TLS under valgrind: exit 0, no memcheck errors, no leaks (exit $RC)" vg_ok "$RC" 0 "$T/gwm.err"
check "the mTLS server saw 5 requests" test "$(nreq "$T/msrv.jsonl")" = 5
check "over TLS keep-alive no request failed (no decision logged)" bash -c "! grep -q '\"event\":\"decision\"' '$T/gw.err' '$T/gwm.err'"

# ---- failures: nothing delivered, nothing committed, code tls
for i in $(seq 3); do printf 'b%d\tv%d\n' "$i" "$i"; done | produce bad
# tls_fails NAME URL TLS_TABLE SERVER_LOG
tls_fails() {
  local before; before=$(nreq "$4")
  conf "$T/$1.lua" "g-$1" bad "$2" "$3"
  start_gateway "$1" "$T/$1.lua"
  check "$1: the failure is kind connect, code tls" \
    wait_for 30 grep -q '"event":"decision".*"kind":"connect".*"code":"tls"' "$T/$1.err"
  sleep 1
  stop_gateway "$GW_PID"
  check "$1: nothing delivered" test "$(nreq "$4")" = "$before"
  check "$1: nothing committed" bash -c "'$EG' offsets -b '$BOOTSTRAP' -g 'g-$1' bad | awk '\$1==\"bad\" && \$3 > 0 {bad=1} END {exit bad}'"
}
tls_fails wrongca "https://$SRV/in" "{ ca_file = \"$P/otherca.crt\" }" "$T/srv.jsonl"
tls_fails wrongname "https://$SRV/in" "{ ca_file = \"$P/ca.crt\", server_name = \"wrong.example\" }" "$T/srv.jsonl"
tls_fails nocert "https://$MSRV/in" "{ ca_file = \"$P/ca.crt\" }" "$T/msrv.jsonl"

# ---- verify = false: delivered to the impostor, warned at start
conf "$T/noverify.lua" g-noverify bad "https://$SRV/in" "{ ca_file = \"$P/otherca.crt\", verify = false }"
start_gateway noverify "$T/noverify.lua"
wait_drained g-noverify bad 30 && ok "verify = false: delivered without checking" || not_ok "lag $(lag g-noverify bad)"
stop_gateway "$GW_PID"
check "verify = false logs a warning at start" grep -q '"level":"warn","event":"tls_verify_off"' "$T/noverify.err"

# ---- version = "2": HTTP/2 over TLS multiplexes the requests (needs node for an h2 server)
if command -v node >/dev/null; then
  bg h2 node "$ROOT/spec/e2e/h2_server.js" "$P/server.crt" "$P/server.key" "$T/h2.jsonl"
  wait_for 10 grep -q '^listening=' "$T/h2.out" || die "h2 server did not start: $(cat "$T/h2.err")"
  for i in $(seq 40); do printf 'k%d\tv%d\n' "$i" "$i"; done | produce h2
  conf "$T/h2.lua" g-h2 h2 "https://$(sed -n 's/^listening=//p' "$T/h2.out")/in" "{ ca_file = \"$P/ca.crt\" }" 'version = "2"'
  sed -i 's/concurrency = 4/concurrency = 8/' "$T/h2.lua"
  start_gateway h2gw "$T/h2.lua"
  wait_drained g-h2 h2 30 && ok "version 2: every record delivered over HTTP/2" || not_ok "lag $(lag g-h2 h2)"
  stop_gateway "$GW_PID"
  conns=$($PY -c 'import json,sys; print(len({json.loads(l)["port"] for l in open(sys.argv[1])}))' "$T/h2.jsonl")
  check "version 2: 40 requests at concurrency 8 over $conns connection(s)" test "$conns" -le 2
  check "version 2: no request failed" bash -c "! grep -q '\"event\":\"decision\"' '$T/h2gw.err'"
else
  diag "node not installed: the HTTP/2 check is skipped"
fi

check "the token never appears in a log" bash -c "! grep -l '$SECRET' '$T'/*.err '$T'/*.out"

# ---- every key is checked
bad_conf() { # NAME WANT HTTP_TABLE_BODY
  printf 'return { group = "g", source = { topics = { "bad" } }, target = { http = { %s } }, policy = "%s" }\n' \
    "$3" "$ROOT/policies/default.lua" >"$T/$1.lua"
  local rc=0
  timeout 20 "$EG" run -c "$T/$1.lua" >/dev/null 2>"$T/$1.cerr" || rc=$?
  if [ "$rc" = 2 ] && [ "$(grep -c . "$T/$1.cerr")" = 1 ] && grep -qF -- "$2" "$T/$1.cerr" && ! grep -q "$SECRET" "$T/$1.cerr"; then
    ok "config $1: exit 2, one line naming '$2'"
  else
    not_ok "config $1: exit $rc: $(head -2 "$T/$1.cerr")"
  fi
}
U="url = \"https://$SRV/\""
bad_conf scheme "target.http.url: expected an http:// or https:// URL" 'url = "ftp://x/"'
bad_conf tls_on_http "target.http.tls: only for an https:// URL" "url = \"http://$SRV/\", tls = {}"
bad_conf tls_key "unknown key 'target.http.tls.ca'" "$U, tls = { ca = \"x\" }"
bad_conf tls_verify "target.http.tls.verify: expected true or false" "$U, tls = { verify = \"no\" }"
bad_conf ca_missing "target.http.tls.ca_file: cannot read file" "$U, tls = { ca_file = \"/nonexistent/ca.pem\" }"
bad_conf key_alone "target.http.tls.key_file: needs target.http.tls.cert_file" "$U, tls = { key_file = \"$P/client.key\" }"
bad_conf server_name "target.http.tls.server_name: expected a DNS name" "$U, tls = { server_name = \"a b\" }"
bad_conf version "target.http.version: expected \"1.1\" or \"2\"" "$U, version = \"3\""
bad_conf max_bytes "target.http.max_response_bytes" "$U, max_response_bytes = -1"
bad_conf hdr_reserved "\"Errgate-Id\" is not a header name" "$U, headers = { [\"Errgate-Id\"] = \"x\" }"
bad_conf hdr_name "\"a b\" is not a header name" "$U, headers = { [\"a b\"] = \"x\" }"
bad_conf hdr_value "target.http.headers.X-A: the value must be" "$U, headers = { [\"X-A\"] = \"a\\nb\" }"
bad_conf hdr_type "target.http.headers.X-A: expected a string or { file" "$U, headers = { [\"X-A\"] = 5 }"
bad_conf hdr_file "target.http.headers.X-A.file: cannot read file" "$U, headers = { [\"X-A\"] = { file = \"/nonexistent/t\" } }"
bad_conf hdr_file_key "unknown key 'target.http.headers.X-A.path'" "$U, headers = { [\"X-A\"] = { path = \"t\" } }"
printf 'Bearer %s\nsecond line\n' "$SECRET" >"$T/two-lines"
bad_conf hdr_file_content "target.http.headers.X-A: file '$T/two-lines' is not printable text on one line" \
  "$U, headers = { [\"X-A\"] = { file = \"$T/two-lines\" } }"
