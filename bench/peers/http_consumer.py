"""http_consumer.py — the hand-written peer errgate's HTTP path is compared with.

What a team would write by hand instead of errgate: a confluent-kafka consumer
in a group that POSTs each record's value to a URL over one keep-alive
connection (http.client) and keeps the same at-least-once discipline as
errgate: manual offsets (enable.auto.commit and enable.auto.offset.store off),
an offset is stored only after its 2xx, and stored offsets are committed every
COMMIT_EVERY records, at the end, and on revoke. A non-2xx answer or a broken
connection is retried with a short back-off, never skipped.

Usage: /usr/bin/python3 http_consumer.py BOOTSTRAP GROUP TOPIC URL N
It stops after N records succeeded and prints one line:
  peer records=N first_ns=T0 last_ns=T1
T0 is when the first record was consumed, T1 when the N-th got its 2xx
(CLOCK_REALTIME ns), so the join delay is excluded as for errgate.
"""
import http.client
import sys
import time
import urllib.parse

from confluent_kafka import Consumer, KafkaError, KafkaException

COMMIT_EVERY = 1000


def commit(consumer):
    """Synchronous commit of the stored offsets; nothing stored is not an error."""
    try:
        consumer.commit(asynchronous=False)
    except KafkaException as e:
        if e.args[0].code() != KafkaError._NO_OFFSET:
            raise


def main():
    bootstrap, group, topic, url, n = sys.argv[1:6]
    n = int(n)
    u = urllib.parse.urlsplit(url)
    path = u.path or "/"
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=5)

    def on_revoke(consumer, parts):
        commit(consumer)

    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
    })
    c.subscribe([topic], on_revoke=on_revoke)
    done = 0
    first_ns = 0
    last_ns = 0
    while done < n:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            continue
        if not first_ns:
            first_ns = time.time_ns()
        headers = {
            "Content-Type": "application/json",
            "Errgate-Id": "%s/%d/%d" % (m.topic(), m.partition(), m.offset()),
        }
        delay = 0.05
        while True:
            try:
                conn.request("POST", path, body=m.value(), headers=headers)
                resp = conn.getresponse()
                resp.read()
                if 200 <= resp.status < 300:
                    break
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
        c.store_offsets(message=m)
        done += 1
        if done % COMMIT_EVERY == 0:
            commit(c)
    last_ns = time.time_ns()
    commit(c)
    c.close()
    print("peer records=%d first_ns=%d last_ns=%d" % (done, first_ns, last_ns), flush=True)


if __name__ == "__main__":
    main()
