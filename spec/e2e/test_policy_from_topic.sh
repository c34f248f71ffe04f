#!/usr/bin/env bash
# test_policy_from_topic.sh — `errgate policy test FILE --from-topic LANE`:
# the CI regression gate that replays the failures recorded on a lane topic
# against a candidate policy. Lanes carrying each header profile (errgate's
# own, Spring Kafka's DLT with its binary partition/offset, Kafka Connect's
# DLQ), a headerless record, --limit and --since, usage errors, `policy check
# --ordering`, and a lane written by a running gateway re-checked against the
# policy that wrote it (no change) and against a candidate (changes named).
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"
POL="$ROOT/policies/default.lua"
# ptest FILE LANE [ARGS...]: policy test FILE --from-topic LANE; sets OUT and RC.
ptest() { local f=$1 l=$2; shift 2; OUT=$("$EG" policy test "$f" --from-topic "$l" -b "$BOOTSTRAP" "$@" 2>>"$T/ptest.err"); RC=$?; }

start_broker --topic orders.dlq:1 --topic orders-dlt:1 --topic connect-dlq:1 --topic every.dlq:1 --topic since.dlq:1 --topic hdr.dlq:1 \
  --topic src:2 --topic src.dlq:2 --topic src.quarantine:2

# a candidate that dead-letters nothing permanent: 400/404 go to quarantine
sed -e 's/name = "default"/name = "candidate"/' -e 's/permanent = "dlq",/permanent = "quarantine",/' \
  -e 's/action = "dlq", class = "permanent"/action = "quarantine", class = "permanent"/g' "$POL" >"$T/candidate.lua"
"$EG" policy check "$T/candidate.lua" >"$T/candidate.check" || die "candidate policy does not load: $(cat "$T/candidate.check")"

# --- errgate's own headers (kcat), an old-style record and a garbage one
kp() { kcat -P -b "$BOOTSTRAP" -t "$1" -X acks=all "${@:2}" 2>>"$T/kcat.err"; }
echo '{"id":"a"}' | kp orders.dlq -H error.kind=http -H error.status=400 -H error.code=http_400 \
  -H error.class=permanent -H error.message="400 Bad Request" -H errgate.action=dlq -H errgate.reason=permanent \
  -H errgate.policy=default@1+feedbeef -H errgate.id=orders/0/11 -H retry.count=0 -H original.topic=orders \
  -H original.partition=0 -H original.offset=11 -H trace-id=t-1
echo '{"id":"b"}' | kp orders.dlq -H error.kind=http -H error.status=503 -H error.code=http_503 \
  -H error.class=transient -H errgate.action=dlq -H errgate.reason=exhausted -H errgate.id=orders/0/12
echo '{"id":"c"}' | kp orders.dlq -H error.code=http_404 -H error.class=permanent -H errgate.id=orders/0/13
echo 'not a lane record at all' | kp orders.dlq

ptest "$POL" orders.dlq
check "errgate lane, same policy: exit 0 (exit $RC)" [ "$RC" = 0 ]
check "errgate lane: summary counts same and unreadable" \
  grep -q '^default@1+[0-9a-f]*: 4 records, 3 same, 0 changed, 1 unreadable (1 rebuilt from partial headers)$' <<<"$OUT"
check "errgate lane: aligned header row" \
  grep -q '^lane  *errgate.id  *failure  *decided then  *by  *would decide now  *result$' <<<"$OUT"
check "errgate lane: the 400 row (coordinates, id, failure, then, by, now)" \
  grep -q '^orders.dlq\[0\]@0  *orders/0/11  *http 400  *dlq permanent  *default@1+feedbeef  *dlq permanent  *same$' <<<"$OUT"
check "errgate lane: an exhausted 503 is followed through its retries" \
  grep -q '^orders.dlq\[0\]@1  *orders/0/12  *http 503  *dlq transient .*dlq transient (after 4 retries)  *same$' <<<"$OUT"
check "errgate lane: a record without error.kind/errgate.action is rebuilt and says so" \
  grep -q '^orders.dlq\[0\]@2  *orders/0/13  *http 404  *dlq permanent .*same; rebuilt: kind from error.code$' <<<"$OUT"
check "errgate lane: the garbage record is unreadable, not a crash" \
  grep -q '^orders.dlq\[0\]@3 .*UNREADABLE no errgate, Spring Kafka, Kafka Connect, Kafka Streams, share-group or x-dlq-metadata error headers$' <<<"$OUT"

ptest "$T/candidate.lua" orders.dlq
check "errgate lane, candidate routing 400 to quarantine: exit 1 (exit $RC)" [ "$RC" = 1 ]
check "candidate: the 400 row is named CHANGED" \
  grep -q '^orders.dlq\[0\]@0  *orders/0/11 .*dlq permanent .*quarantine permanent  *CHANGED action$' <<<"$OUT"
