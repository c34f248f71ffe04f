#!/usr/bin/env python3
"""ctl_sign.py — an operator tool's side of signed control records, written
from the canonical form in src/lib/ctlsign.h (not from errgate's code), for
the e2e tests.

  ctl_sign.py BOOTSTRAP TOPIC KIND KEYFILE KEY VALUE [MODE]

produces one record (KEY, VALUE) to TOPIC with the header errgate.sig =
"v1:" + hex HMAC-SHA256(key file bytes without trailing whitespace,
"errgate-ctl-v1" NUL KIND NUL len(KEY) NUL KEY len(VALUE) NUL VALUE).
MODE: "good" (default), "tamper" (signs VALUE, sends VALUE with its last
byte but one changed), "none" (no header), "copy:HEX" (sends the header
v1:HEX as given: a signature copied from another record)."""
import hashlib
import hmac
import sys

from confluent_kafka import Producer


def main():
    bootstrap, topic, kind, keyfile, key, value = sys.argv[1:7]
    mode = sys.argv[7] if len(sys.argv) > 7 else "good"
    secret = open(keyfile, "rb").read().rstrip()
    k, v = key.encode(), value.encode()
    msg = b"errgate-ctl-v1\0" + kind.encode() + b"\0" + str(len(k)).encode() + b"\0" + k + \
        str(len(v)).encode() + b"\0" + v
    sig = "v1:" + hmac.new(secret, msg, hashlib.sha256).hexdigest()
    headers = [("errgate.sig", sig.encode())]
    if mode == "tamper":
        v = v[:-2] + bytes([v[-2] ^ 1]) + v[-1:]
    elif mode == "none":
        headers = []
    elif mode.startswith("copy:"):
        headers = [("errgate.sig", ("v1:" + mode[5:]).encode())]
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    p.produce(topic, key=k, value=v, headers=headers)
    if p.flush(15) != 0:
        sys.exit("ctl_sign.py: not delivered")
    print(sig)


if __name__ == "__main__":
    main()
