#!/usr/bin/env bash
# test_broker.sh — `errgate broker`: the embedded Kafka-protocol broker and its
# control socket.
#
# Checks the two stdout lines, a pre-created topic's partition count, a 1000
# record round trip through kcat, the control protocol, that `topic-fault`
# makes produces to one topic (and only that topic) fail while a long-running
# idempotent producer keeps going and recovers afterwards, and that SIGTERM
# exits 0. The long-running producer is a small python3-confluent-kafka
# script: kcat reads all of stdin before producing, so it cannot be fed one
# record at a time. Takes about 10 s.

source "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3   # Debian's python3-confluent-kafka lives here

# lines_from N FILE: the lines of FILE after its first N.
lines_from() { tail -n "+$(( $1 + 1 ))" "$2"; }
# count FILE: its number of lines.
count() { wc -l < "$1"; }
# sleep_until START SECS: sleep until SECS seconds after START (an
# $EPOCHREALTIME value); at once if that moment has passed.
sleep_until() {
  sleep "$(awk -v s="$1" -v d="$2" -v n="$EPOCHREALTIME" \
    'BEGIN { t = s + d - n; printf "%.3f", (t > 0 ? t : 0) }')"
}

start_broker --topic src:3 --topic src.dlq:2

# ---- stdout -----------------------------------------------------------------
check "stdout line 1 is bootstrap.servers=127.0.0.1:PORT" \
  grep -Eq '^bootstrap\.servers=127\.0\.0\.1:[0-9]+(,127\.0\.0\.1:[0-9]+)*$' \
  <(sed -n 1p "$T/broker.out")
check "stdout line 2 is control=127.0.0.1:PORT" \
  grep -Eq '^control=127\.0\.0\.1:[0-9]+$' <(sed -n 2p "$T/broker.out")

# ---- topics and data --------------------------------------------------------
check "--topic src:3 pre-creates src with 3 partitions" \
  grep -q 'topic "src" with 3 partitions' \
  <(kcat -L -b "$BOOTSTRAP" -t src -m 5 2>&1)

seq 1 1000 > "$T/sent"
if kcat -P -b "$BOOTSTRAP" -t src -X enable.idempotence=true -X acks=all \
     < "$T/sent" 2> "$T/kcat-p.err"; then
  ok "kcat produces 1000 records"
else
  not_ok "kcat produces 1000 records: $(head -3 "$T/kcat-p.err")"
fi
kcat -C -b "$BOOTSTRAP" -t src -e -q -f '%s\n' -m 5 2> "$T/kcat-c.err" \
  | sort -n > "$T/received"
check "kcat consumes the same 1000 records" cmp -s "$T/sent" "$T/received"

# ---- control protocol -------------------------------------------------------
check "control: ping answers ok" test "$(broker_ctl ping)" = ok
reply=$(broker_ctl frobnicate 1 2)
check "control: an unknown command gets 'error: ...' ($reply)" \
  grep -q '^error: ' <<< "$reply"