check "candidate: the 404 row too, the 503 row stays the same" \
  bash -c 'grep -q "orders/0/13 .*CHANGED action" <<<"$1" && grep -q "orders/0/12 .*same$" <<<"$1"' _ "$OUT"
check "candidate: summary" grep -q '^candidate@1+[0-9a-f]*: 4 records, 1 same, 2 changed, 1 unreadable' <<<"$OUT"

# --- Spring Kafka DLT: binary partition/offset, the cause's class, a stack trace
$PY - "$BOOTSTRAP" <<'PY' || die "python produce failed"
import struct, sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "acks": "all"})
def dlt(cause, msg, part, off):
    return [("kafka_dlt-exception-fqcn", b"org.springframework.kafka.listener.ListenerExecutionFailedException"),
            ("kafka_dlt-exception-cause-fqcn", cause.encode()),
            ("kafka_dlt-exception-message", msg.encode()),
            ("kafka_dlt-exception-stacktrace", b"java.lang.Exception\n\tat x.y(Z.java:1)\n" * 200),
            ("kafka_dlt-original-topic", b"orders"),
            ("kafka_dlt-original-partition", struct.pack(">i", part)),
            ("kafka_dlt-original-offset", struct.pack(">q", off)),
            ("kafka_dlt-original-timestamp", struct.pack(">q", 1700000000000)),
            ("kafka_dlt-original-consumer-group", b"orders-svc")]
p.produce("orders-dlt", key=b"o1", value=b"{}", headers=dlt(
    "org.springframework.web.client.HttpClientErrorException$BadRequest", "400 Bad Request: iban", 2, 99))
p.produce("orders-dlt", key=b"o2", value=b"{}", headers=dlt(
    "org.springframework.web.client.HttpServerErrorException$ServiceUnavailable", "503 Service Unavailable", 0, 5000000000))
p.flush(10)
PY
ptest "$POL" orders-dlt
check "Spring DLT, same policy: exit 0 (exit $RC)" [ "$RC" = 0 ]
check "Spring DLT: binary original partition/offset decoded, 400 surfaced from the exception" \
  grep -q '^orders-dlt\[0\]@0  *orders/2/99  *http 400  *dlq  *spring-kafka  *dlq permanent  *same$' <<<"$OUT"
check "Spring DLT: a 64-bit offset and ServiceUnavailable -> 503, retried then dead-lettered" \
  grep -q '^orders-dlt\[0\]@1  *orders/0/5000000000  *http 503  *dlq  *spring-kafka  *dlq transient (after 4 retries)  *same$' <<<"$OUT"
ptest "$T/candidate.lua" orders-dlt
check "Spring DLT, candidate: exit 1, the 400 row CHANGED (exit $RC)" \
  exits_with "$RC" 1 '^orders-dlt\[0\]@0 .*quarantine permanent  *CHANGED action$' "$OUT"

# --- Kafka Connect DLQ (text headers)
echo '{}' | kp connect-dlq -H "__connect.errors.topic=orders" -H "__connect.errors.partition=1" \
  -H "__connect.errors.offset=10" -H "__connect.errors.connector.name=jdbc-sink" -H "__connect.errors.task.id=0" \
  -H "__connect.errors.stage=TASK_PUT" -H "__connect.errors.class.name=io.confluent.connect.jdbc.sink.JdbcSinkTask" \
  -H "__connect.errors.exception.class.name=org.apache.kafka.connect.errors.ConnectException" \
  -H "__connect.errors.exception.message=lookup failed: HTTP 404 from the enrichment service" \
  -H "__connect.errors.exception.stacktrace=org.apache.kafka.connect.errors.ConnectException: ..."
echo '{}' | kp connect-dlq -H "__connect.errors.topic=orders" -H "__connect.errors.partition=1" \
  -H "__connect.errors.offset=11" -H "__connect.errors.stage=VALUE_CONVERTER" \
  -H "__connect.errors.exception.class.name=org.apache.kafka.connect.errors.DataException" \
  -H "__connect.errors.exception.message=Converting byte[] to Kafka Connect data failed"
ptest "$POL" connect-dlq
check "Connect DLQ: exit 1, a converter error is a Lua-kind failure the default stops on (exit $RC)" \
  exits_with "$RC" 1 '^connect-dlq\[0\]@1  *orders/1/11  *lua code=DataException  *dlq  *kafka-connect  *stop systemic  *CHANGED action$' "$OUT"
check "Connect DLQ: an HTTP 404 named in the message is surfaced and agrees" \
  grep -q '^connect-dlq\[0\]@0  *orders/1/10  *http 404  *dlq  *kafka-connect  *dlq permanent  *same$' <<<"$OUT"

