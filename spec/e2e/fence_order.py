#!/usr/bin/python3
"""fence_order.py - the per-key order oracle of e2e/test_fence.

  fence_order.py gen N KEYS SEED SPEC   print N records "key<TAB>json" for the
      flaky handler: keys f0..f(KEYS-1) interleaved at random, ids r1..rN in
      production (offset) order, modes from SPEC ("mode:weight ...").
  fence_order.py check RECORDS SUCCESS_LOG [--expect-ordered|--expect-disorder]
      reads the records and the handler's success log ("ok <id> <errgate-id>",
      in the order the target accepted them) and, per key, compares the order
      in which the target accepted the key's records with their production
      order. Prints one line: succeeded=S expected=E inversions=I keys_out_of_order=K
      (an inversion: a record accepted before an earlier record of its key
      that was accepted later). With --expect-ordered it exits 1 unless I is
      0 and every record expected to succeed did; with --expect-disorder it
      exits 1 unless I > 0 (the oracle can see disorder at all).
A record is expected to succeed unless its mode fails for good in the test's
policy (transient-N with N above the ladder's rungs, permanent); those never
appear in the log and are left out of the comparison.
"""
import random
import sys


def gen(n, keys, seed, spec):
    rnd = random.Random(seed)
    modes, weights = [], []
    for part in spec.split():
        m, w = part.rsplit(":", 1)
        modes.append(m)
        weights.append(float(w))
    for i in range(1, n + 1):
        k = rnd.randrange(keys)
        m = rnd.choices(modes, weights)[0]
        print('f%d\t{"id":"r%d","mode":"%s"}' % (k, i, m))


def check(records, log, expect, max_failures):
    key_of, order, fails = {}, {}, {}
    for i, line in enumerate(open(records)):
        key, value = line.rstrip("\n").split("\t", 1)
        rid = value.split('"id":"', 1)[1].split('"', 1)[0]
        mode = value.split('"mode":"', 1)[1].split('"', 1)[0]
        key_of[rid] = key
        order[rid] = i
        fails[rid] = mode == "permanent" or (mode.startswith("transient-") and int(mode[10:]) > max_failures)
    seen, per_key = set(), {}
    for line in open(log):
        parts = line.split()
        if len(parts) < 2 or parts[0] != "ok" or parts[1] not in key_of or parts[1] in seen:
            continue  # at-least-once: a repeat is judged at its first acceptance
        seen.add(parts[1])
        per_key.setdefault(key_of[parts[1]], []).append(order[parts[1]])
    inversions, bad_keys = 0, 0
    for key, seq in per_key.items():
        inv = sum(1 for a in range(len(seq)) for b in range(a + 1, len(seq)) if seq[a] > seq[b])
        inversions += inv
        bad_keys += inv > 0
    expected = sum(1 for r in key_of if not fails[r])
    succeeded = sum(1 for r in seen if not fails[r])
    print("succeeded=%d expected=%d inversions=%d keys_out_of_order=%d" % (succeeded, expected, inversions, bad_keys))
    if expect == "--expect-ordered":
        return 0 if inversions == 0 and succeeded == expected else 1
    if expect == "--expect-disorder":
        return 0 if inversions > 0 else 1
    return 0


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) == 5 and a[0] == "gen":
        gen(int(a[1]), int(a[2]), int(a[3]), a[4])
    elif len(a) in (3, 4, 5) and a[0] == "check":
        mf = int(a[4]) if len(a) == 5 else 2
        sys.exit(check(a[1], a[2], a[3] if len(a) >= 4 else "", mf))
    else:
        sys.exit(__doc__)
