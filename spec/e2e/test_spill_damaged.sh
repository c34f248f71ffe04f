#!/usr/bin/env bash
# test_spill_damaged.sh — a damaged journal costs at most its damaged frames
# through the operator's commands.
#
# A real journal (400 records in ~20 segments, written by the test tool
# spill-write-test) is damaged at random, seeded: bytes flipped at random
# positions in some segments (several per segment in some), one segment cut
# mid-frame, garbage appended to another (partly shaped like frame headers),
# the rest left clean. An oracle computed from the clean frame boundaries
# says which records survive and which byte ranges are lost. Then:
#   - `spill ls` counts exactly the intact frames per segment and in total,
#     and lists exactly the lost byte ranges of each damaged segment;
#   - `spill drain` delivers every intact record exactly once (byte for
#     byte) and nothing else, logs each lost range exactly, deletes the
#     clean segments, renames each damaged one .corrupt (bytes untouched)
#     and exits 1; its message does not invite deleting undelivered data;
#   - `spill ls` afterwards lists the .corrupt files with the same ranges.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/spill_lib.sh"
SEED=${SEED:-7}

start_broker --topic dmg:4
J=$T/j
"$SPILL_WRITE_TEST" "$J" dmg 400 --segment-bytes 8000 --value-bytes 150 >"$T/recs.jsonl" 2>/dev/null ||
  die "write-test failed"

# damage the journal; the oracle goes to $T/oracle.json
$PY - "$J" "$SEED" "$T/oracle.json" <<'PY' || die "damage script failed"
import json, os, random, struct, sys
d, seed, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = random.Random(seed)
segs = sorted(f for f in os.listdir(d) if f.startswith("spill-") and f.endswith(".eg"))
frames, idx = {}, 0   # segment -> [(off, len, record index)]
for s in segs:
    b = open(os.path.join(d, s), "rb").read()
    off, fl = 0, []
    while off < len(b):
        assert b[off:off + 4] == b"EGS1"
        n = 12 + struct.unpack(">I", b[off + 4:off + 8])[0]
        fl.append((off, n, idx)); off += n; idx += 1
    frames[s] = fl
plan = {}
order = segs[:]
rng.shuffle(order)
for k, s in enumerate(order):
    plan[s] = ["flip", "flips", "cut", "garbage", "flip+garbage", "clean", "clean"][k % 7]
lost, segout = [], {}
for s in segs:
    p = os.path.join(d, s)
    b = bytearray(open(p, "rb").read())
    size0, kind = len(b), plan[s]
    damaged, cut, garbage = set(), size0, 0
    if kind.startswith("flip"):
        for _ in range(1 if kind in ("flip", "flip+garbage") else rng.randint(2, 6)):
            pos = rng.randrange(size0)
            b[pos] ^= rng.randrange(1, 256)
            damaged |= {i for i, (o, n, _) in enumerate(frames[s]) if o <= pos < o + n}
    if kind == "cut":
        o, n, _ = frames[s][rng.randrange(len(frames[s]))]
        cut = o + rng.randrange(1, n)
        del b[cut:]
        damaged |= {i for i, (o2, n2, _) in enumerate(frames[s]) if o2 + n2 > cut}
    if "garbage" in kind:
        g = bytearray(rng.randrange(256) for _ in range(rng.randint(20, 300)))
        g[5:13] = b"EGS1\x00\x00\x00\x20"
        garbage = len(g)
        b += g
    open(p, "wb").write(b)
    ranges, start, intact = [], None, 0
    for i, (o, n, rec) in enumerate(frames[s]):
        if o >= cut:  # cut away whole: lost, but no byte of it is left to report
            lost.append(rec)
            continue
        if i in damaged:
            lost.append(rec)
            if start is None: start = o
            continue
        intact += 1
        if start is not None: ranges.append([start, o]); start = None
    if start is None and garbage: start = cut
    if start is not None: ranges.append([start, len(b)])
    segout[s] = {"kind": kind, "intact": intact, "ranges": ranges, "size": len(b)}
json.dump({"lost": sorted(lost), "segments": segout, "total_intact": idx - len(lost)}, open(out, "w"))
print("# seed %d: %d segments, %d records, %d lost: %s" % (seed, len(segs), idx, len(lost),
      ", ".join("%s=%s" % (s[-7:-3], segout[s]["kind"]) for s in segs)))
