#!/usr/bin/env bash
# test_kafka_acls.sh — errgate on a cluster that authenticates (SASL) and
# authorizes (ACLs, nothing allowed that no ACL allows) every request, with
# exactly the least-privilege set of deploy/kafka-acls (errgate-acls.py):
#   - the gateway, as its own principal, consumes, dead-letters (creating
#     its lanes), commits, and writes and reads the audit topic (an
#     override set through the admin endpoint is applied);
#   - that set less the gateway's WRITE on its DLQ: the dead letters are
#     refused (TOPIC_AUTHORIZATION_FAILED), a loud hold (lane_write_refused,
#     counted), nothing committed past them; once the ACL is added they land
#     without a restart — so the test goes red when that ACL is missing;
#   - the operator principal reads the DLQ, resolves an item (creating and
#     writing LANE.state) and reads the gateway's lag, with its own
#     credentials in a --kafka-config file;
#   - an application principal produces to its source topic and is refused
#     (TOPIC_AUTHORIZATION_FAILED) writing or reading the audit topic and a
#     .state topic;
#   - a wrong password ends a command with exit 1, and a gateway at once
#     with exit 2, each with a line naming the refused credentials; no
#     password appears in any output.
# librdkafka before 2.6.1 cannot do SCRAM against Kafka 4.x, so on Debian 12
# the cluster tells clients PLAIN (spec/kafka/cluster.sh --sasl);
# test_kafka_acls_scram runs this with SCRAM-SHA-512 on Kafka 3.9.2.
# spec/run.sh: kafka only
source "$(dirname "$0")/lib.sh"
[ "$BROKER" = kafka ] || die "a real-cluster test: run it with BROKER=kafka"

ACLS="$ROOT/deploy/kafka-acls/errgate-acls.py"
PROBE="$ROOT/spec/e2e/acl_probe.py"
KAFKA_DIR=$T/kafka
"$ROOT/spec/kafka/cluster.sh" up --dir "$KAFKA_DIR" --user gw --user op --user app >"$T/kafka.out" 2>"$T/kafka.err" ||
  die "the SASL cluster did not start: $(tail -5 "$T/kafka.err")"
envv() { sed -n "s/^$1=//p" "$T/kafka.out" | head -1; }
BOOTSTRAP=$(envv bootstrap.servers)
MECH=$(envv sasl.mechanism)
ADMIN=$(envv sasl.user.admin.config) GWP=$(envv sasl.user.gw.config)
OPP=$(envv sasl.user.op.config) APPP=$(envv sasl.user.app.config)
[ -n "$BOOTSTRAP" ] && [ -n "$MECH" ] && [ -f "$ADMIN" ] && [ -f "$GWP" ] && [ -f "$OPP" ] && [ -f "$APPP" ] ||
  die "cluster.env lacks the SASL lines: $(cat "$T/kafka.out")"
unset ERRGATE_BOOTSTRAP
diag "SASL mechanism told to clients: $MECH"
# test_kafka_acls_scram runs this on a release that takes SCRAM from librdkafka 2.0.2
[ -z "${EXPECT_SASL_MECHANISM:-}" ] || check "the clients authenticate with $EXPECT_SASL_MECHANISM (told $MECH)" \
  [ "$MECH" = "$EXPECT_SASL_MECHANISM" ]

check "admin creates the source topic" eval '[ "$($PY "$PROBE" "$ADMIN" create src:2 2>"$T/create.err")" = "ok 1" ]'

ROLES=(--gateway User:gw --group acl-gw --source src --operator User:op --app User:app=src)
$PY "$ACLS" list "${ROLES[@]}" >"$T/acls.txt" 2>"$T/acls.err" || die "errgate-acls list: $(cat "$T/acls.err")"
MISSING="ALLOW User:gw WRITE TOPIC LITERAL src.dlq"
grep -qxF "$MISSING" "$T/acls.txt" || die "the ACL set lacks '$MISSING'"
grep -vxF "$MISSING" "$T/acls.txt" | $PY "$ACLS" apply --admin-config "$ADMIN" - 2>"$T/apply1.err"
check "the ACL set less the gateway's WRITE on src.dlq is applied ($(cat "$T/apply1.err"))" [ $? = 0 ]

# 40 records from the application principal; every fifth is refused by the target for good
gen_records 40 "ok:4 permanent:1" >"$T/records"
NPERM=$(grep -c '"mode":"permanent"' "$T/records")
out=$($PY "$PROBE" "$APPP" produce src <"$T/records" 2>&1)
check "the application produces to its source topic ($out)" [ "$out" = "ok 40" ]

# the gateway's config: its credentials in the kafka table (as a deployment would)
kafka_lua=$(awk -F= '/^(security.protocol|sasl\.)/ { printf "[\"%s\"] = \"%s\", ", $1, substr($0, index($0, "=") + 1) }' "$GWP")
start_handler
echo "acl-token" >"$T/token"
write_config "$T/gw.lua" acl-gw none \
  "admin = { listen = \"127.0.0.1:0\", token_file = \"$T/token\" },"
sed -i "s|kafka = { |kafka = { ${kafka_lua}[\"bootstrap.servers\"] = \"$BOOTSTRAP\", |" "$T/gw.lua"
grep -q 'sasl.username"\] = "gw"' "$T/gw.lua" || die "the gateway config has no SASL properties"
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin endpoint: $(tail -5 "$T/gw.err")"

