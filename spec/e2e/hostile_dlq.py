"""hostile_dlq.py — produce foreign DLQ records with hostile header values
(for e2e/test_inbox_hostile): one record per shape, keyed by its name.

    hostile_dlq.py BOOTSTRAP TOPIC

Prints one JSON object {key: expected failure.code} (the rule of
man errgate, "Foreign DLQ records: what is trusted": a class that is not a class name is
invalid_class_name, errgate's error.code with a control byte
invalid_code, a record naming no class the default code "recorded").
"""
import json
import sys

from confluent_kafka import Producer

BIG = b"A" * (400 * 1024)
RECORDS = [
    ("badclass", [("kafka_dlt-original-topic", b"orders"), ("kafka_dlt-exception-fqcn", b"\xff\xfe%.*+?[")],
     "invalid_class_name"),
    ("spaceclass", [("__connect.errors.topic", b"orders"),
                    ("__connect.errors.exception.class.name", b"a b.C reason=forged")], "invalid_class_name"),
    ("jsonclass", [("kafka_dlt-exception-cause-fqcn", b'Evil"},{"label":"x'),
                   ("kafka_dlt-exception-message", b"m")], "invalid_class_name"),
    ("ctrlmsg", [("kafka_dlt-exception-cause-fqcn", b"java.lang.CtrlException"),
                 ("kafka_dlt-exception-message", b"\x00\xff\n\r\x1b[31m\"},\"level\":\"fatal")], "CtrlException"),
    ("hugemsg", [("kafka_dlt-exception-cause-fqcn", b"java.lang.HugeException"),
                 ("kafka_dlt-exception-message", BIG)], "HugeException"),
    ("dup", [("kafka_dlt-exception-cause-fqcn", b"a.First"), ("kafka_dlt-exception-cause-fqcn", b"b.Second"),
             ("kafka_dlt-original-topic", b"one"), ("kafka_dlt-original-topic", b"two")], "Second"),
    ("nullval", [("kafka_dlt-exception-fqcn", None), ("kafka_dlt-exception-message", b"no class")], "recorded"),
    ("empty", [("__connect.errors.topic", b"orders"), ("__connect.errors.exception.class.name", b"")], "recorded"),
    ("badtopic", [("__streams.errors.exception", b"java.lang.TopicException: m"),
                  ("__streams.errors.topic", b"orders x\n"), ("__streams.errors.partition", b"1")], "TopicException"),
    ("range", [("__dlq.errors.topic", b"orders"), ("__dlq.errors.partition", b"2147483648"),
               ("__dlq.errors.offset", b"-5"), ("__dlq.errors.delivery.count", b"9" * 400)], "recorded"),
    ("errcode", [("errgate.id", b"x/0/1\x1b[2J\n"), ("error.code", b"X\nreason=forged")], "invalid_code"),
    ("errspace", [("errgate.id", b"x/0/2"), ("error.code", b"E42"), ("error.class", b"a b reason=forged")], "E42"),
    ("xdlq", [("x-dlq-metadata", b'{"original_topic":"o\\u0000x","error_info":{"exception":"\\u00ff.*","status":1e999}}')],
     "invalid_class_name"),
    ("numclass", [("__connect.errors.exception.class.name", b"1.2.3")], "invalid_class_name"),
]


def main():
    p = Producer({"bootstrap.servers": sys.argv[1], "acks": "all", "message.max.bytes": 1000000})
    for key, headers, _ in RECORDS:
        p.produce(sys.argv[2], key=key.encode(), value=b'{"v":1}', headers=headers)
    if p.flush(20) != 0:
        sys.exit("produce did not finish")
    print(json.dumps({k: c for k, _, c in RECORDS}))


if __name__ == "__main__":
    main()