several() {
  local host=${CONTROL%:*} port=${CONTROL##*:} a b c
  exec 8<>"/dev/tcp/$host/$port" || return 1
  printf 'ping\nhelp\ntopic-create extra 2\n' >&8
  read -r a <&8; read -r b <&8; read -r c <&8
  exec 8<&- 8>&-
  [ "$a" = ok ] && [[ $b == "ok commands:"*topic-fault* ]] &&
    [[ $c == "ok extra: 2 partition(s)" ]]
}
check "control: one connection answers several commands in order" several
check "control: topic-fault refuses an error it cannot inject" \
  grep -q '^error: ' <<< "$(broker_ctl topic-fault src.dlq 1 INVALID_RECORD)"

# ---- topic-fault -------------------------------------------------------------
# A producer that keeps producing one record every 100 ms to src.dlq and
# prints one line per outcome: "ok SEQ", "fail SEQ ERR" (delivery report) or
# "perr SEQ ERR" (produce() itself refused). Stops cleanly on SIGTERM.
cat > "$T/producer.py" <<'EOF'
import signal, sys
from confluent_kafka import Producer, KafkaException
running = True
def stop(*_):
    global running
    running = False
signal.signal(signal.SIGTERM, stop)
p = Producer({"bootstrap.servers": sys.argv[1], "enable.idempotence": True,
              "acks": "all", "linger.ms": 5, "message.timeout.ms": 2000,
              "topic.metadata.propagation.max.ms": 1000})
def report(err, msg):
    seq = msg.value().decode()
    print("ok " + seq if err is None else "fail %s %s" % (seq, err.name()),
          flush=True)
seq = 0
while running:
    try:
        p.produce(sys.argv[2], value=str(seq).encode(), on_delivery=report)
    except KafkaException as e:
        print("perr %d %s" % (seq, e.args[0].name()), flush=True)
    seq += 1
    p.poll(0.1)
p.flush(10)
EOF
bg producer "$PY" -u "$T/producer.py" "$BOOTSTRAP" src.dlq
PRODUCER_PID=$LASTPID
wait_for 10 grep -q '^ok ' "$T/producer.out" ||
  diag "producer: $(tail -3 "$T/producer.err")"
check "the producer delivers to src.dlq before any fault" \
  grep -q '^ok ' "$T/producer.out"

# LEADER_NOT_AVAILABLE (the default): records wait in the client, and those
# whose message.timeout.ms (2 s here) runs out fail with _MSG_TIMED_OUT.
reply=$(broker_ctl topic-fault src.dlq 4)
t0=$EPOCHREALTIME   # the fault is in place once the reply has arrived
check "topic-fault src.dlq 4 answers ok ($reply)" grep -q '^ok ' <<< "$reply"
sleep 0.3; n0=$(count "$T/producer.out")
timed_out() { lines_from "$n0" "$T/producer.out" | grep -q '^fail .* _MSG_TIMED_OUT$'; }
check "during the fault, delivery reports fail with _MSG_TIMED_OUT" \
  wait_for 4 timed_out
produce_one() { echo x | kcat -P -b "$BOOTSTRAP" -t "$1" -X message.timeout.ms=2000 2>/dev/null; }
check "during the fault, other topics still take produces" produce_one src
sleep_until "$t0" 3.4; n1=$(count "$T/producer.out")
check "nothing is delivered to src.dlq while the fault lasts" \
  test "$(lines_from "$n0" "$T/producer.out" | head -n $(( n1 - n0 )) | grep -c '^ok ')" = 0
delivered_after() { lines_from "$1" "$T/producer.out" | grep -q '^ok '; }
check "the same producer delivers again after recovery" \
  wait_for 5 delivered_after "$n1"

# UNKNOWN_TOPIC_OR_PART: the topic looks deleted; produce() itself fails.
reply=$(broker_ctl topic-fault src.dlq 3 UNKNOWN_TOPIC_OR_PART)
t0=$EPOCHREALTIME
check "topic-fault src.dlq 3 UNKNOWN_TOPIC_OR_PART answers ok" \
  grep -q '^ok ' <<< "$reply"
sleep 0.3; m0=$(count "$T/producer.out")
refused() { lines_from "$m0" "$T/producer.out" | grep -q '^perr .* _UNKNOWN_TOPIC$'; }
check "during the fault, produce() fails with _UNKNOWN_TOPIC" wait_for 3 refused
sleep_until "$t0" 2.4; m1=$(count "$T/producer.out")
check "nothing is delivered to src.dlq while that fault lasts" \
  test "$(lines_from "$m0" "$T/producer.out" | head -n $(( m1 - m0 )) | grep -c '^ok ')" = 0
check "the same producer delivers again after that fault" \
  wait_for 5 delivered_after "$m1"

kill -TERM "$PRODUCER_PID"; wait "$PRODUCER_PID" 2>/dev/null
grep '^ok ' "$T/producer.out" | cut -d' ' -f2 | sort -n > "$T/acked"
kcat -C -b "$BOOTSTRAP" -t src.dlq -e -q -f '%s\n' -m 5 2>/dev/null \
  | sort -n > "$T/in-dlq"
check "src.dlq holds exactly the acknowledged records ($(count "$T/acked"))" \
  cmp -s "$T/acked" "$T/in-dlq"
diag "producer: $(grep -c '^ok ' "$T/producer.out") delivered," \
  "$(grep -c '^fail ' "$T/producer.out") failed by delivery report," \
  "$(grep -c '^perr ' "$T/producer.out") refused by produce()"

# ---- shutdown ----------------------------------------------------------------
kill -TERM "$BROKER_PID"; wait "$BROKER_PID"; rc=$?
check "SIGTERM: the broker exits 0 (got $rc)" test "$rc" = 0
check "nothing but the two lines was written to stdout" \
  test "$(count "$T/broker.out")" = 2

[ "$FAILED" = 0 ]
