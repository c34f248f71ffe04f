"""spring_dlt.py — fill a dead-letter topic the way Spring Kafka's
DeadLetterPublishingRecoverer does (examples/inbox/run.sh).

    spring_dlt.py BOOTSTRAP TOPIC N

Writes N records to TOPIC (the DLT), each with the original key, value and
headers plus Spring's kafka_dlt-* headers, encoded as spring-kafka writes
them: original topic, exception classes, message and stack trace as UTF-8;
original partition as a 4-byte big-endian int, offset and timestamp as
8-byte big-endian longs; timestamp type "CreateTime"; the consumer group.
The failures, in turn: a JSON value the listener could not deserialize
(DeserializationException, cause JsonParseException), a query timeout
(ListenerExecutionFailedException, cause QueryTimeoutException) and a bug
(ListenerExecutionFailedException, cause NullPointerException). Each record
goes to the DLT partition of its original partition (Spring's default
resolver keeps the partition). Prints one line per kind: "KIND COUNT".
"""
import struct
import sys
import time

from confluent_kafka import Producer

KINDS = [
    ("poison", "org.springframework.kafka.support.serializer.DeserializationException",
     "com.fasterxml.jackson.core.JsonParseException",
     "failed to deserialize; nested exception is com.fasterxml.jackson.core.JsonParseException: "
     "Unexpected character ('o' (code 111)): was expecting double-quote to start field name\n"
     " at [Source: (byte[])\"{order:7}\"; line: 1, column: 3]"),
    ("slow", "org.springframework.kafka.listener.ListenerExecutionFailedException",
     "org.springframework.dao.QueryTimeoutException",
     "Listener method 'public void com.acme.orders.OrderListener.on(com.acme.orders.Order)' threw exception"),
    ("bug", "org.springframework.kafka.listener.ListenerExecutionFailedException",
     "java.lang.NullPointerException",
     "Listener method 'public void com.acme.orders.OrderListener.on(com.acme.orders.Order)' threw exception"),
]


def main():
    bootstrap, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    counts, failed = {}, []
    now = int(time.time() * 1000)
    for i in range(n):
        kind, fqcn, cause, message = KINDS[i % len(KINDS)]
        partition, offset = i % 2, 1000 + i
        headers = [
            ("traceparent", ("00-%032x-%016x-01" % (i + 1, i + 1)).encode()),
            ("kafka_dlt-original-topic", b"orders"),
            ("kafka_dlt-original-partition", struct.pack(">i", partition)),
            ("kafka_dlt-original-offset", struct.pack(">q", offset)),
            ("kafka_dlt-original-timestamp", struct.pack(">q", now - 60000 + i)),
            ("kafka_dlt-original-timestamp-type", b"CreateTime"),
            ("kafka_dlt-original-consumer-group", b"order-service"),
            ("kafka_dlt-exception-fqcn", fqcn.encode()),
            ("kafka_dlt-exception-cause-fqcn", cause.encode()),
            ("kafka_dlt-exception-message", message.encode()),
            ("kafka_dlt-exception-stacktrace", ("%s: %s\n\tat com.acme.orders.OrderListener.on(OrderListener.java:42)\n"
                                                % (fqcn, message)).encode()),
        ]
        value = b"{order:%d}" % i if kind == "poison" else b'{"order":%d,"total":%d}' % (i, 10 * i)
        p.produce(topic, key=b"order-%d" % i, value=value, headers=headers, partition=partition,
                  on_delivery=lambda err, m: err and failed.append(str(err)))
        counts[kind] = counts.get(kind, 0) + 1
    p.flush(30)
    if failed or len(p):
        sys.exit("spring_dlt.py: delivery failed: %s" % failed[:3])
    for kind, _, _, _ in KINDS:
        print(kind, counts.get(kind, 0))


if __name__ == "__main__":
    main()