# --- every dialect inbox mode reads, by its reader (spec/e2e/foreign_dlq.py: one record of each)
$PY "$ROOT/spec/e2e/foreign_dlq.py" "$BOOTSTRAP" every.dlq >/dev/null || die "cannot produce the foreign records"
ptest "$POL" every.dlq
printf '%s\n' "$OUT" >"$T/every.out"
# row KEYWORD: the row of record N (lane offset) squeezed to single spaces
row() { sed -n "s/^every.dlq\[0\]@$1  *//p" "$T/every.out" | tr -s ' '; }
check "Spring: the cause's class, original coordinates from the binary headers" \
  bash -c '[[ "$1" == "orders/2/4711 lua code=NullPointerException dlq spring-kafka "* ]]' _ "$(row 0)"
check "Connect: the converter's class" bash -c '[[ "$1" == "orders/1/99 lua code=SerializationException dlq kafka-connect "* ]]' _ "$(row 1)"
check "Streams: the class from Throwable.toString()" \
  bash -c '[[ "$1" == "orders/0/12 lua code=NullPointerException dlq kafka-streams "* ]]' _ "$(row 2)"
check "share group: no class, its coordinates" bash -c '[[ "$1" == "orders/3/77 lua dlq share-group "* ]]' _ "$(row 3)"
check "x-dlq-metadata: error_info's class (no partition stated: the lane's coordinates)" \
  bash -c '[[ "$1" == "every.dlq/0/4 lua code=DuplicateKeyException dlq x-dlq-metadata "* ]]' _ "$(row 4)"
check "errgate's own record and a record without DLQ headers, per record (auto)" \
  bash -c '[[ "$1" == *"http 503"* ]] && [[ "$2" == *"UNREADABLE no errgate, Spring Kafka, Kafka Connect, Kafka Streams"* ]]' _ "$(row 5)" "$(row 6)"
check "summary: 7 records, 1 unreadable" grep -q '^default@1+[0-9a-f]*: 7 records, .* 1 unreadable' "$T/every.out"

# --- the record's own headers reach the policy (binary values, a name that is not text)
$PY - "$BOOTSTRAP" <<'PY' || die "python produce failed"
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "acks": "all"})
lane = [("error.kind", b"http"), ("error.status", b"400"), ("error.class", b"permanent"), ("errgate.action", b"dlq")]
p.produce("hdr.dlq", key=b"\x00\xffkey", value=b"{}", headers=lane + [("tenant", b"vip"), (b"bad\xffname", b"x"), ("blob", b"\x00\x01\xfe")])
p.produce("hdr.dlq", key=None, value=b"{}", headers=lane + [("tenant", b"standard")])
p.flush(10)
PY
ptest "$FIXTURES/vip_header_quarantine.lua" hdr.dlq
check "record headers reach the policy: the vip record changes, the other does not (exit $RC)" \
  bash -c '[ "$2" = 1 ] && grep -q "^hdr.dlq\[0\]@0 .*quarantine vip  *CHANGED action, class$" <<<"$1" && grep -q ": 2 records, 1 same, 1 changed, 0 unreadable$" <<<"$1"' _ "$OUT" "$RC"

# --- --limit and --since
ptest "$POL" orders.dlq --limit 2
check "--limit 2 reads two records and says it stopped (exit $RC)" \
  bash -c 'grep -q ": 2 records, 2 same, 0 changed, 0 unreadable$" <<<"$1" && grep -q "^(read stopped at --limit 2: orders.dlq may hold more records)$" <<<"$1"' _ "$OUT"
$PY - "$BOOTSTRAP" <<'PY' || die "python produce failed"
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "acks": "all"})
now = int(time.time() * 1000)
h = lambda i: [("error.kind", b"http"), ("error.status", b"400"), ("error.class", b"permanent"),
               ("errgate.action", b"dlq"), ("errgate.id", b"old/0/%d" % i)]
p.produce("since.dlq", value=b"{}", headers=h(1), timestamp=now - 3 * 3600 * 1000)
p.produce("since.dlq", value=b"{}", headers=h(2), timestamp=now - 60 * 1000)
p.flush(10)
PY
# The embedded broker cannot look offsets up by time (librdkafka 2.0.2's mock
# answers ListOffsets for a timestamp with -1, "no such record"), so here
# --since reads nothing; a real broker starts at the first record of the
# last hour. What holds on both: the record from 3 h ago is never replayed.
ptest "$POL" since.dlq --since 1h
check "--since 1h: exit 0, the record written 3 h ago is not read (exit $RC)" \
  bash -c '[ "$2" = 0 ] && grep -q "^default@1+[0-9a-f]*: [01] records" <<<"$1" && ! grep -q "old/0/1" <<<"$1"' _ "$OUT" "$RC"
