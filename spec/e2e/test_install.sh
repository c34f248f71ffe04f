#!/usr/bin/env bash
# test_install.sh — `make install` into a temporary DESTDIR gives a working
# errgate: the installed binary, run with no ERRGATE_* variable (env -i),
# finds its Lua runtime next to itself (PREFIX/share/errgate/lua), checks an
# installed policy, runs the embedded broker and a short gateway run on it
# with a Lua target, and `make uninstall` takes every file away again.
source "$(dirname "$0")/lib.sh"

DEST="$T/root"
PREFIX=/opt/errgate
INST="$DEST$PREFIX"
# env -i: nothing from the caller's environment, ERRGATE_* included
E() { env -i PATH=/usr/bin:/bin "$INST/bin/errgate" "$@"; }

make -s -C "$ROOT" install DESTDIR="$DEST" PREFIX="$PREFIX" BUILD="$BUILD" SAN="${SAN:-}" >"$T/install.out" 2>&1
check "make install DESTDIR=... PREFIX=$PREFIX succeeds (output in install.out)" [ $? = 0 ]
for f in bin/errgate share/errgate/lua/errgate/runtime.lua share/errgate/policies/default.lua \
         share/errgate/policies/lib/payments.lua share/errgate/examples/payments/config.lua \
         share/man/man1/errgate.1 lib/systemd/system/errgate@.service; do
  check "installed: $f" [ -s "$INST/$f" ]
done
check "the installed unit runs the installed binary" \
  grep -qx "ExecStart=$PREFIX/bin/errgate run -c /etc/errgate/%i.lua" "$INST/lib/systemd/system/errgate@.service"
check "the installed man page passes mandoc -T lint" mandoc -T lint "$INST/share/man/man1/errgate.1"

out=$(E --version); rc=$?
check "installed errgate --version (exit $rc)" exits_with "$rc" 0 '^librdkafka ' "$out"

# the policy loads through the installed runtime, found relative to the binary
out=$(E policy check "$INST/share/errgate/policies/default.lua" 2>&1); rc=$?
echo "$out" >"$T/check-default.out"
check "installed: policy check of the installed default policy passes (exit $rc)" exits_with "$rc" 0 '^lint      ok$' "$out"
out=$(E policy check "$INST/share/errgate/policies/payments.lua" 2>&1); rc=$?
check "installed: the payments policy finds its lib/ (exit $rc)" exits_with "$rc" 0 '^lint      ok$' "$out"
out=$(E policy check "$INST/share/errgate/examples/payments/policy.lua" 2>&1); rc=$?
check "installed: the payments example's policy finds its lib/ (exit $rc)" exits_with "$rc" 0 '^lint      ok$' "$out"
out=$(env -i ERRGATE_LUA_DIR="$T/nowhere" "$INST/bin/errgate" policy check "$INST/share/errgate/policies/default.lua" 2>&1); rc=$?
check "ERRGATE_LUA_DIR still overrides the installed runtime (exit $rc)" [ "$rc" = 1 ]

# the embedded broker, from the installed binary
env -i PATH=/usr/bin:/bin "$INST/bin/errgate" broker --topic src:2 --topic src.dlq:2 >"$T/broker.out" 2>"$T/broker.err" &
PIDS+=($!)
wait_for 10 grep -q '^control=' "$T/broker.out" || die "installed broker did not start: $(cat "$T/broker.err")"
BOOTSTRAP=$(sed -n 's/^bootstrap.servers=//p' "$T/broker.out" | head -1)
ok "installed: errgate broker starts ($BOOTSTRAP)"

# a short run: 20 records, one of which the Lua target refuses (400: dead-lettered)
cat >"$T/handler.lua" <<'LUA'
return function(record)
  if record.value == "bad" then return { status = 400, code = "invalid" } end
end
LUA
cat >"$T/gw.lua" <<CFG
return {
  kafka = { ["bootstrap.servers"] = "$BOOTSTRAP", ["session.timeout.ms"] = 6000 },
  group = "installed",
  source = { topics = { "src" } },
  target = { lua = "handler.lua" },
  policy = "$INST/share/errgate/policies/default.lua",
  commit_interval = 200,
}
CFG
{ for i in $(seq 1 20); do v=ok; [ "$i" = 7 ] && v=bad; printf 'k%d\t%s\n' "$i" "$v"; done; } | produce src
env -i PATH=/usr/bin:/bin "$INST/bin/errgate" run -c "$T/gw.lua" >"$T/gw.out" 2>"$T/gw.err" &
GW=$!
PIDS+=($GW)
lag() { E offsets -b "$BOOTSTRAP" -g installed src 2>/dev/null | awk '$1=="total"{print $4}'; }
drained() { [ "$(lag)" = 0 ]; }
check "installed: errgate run consumes and commits all 20 records (log in gw.err)" wait_for 60 drained
dlq=$(kcat -C -b "$BOOTSTRAP" -t src.dlq -e -q -f '%s\n' 2>/dev/null)
check "the refused record was dead-lettered by the installed policy ($dlq)" [ "$dlq" = bad ]
kill -TERM "$GW" 2>/dev/null; rc=0; wait "$GW" || rc=$?
check "installed: errgate run exits 0 on SIGTERM (exit $rc)" [ "$rc" = 0 ]

make -s -C "$ROOT" uninstall DESTDIR="$DEST" PREFIX="$PREFIX" BUILD="$BUILD" SAN="${SAN:-}" >"$T/uninstall.out" 2>&1
left=$(find "$DEST" -type f | wc -l)
check "make uninstall removes every installed file ($left left)" [ "$left" = 0 ]

echo "1..$TESTNO"
