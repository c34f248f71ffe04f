"""watermarks.py — low and high watermarks of a topic, summed over partitions.

The embedded broker silently drops the oldest batches of a partition past
about 5 MiB or 100,000 batches; bench/run.sh calls this after producing a data
set and refuses to measure unless the sum of low watermarks is 0 and the sum
of high watermarks is the number of records produced.

Usage: /usr/bin/python3 watermarks.py BOOTSTRAP TOPIC PARTITIONS
Prints "LOW HIGH".
"""
import sys

from confluent_kafka import Consumer, TopicPartition


def main():
    bootstrap, topic, parts = sys.argv[1], sys.argv[2], int(sys.argv[3])
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watermarks"})
    low = high = 0
    for p in range(parts):
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
        low += lo
        high += hi
    c.close()
    print(low, high)


if __name__ == "__main__":
    main()
