"""foreign_dlq.py — produce dead-letter records the way other systems write
them, with their exact header names and encodings (for e2e/test_inbox and
examples/inbox), one record per format:

    foreign_dlq.py BOOTSTRAP TOPIC

  spring    spring-kafka DeadLetterPublishingRecoverer: kafka_dlt-* headers,
            original partition as a 4-byte big-endian int, offset and
            timestamp as 8-byte big-endian longs; the exception is the
            container's ListenerExecutionFailedException, its cause a
            NullPointerException; a multi-line message
  connect   Kafka Connect DeadLetterQueueReporter: __connect.errors.*
            (decimal text), a SerializationException from a converter
  streams   Kafka Streams ExceptionHandlerUtils (KIP-1034):
            __streams.errors.exception = Throwable.toString()
  share     a share-group DLQ record (KIP-1191 ShareGroupDLQRecordHelper):
            __dlq.errors.*, no exception class
  xdlq      an x-dlq-metadata JSON header whose error is a duplicate key
  errgate   errgate's own lane format (error.code http_503)
  plain     a record with no DLQ headers at all

Keys are the format names, so a test can tell the records apart. Prints
"produced N" on success.
"""
import json
import struct
import sys

from confluent_kafka import Producer

RECORDS = [
    ("spring", b'{"order":1}', [
        ("trace-id", b"t-spring"),
        ("kafka_dlt-original-topic", b"orders"),
        ("kafka_dlt-original-partition", struct.pack(">i", 2)),
        ("kafka_dlt-original-offset", struct.pack(">q", 4711)),
        ("kafka_dlt-original-timestamp", struct.pack(">q", 1767225600000)),
        ("kafka_dlt-original-timestamp-type", b"CreateTime"),
        ("kafka_dlt-original-consumer-group", b"orders-service"),
        ("kafka_dlt-exception-fqcn", b"org.springframework.kafka.listener.ListenerExecutionFailedException"),
        ("kafka_dlt-exception-cause-fqcn", b"java.lang.NullPointerException"),
        ("kafka_dlt-exception-message",
         b"Listener method 'public void com.acme.Orders.on(Order)' threw exception\n"
         b"Cannot invoke \"String.length()\" because \"name\" is null"),
        ("kafka_dlt-exception-stacktrace", b"org.springframework.kafka.listener.ListenerExecutionFailedException: x\n\tat a.b(C.java:1)\n"),
    ]),
    ("connect", b"\x00\x01garbage", [
        ("__connect.errors.topic", b"orders"),
        ("__connect.errors.partition", b"1"),
        ("__connect.errors.offset", b"99"),
        ("__connect.errors.connector.name", b"orders-sink"),
        ("__connect.errors.task.id", b"0"),
        ("__connect.errors.stage", b"VALUE_CONVERTER"),
        ("__connect.errors.class.name", b"io.confluent.connect.avro.AvroConverter"),
        ("__connect.errors.exception.class.name", b"org.apache.kafka.common.errors.SerializationException"),
        ("__connect.errors.exception.message", b"Unknown magic byte!"),
        ("__connect.errors.exception.stacktrace", b"org.apache.kafka.common.errors.SerializationException: Unknown magic byte!\n"),
    ]),
    ("streams", b'{"order":3}', [
        ("__streams.errors.exception", b"java.lang.NullPointerException: Cannot read field \"total\""),
        ("__streams.errors.message", b"Cannot read field \"total\""),
        ("__streams.errors.stacktrace", b"java.lang.NullPointerException: Cannot read field \"total\"\n\tat x.y(Z.java:9)\n"),
        ("__streams.errors.topic", b"orders"),
        ("__streams.errors.partition", b"0"),
        ("__streams.errors.offset", b"12"),
    ]),
    ("share", b'{"order":4}', [
        ("__dlq.errors.topic", b"orders"),
        ("__dlq.errors.partition", b"3"),
        ("__dlq.errors.offset", b"77"),
        ("__dlq.errors.group", b"orders-share"),
        ("__dlq.errors.delivery.count", b"5"),
        ("__dlq.errors.message", b"delivery attempts exhausted"),
    ]),
    ("xdlq", b'{"order":5}', [
        ("x-dlq-metadata", json.dumps({
            "original_headers": {"trace-id": "t-x"}, "original_topic": "orders",
            "original_consumer_group": "billing", "original_timestamp": 1767225600000,
            "error_info": {"exception": "com.acme.DuplicateKeyException", "message": "duplicate key order-5"},
        }).encode()),
    ]),
    ("errgate", b'{"order":6}', [
        ("error.class", b"transient"), ("error.code", b"http_503"), ("error.message", b"HTTP 503"),
        ("error.kind", b"http"), ("error.status", b"503"), ("original.topic", b"orders"),
        ("original.partition", b"0"), ("original.offset", b"5"), ("errgate.id", b"orders/0/5"),
        ("errgate.action", b"dlq"),
    ]),
    ("plain", b'{"order":7}', [("trace-id", b"t-plain")]),
]


def main():
    bootstrap, topic = sys.argv[1], sys.argv[2]
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    failed = []
    for key, value, headers in RECORDS:
        p.produce(topic, key=key.encode(), value=value, headers=headers, partition=0,
                  on_delivery=lambda err, m: err and failed.append(str(err)))
    p.flush(30)
    if failed or len(p) > 0:
        sys.exit("foreign_dlq.py: delivery failed: %s" % failed)
    print("produced %d" % len(RECORDS))


if __name__ == "__main__":
    main()