refused_logged() { grep -q '"event":"lane_write_refused".*"lane":"src.dlq".*TOPIC_AUTHORIZATION_FAILED' "$T/gw.err"; }
wait_for 60 refused_logged
check "without WRITE on src.dlq the dead letter is refused, logged as lane_write_refused TOPIC_AUTHORIZATION_FAILED" refused_logged
refusals() { metric "$ADDR" errgate_lane_refusals_total 'TOPIC_AUTHORIZATION_FAILED'; }
check "the refusals are counted ($(refusals))" eval '[ "$(refusals)" != "?" ] && [ "$(refusals)" -ge 1 ]'
oplag() { "$EG" offsets --kafka-config "$OPP" -g acl-gw src 2>>"$T/offsets.err" | awk '$1=="total"{print $4}'; }
lag_now=$(oplag)
check "nothing is committed past the refused records (lag $lag_now, as the operator)" eval '[ -n "$lag_now" ] && [ "$lag_now" -gt 0 ]'

$PY "$ACLS" apply "${ROLES[@]}" --admin-config "$ADMIN" 2>"$T/apply2.err"
check "the whole set applied (again: existing ACLs are no error)" [ $? = 0 ]
oplag_zero() { [ "$(oplag)" = 0 ]; }
wait_for 90 oplag_zero
check "with its ACLs the gateway catches up without a restart: lag 0 ($(oplag))" oplag_zero
out=$($PY "$PROBE" "$ADMIN" consume src.dlq 2>&1)
check "every permanent failure is in the DLQ exactly once ($out, $NPERM expected)" [ "$out" = "ok $NPERM" ]
check "the gateway created its lanes under its own principal" grep -q '"event":"lane_topic_created".*src.dlq' "$T/gw.err"

# the audit topic: an override through the admin endpoint is written and read back by the gateway
out=$("$EG" ctl --admin "http://$ADDR" --token-file "$T/token" override set acl-hold --class permanent --action hold \
  --ttl 1h --reason "acl test" --by op 2>&1)
check "ctl override set is accepted ($out)" grep -q "override acl-hold set" <<<"$out"
applied() { "$EG" ctl --admin "http://$ADDR" override list 2>/dev/null | grep -q acl-hold; }
wait_for 30 applied
check "the override went through the audit topic and is in force" applied
check "no audit error under the gateway's ACLs" eval '! grep -qE "\"event\":\"audit_[a-z_]*(error|failed)\"|AUTHORIZATION_FAILED\".*audit" "$T/gw.err"'

# the operator, with its own credentials over the gateway's config
out=$("$EG" dlq stats src.dlq --kafka-config "$OPP" 2>"$T/stats.err"); rc=$?
check "operator: dlq stats reads the DLQ (exit $rc)" eval '[ $rc = 0 ] && grep -q "$NPERM" <<<"$out"'
id=$("$EG" dlq tail src.dlq --kafka-config "$OPP" --json -n 1 2>"$T/tail.err" | $PY -c '
import json, sys
for line in sys.stdin:
    print(json.loads(line).get("id") or ""); break')
out=$("$EG" dlq resolve src.dlq --kafka-config "$OPP" --id "$id" --status closed 2>&1); rc=$?
check "operator: dlq resolve writes src.dlq.state (id '$id', exit $rc: $out)" eval '[ -n "$id" ] && [ "$rc" = 0 ]'
out=$("$EG" dlq stats src.dlq --kafka-config "$OPP" --by state 2>&1)
check "operator: the item reads closed from src.dlq.state" grep -q "closed" <<<"$out"

# the application is refused on the control topics
for t in errgate.audit src.dlq.state; do
  out=$(printf 'k\tforged\n' | $PY "$PROBE" "$APPP" produce "$t" 2>&1)
  check "the application cannot write $t ($out)" [ "$out" = "refused TOPIC_AUTHORIZATION_FAILED" ]
  out=$($PY "$PROBE" "$APPP" consume "$t" 2>&1)
  check "the application cannot read $t ($out)" [ "$out" = "refused TOPIC_AUTHORIZATION_FAILED" ]
done

# a wrong password
sed 's/^sasl.password=.*/sasl.password=not-the-password/' "$OPP" >"$T/bad.properties"
out=$("$EG" dlq stats src.dlq --kafka-config "$T/bad.properties" 2>&1); rc=$?
check "a wrong password: exit 1 and a line naming the refused credentials (exit $rc)" \
  exits_with "$rc" 1 "errgate dlq: the cluster refused the credentials (SASL authentication error" "$out"
# a gateway given a wrong password ends at start, saying so
sed 's/\["sasl.password"\] = "[^"]*"/["sasl.password"] = "not-the-password"/' "$T/gw.lua" >"$T/gw-bad.lua"
grep -q 'not-the-password' "$T/gw-bad.lua" || die "cannot write the bad-password config"
sed -i 's/listen = "127.0.0.1:0", //' "$T/gw-bad.lua"
t0=$SECONDS
out=$(timeout 120 "$EG" run -c "$T/gw-bad.lua" 2>&1); rc=$?
printf '%s\n' "$out" >"$T/gw-bad.err"
check "a gateway with a wrong password exits 2 at start (exit $rc)" \
  exits_with "$rc" 2 "errgate run: the cluster refused the credentials (SASL authentication error" "$out"
check "at once, not after the start's 30 s wait for brokers ($((SECONDS - t0)) s)" [ $((SECONDS - t0)) -lt 15 ]

stop_gateway "$GW_PID"
check "the gateway stops cleanly (exit $RC)" [ "$RC" = 0 ]
leaked=""
for u in admin gw op app; do
  pw=$(envv "sasl.user.$u")
  grep -lF -- "$pw" "$T"/*.err "$T"/*.out "$T"/*.log 2>/dev/null | grep -v '/kafka.out$' && leaked+=" $u"
done
check "no password in any output of errgate or the test's clients${leaked:+ (leaked:$leaked)}" [ -z "$leaked" ]
exit $FAILED
