# dlq_story.sh — the "payment story" that test_replay.sh and test_dlq_cmd.sh
# start from (sourced after lib.sh; not a test by itself).
#
# story N: starts a broker (src, src.dlq, src.quarantine with 4 partitions),
# the flaky handler, seeds src with N payment records whose modes are ok,
# unavailable (503 forever: the default policy retries 4 times in place,
# then dead-letters with class transient, reason exhausted) and permanent
# (400: dead-lettered at once), keys k1..kN all distinct, runs the gateway
# (group "story", ordering none) until its lag is 0 and stops it. Sets
# N_OK, N_TRANSIENT, N_PERMANENT from the generated records (the
# generator's own accounting) and N_DLQ, the records the DLQ then holds.

# count_topic TOPIC: number of records in TOPIC.
count_topic() { kcat -C -b "$BOOTSTRAP" -t "$1" -e -q -f 'x\n' 2>/dev/null | wc -l; }

# hdr_dump TOPIC FILE: one JSON line per record: topic, partition, offset,
# key, payload and headers as an object (the last value of a name wins).
hdr_dump() {
  dump "$1" "$T/.raw.json"
  $PY - "$T/.raw.json" >"$2" <<'PY'
import json, sys
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    line = line.strip()
    if not line.startswith("{"): continue
    r = json.loads(line)
    h = r.get("headers") or []
    r["headers"] = {h[i]: h[i + 1] for i in range(0, len(h), 2)}
    print(json.dumps(r))
PY
}

story() {
  start_broker --topic src:4 --topic src.dlq:4 --topic src.quarantine:4
  start_handler
  gen_records "$1" "ok:5 unavailable:3 permanent:2" | awk -F'\t' '{ sub(/^k[0-9]+/, "k" NR); print }' >"$T/records.tsv"
  N_OK=$(grep -c '"mode":"ok"' "$T/records.tsv")
  N_TRANSIENT=$(grep -c '"mode":"unavailable"' "$T/records.tsv")
  N_PERMANENT=$(grep -c '"mode":"permanent"' "$T/records.tsv")
  produce src <"$T/records.tsv"
  write_config "$T/gw.lua" story none
  start_gateway gw "$T/gw.lua"
  wait_drained story src 60 || die "the story's gateway did not drain src: lag $(lag story src)"
  stop_gateway "$GW_PID"
  N_DLQ=$(count_topic src.dlq)
  diag "story: $1 records: ok $N_OK, transient $N_TRANSIENT, permanent $N_PERMANENT; DLQ holds $N_DLQ"
}