ptest "$POL" since.dlq
check "without --since both are read" \
  bash -c 'grep -q ": 2 records, 2 same" <<<"$1" && grep -q "old/0/1" <<<"$1"' _ "$OUT"

# --- usage errors exit 2 with one line naming what was wrong
usage() { local want=$1; shift; OUT=$(env -u ERRGATE_BOOTSTRAP "$EG" policy "$@" 2>&1 >/dev/null); RC=$?; [ "$RC" = 2 ] && grep -q -- "$want" <<<"$(head -1 <<<"$OUT")"; }
check "no broker given: exit 2" usage "no broker: give -b BOOTSTRAP, -c CONFIG or a --kafka-config naming bootstrap.servers" test "$POL" --from-topic orders.dlq
check "--limit 0: exit 2" usage "--limit wants a whole number from 1 to 50000, got '0'" test "$POL" --from-topic x -b "$BOOTSTRAP" --limit 0
check "--since soon: exit 2" usage "--since wants a duration" test "$POL" --from-topic x -b "$BOOTSTRAP" --since soon
check "cases and --from-topic together: exit 2" usage "not both" test "$POL" cases.jsonl --from-topic x
check "-b without --from-topic: exit 2" usage "go with --from-topic" test "$POL" cases.jsonl -b "$BOOTSTRAP"
check "--from-topic without a value: exit 2" usage "option --from-topic needs a value" test "$POL" --from-topic
check "check --ordering sideways: exit 2" usage "--ordering must be partition, key or none, got 'sideways'" check "$POL" --ordering sideways
check "an unknown option: exit 2" usage "unknown option --frm-topic" test "$POL" --frm-topic x
out=$("$EG" policy --help); rc=$?
check "policy --help prints the usage with --from-topic (exit $rc)" exits_with "$rc" 0 '--from-topic LANE' "$out"

# --- policy check --ordering
out=$("$EG" policy check "$POL" --ordering partition); rc=$?
check "check --ordering partition: the default passes and says the ordering (exit $rc)" \
  bash -c '[ "$1" = 0 ] && grep -q "^ordering  partition$" <<<"$2" && grep -q "^lint      ok$" <<<"$2"' _ "$rc" "$out"
out=$("$EG" policy check "$FIXTURES/ladder_30s_5m.lua" --ordering partition); rc=$?
check "check --ordering partition: a ladder route is a lint error (exit $rc)" \
  exits_with "$rc" 1 "lint      error: route 'transient' uses ladder 'provider'" "$out"
out=$("$EG" policy check "$FIXTURES/ladder_30s_5m.lua" --ordering none); rc=$?
check "check --ordering none: the same ladder passes (exit $rc)" [ "$rc" = 0 ]

# --- a lane written by a running gateway, re-checked against its own policy
start_handler
gen_records 130 "ok:40 permanent:20 unavailable:10 semantic:15 duplicate:10 explicit-permanent-E42:5 explicit-semantic-S7:10" | produce src
write_config "$T/gw.lua" fromtopic none
start_gateway gw "$T/gw.lua"
wait_drained fromtopic src 60 || not_ok "gateway did not drain src: lag $(lag fromtopic src)"
stop_gateway "$GW_PID"
dump src.dlq "$T/dlq.json"
dlq=$(wc -l <"$T/dlq.json")
check "the gateway dead-lettered records ($dlq), with error.kind on them" \
  bash -c '[ "$1" -gt 0 ] && grep -q "\"error.kind\"" "$2"' _ "$dlq" "$T/dlq.json"
ptest "$POL" src.dlq
check "gateway-written DLQ against the same policy: 0 changed, exit 0 (exit $RC)" \
  exits_with "$RC" 0 ": $dlq records, $dlq same, 0 changed, 0 unreadable$" "$OUT"
check "gateway-written DLQ: exhausted 503s compare equal after their retries" \
  grep -q 'http 503  *dlq transient  *default@1+[0-9a-f]*  *dlq transient (after 4 retries)  *same$' <<<"$OUT"
ptest "$POL" src.quarantine
check "gateway-written quarantine against the same policy: 0 changed, exit 0 (exit $RC)" \
  exits_with "$RC" 0 ' 0 changed, 0 unreadable$' "$OUT"
ptest "$T/candidate.lua" src.dlq
check "gateway-written DLQ against the candidate: exit 1, the 400s changed (exit $RC)" \
  exits_with "$RC" 1 'http 400 .*dlq permanent .*quarantine permanent  *CHANGED action$' "$OUT"
check "candidate: the 503s did not change" bash -c '! grep -q "http 503 .*CHANGED" <<<"$1"' _ "$OUT"
