"""profile_reader.py — an independent reader of the DLQ header profiles
(Spring Kafka, Kafka Connect, Kafka Streams, x-dlq-metadata), written from
the systems' own sources, not from errgate's code:

  spring   spring-kafka KafkaHeaders (names "kafka_dlt-*") and
           DeadLetterPublishingRecoverer.maybeAddOriginalHeaders /
           addExceptionInfoHeaders: partition = ByteBuffer.putInt (4 bytes,
           big-endian), offset and timestamp = ByteBuffer.putLong (8 bytes,
           big-endian), the rest UTF-8; timestamp type TimestampType.toString().
  connect  Kafka Connect DeadLetterQueueReporter.populateContextHeaders:
           "__connect.errors." + topic/partition/offset (String.valueOf),
           connector.name, task.id, stage, class.name, exception.class.name,
           exception.message, exception.stacktrace (UTF-8).
  streams  Kafka Streams ExceptionHandlerUtils (KIP-1034): "__streams.errors."
           + exception (getClass().getName(): the class alone, as Kafka
           4.4.0's real dead letters show), message, stacktrace, topic,
           partition, offset (String.valueOf).
  x-dlq-metadata  one JSON object: original_headers (an object of the
           record's headers), original_topic, original_consumer_group,
           original_timestamp (epoch ms as a decimal string), error_info
           ("CLASS: message"), each a string.

    profile_reader.py BOOTSTRAP OUT.json TOPIC...

reads every record of each TOPIC (raw header bytes, with
python3-confluent-kafka) and writes a JSON list, one object per record:
{topic, partition, offset, timestamp, key, headers: [[name, hex]...],
spring: {...}|null, connect, streams, xdlq, errgate: {name: text}, counts:
{name: n}} where each profile is decoded as its system's readers would.
A malformed value (a Spring partition that is not 4 bytes, a Connect offset
that is not a decimal number, x-dlq-metadata that is not a JSON object)
makes the decoded field {"error": why}.
"""
import json
import struct
import sys

from ladder_lanes import read_topics  # the read loop only; the decoding here is independent


def _utf8(b):
    if b is None:
        return None
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError as e:
        return {"error": "not UTF-8: %s" % e}


def _be(b, size, fmt):
    if b is None:
        return None
    if len(b) != size:
        return {"error": "%d bytes, want %d" % (len(b), size)}
    return struct.unpack(fmt, b)[0]


def _dec(b):
    if b is None:
        return None
    s = b.decode("utf-8")
    try:
        return int(s, 10)
    except ValueError:
        return {"error": "not a decimal number: %r" % s}


def last(headers, name):
    v = None
    for n, b in headers:
        if n == name:
            v = b
    return v


def spring(h):
    if last(h, "kafka_dlt-exception-fqcn") is None and last(h, "kafka_dlt-original-topic") is None:
        return None
    return {
        "original_topic": _utf8(last(h, "kafka_dlt-original-topic")),
        "original_partition": _be(last(h, "kafka_dlt-original-partition"), 4, ">i"),
        "original_offset": _be(last(h, "kafka_dlt-original-offset"), 8, ">q"),
        "original_timestamp": _be(last(h, "kafka_dlt-original-timestamp"), 8, ">q"),
        "original_timestamp_type": _utf8(last(h, "kafka_dlt-original-timestamp-type")),
        "original_consumer_group": _utf8(last(h, "kafka_dlt-original-consumer-group")),
        "exception_fqcn": _utf8(last(h, "kafka_dlt-exception-fqcn")),
        "exception_cause_fqcn": _utf8(last(h, "kafka_dlt-exception-cause-fqcn")),
        "exception_message": _utf8(last(h, "kafka_dlt-exception-message")),
        "exception_stacktrace": _utf8(last(h, "kafka_dlt-exception-stacktrace")),
    }


def connect(h):
    p = "__connect.errors."
    if last(h, p + "topic") is None:
        return None
    return {
        "topic": _utf8(last(h, p + "topic")),
        "partition": _dec(last(h, p + "partition")),
        "offset": _dec(last(h, p + "offset")),
        "connector_name": _utf8(last(h, p + "connector.name")),
        "task_id": _dec(last(h, p + "task.id")),
        "stage": _utf8(last(h, p + "stage")),
        "class_name": _utf8(last(h, p + "class.name")),
        "exception_class_name": _utf8(last(h, p + "exception.class.name")),
        "exception_message": _utf8(last(h, p + "exception.message")),
        "exception_stacktrace": _utf8(last(h, p + "exception.stacktrace")),
    }


def streams(h):
    p = "__streams.errors."
    if last(h, p + "exception") is None:
        return None
    return {
        "exception": _utf8(last(h, p + "exception")),
        "message": _utf8(last(h, p + "message")),
        "stacktrace": _utf8(last(h, p + "stacktrace")),
        "topic": _utf8(last(h, p + "topic")),
        "partition": _dec(last(h, p + "partition")),
        "offset": _dec(last(h, p + "offset")),
    }


def xdlq(h):
    b = last(h, "x-dlq-metadata")
    if b is None:
        return None
    try:
        o = json.loads(b.decode("utf-8"))
    except ValueError as e:
        return {"error": "not JSON: %s" % e}
    if not isinstance(o, dict):
        return {"error": "not a JSON object"}
    return o


def decode(m):
    h = [(n, b) for n, b in (m.headers() or [])]
    counts = {}
    for n, _ in h:
        counts[n] = counts.get(n, 0) + 1
    errgate = {}
    for n, b in h:
        if n.startswith(("error.", "original.", "errgate.", "retry.", "previous.")) and n != "errgate.history":
            errgate[n] = b.decode("utf-8", "replace") if b is not None else None
    key = m.key()
    return {
        "topic": m.topic(), "partition": m.partition(), "offset": m.offset(), "timestamp": m.timestamp()[1],
        "timestamp_type": m.timestamp()[0], "key": key.decode("utf-8", "replace") if key is not None else None,
        "headers": [[n, b.hex() if b is not None else None] for n, b in h], "counts": counts,
        "spring": spring(h), "connect": connect(h), "streams": streams(h), "xdlq": xdlq(h), "errgate": errgate,
    }


def main():
    bootstrap, out_path, topics = sys.argv[1], sys.argv[2], sys.argv[3:]
    out = read_topics(bootstrap, topics, decode, "profile_reader.py", "profile-reader")
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