PY
diag "$(python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print("oracle: %d intact, lost records %s" % (o["total_intact"], o["lost"]))' "$T/oracle.json")"

# ls: intact frames and exact lost ranges per segment
"$EG" spill ls "$J" >"$T/ls1.out" 2>"$T/ls1.err"
rc=$?
check "ls reads the damaged journal without error (exit $rc)" [ $rc = 0 ]
# check_ls FILE SUFFIX STATUS_RE: every segment's line has the oracle's
# intact count, and exactly its lost ranges
check_ls() {
  $PY - "$T/oracle.json" "$1" "$2" "$3" <<'PY'
import json, re, sys
o = json.load(open(sys.argv[1])); lines = open(sys.argv[2]).read().splitlines()
suffix, status_re = sys.argv[3], sys.argv[4]
bad = 0
for s, e in o["segments"].items():
    name = s + suffix
    ls = [l for l in lines if l.split()[:1] == [name]]
    if not ls:
        if suffix and not e["ranges"]: continue  # a clean segment was deleted
        print("# %s: not listed" % name); bad += 1; continue
    f = ls[0].split(None, 3)
    got = [[int(a), int(b)] for a, b in re.findall(r"(\d+)\.\.(\d+):", f[3])]
    if int(f[1]) != e["intact"] or got != e["ranges"] or (e["ranges"] and not re.search(status_re, f[3])):
        print("# %s: %s intact, lost %s; want %d, %s (%s)" % (name, f[1], got, e["intact"], e["ranges"], e["kind"]))
        bad += 1
sys.exit(1 if bad else 0)
PY
}
check "ls: each segment's intact frames and exact lost byte ranges" check_ls "$T/ls1.out" "" '^damaged, lost '
want_total=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["total_intact"])' "$T/oracle.json")
check "ls: the total counts all $want_total intact frames" grep -q "^total [0-9]* segments, $want_total frames, " "$T/ls1.out"

# drain: every intact record exactly once, nothing else
"$EG" spill drain "$J" -b "$BOOTSTRAP" >"$T/drain.out" 2>"$T/drain.err"
rc=$?
sed 's/^/# /' "$T/drain.out" | head -3
check "drain exits 1: damaged segments are kept (exit $rc)" [ $rc = 1 ]
# shellcheck disable=SC2046
check "every intact record was delivered exactly once, and no damaged one" \
  verify "$T/recs.jsonl" dmg exact $($PY -c 'import json,sys; print(" ".join(map(str, json.load(open(sys.argv[1]))["lost"])))' "$T/oracle.json")
$PY - "$T/oracle.json" "$T/drain.err" <<'PY' && ok "the drain logged exactly the lost byte ranges" || not_ok "the drain's logged ranges differ from the damage"
import json, sys
o = json.load(open(sys.argv[1]))
want = sorted((s, a, b) for s, e in o["segments"].items() for a, b in e["ranges"])
import re
got = sorted((m[0], int(m[1]), int(m[2])) for m in
             re.findall(r" spill_frame_corrupt segment=(\S+) offset=(\d+) end=(\d+) ", open(sys.argv[2]).read()))
if got != want: print("# want %s\n# got  %s" % (want, got))
sys.exit(0 if got == want else 1)
PY
$PY - "$T/oracle.json" "$J" <<'PY' && ok "clean segments deleted; damaged ones renamed .corrupt, bytes untouched" || not_ok "the journal's files after the drain are wrong"
import json, os, sys
o, d = json.load(open(sys.argv[1])), sys.argv[2]
files = set(os.listdir(d)) - {"LOCK"}
want = {s + ".corrupt" for s, e in o["segments"].items() if e["ranges"]}
sizes_ok = all(os.path.getsize(os.path.join(d, f)) == o["segments"][f[:-8]]["size"] for f in want & files)
if files != want or not sizes_ok: print("# files %s, want %s" % (sorted(files), sorted(want)))
sys.exit(0 if files == want and sizes_ok else 1)
PY
check "the message says the kept files hold only delivered frames" grep -q "hold only delivered frames and the damaged bytes" "$T/drain.err"
"$EG" spill ls "$J" >"$T/ls2.out" 2>&1
check "ls after the drain lists the .corrupt files with the same ranges" check_ls "$T/ls2.out" ".corrupt" '^corrupt \(its intact frames were delivered\), lost '
check "... and nothing left to drain" grep -q "^total [0-9]* segments, 0 frames, " "$T/ls2.out"
