"""produce.py — the chaos runner's source producer.

    produce.py BOOTSTRAP TOPIC FILE|-

Produces every line of FILE ("key<TAB>value"; "-": standard input, as
lines come, for the soak's steady load) to TOPIC with an idempotent,
acks=all producer (python3-confluent-kafka) and waits for every delivery
report. Unlike kcat, it keeps going when every broker connection drops for
a moment (injected _TRANSPORT errors, a broker down): librdkafka retries,
and the idempotent producer writes each record once. Exits 0 when every
record was acknowledged, 1 (with the first error on stderr) otherwise.
"""
import sys

from confluent_kafka import Producer


def main():
    bootstrap, topic, path = sys.argv[1:4]
    failed = []
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 20, "message.timeout.ms": 120000,
                  "error_cb": lambda e: None})  # transient connection errors: retried by librdkafka

    def report(err, msg):
        if err is not None:
            failed.append(str(err))

    with (sys.stdin.buffer if path == "-" else open(path, "rb")) as f:
        for line in f:
            key, value = line.rstrip(b"\n").split(b"\t", 1)
            while True:
                try:
                    p.produce(topic, value, key, on_delivery=report)
                    break
                except BufferError:
                    p.poll(0.1)
            p.poll(0)
    left = p.flush(150)
    if left or failed:
        print("produce.py: %d not delivered, %d failed: %s" % (left, len(failed), failed[:1]), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
