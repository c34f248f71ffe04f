#!/usr/bin/env bash
# test_lane_profiles.sh — lanes.profiles (DESIGN §4): a lane record also
# carries the headers Spring Kafka, Kafka Connect and Kafka Streams write on
# their dead-letter records, and the x-dlq-metadata JSON header. Each profile
# is decoded by an independent reader written from those systems' sources
# (profile_reader.py) and compared field by field with the source record and
# errgate's own headers. Without lanes.profiles none of them is written; an
# unknown profile name is a config error.
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"

start_broker --topic src:3 --topic src.dlq:3
start_handler
for p in 0 1 2; do
  for i in 1 2 3 4; do
    printf 'k%s-%s\t{"id":"p%s-%s","mode":"permanent"}\n' "$p" "$i" "$p" "$i" |
      kcat -P -b "$BOOTSTRAP" -t src -p "$p" -K $'\t' -H "trace-id=t$p-$i" -H "tenant=acme" 2>>"$T/kcat.err"
  done
done

# an unknown profile is refused at load, naming the key
write_config "$T/bad.lua" pf none 'lanes = { profiles = { "spring", "jms" } },'
out=$("$EG" run -c "$T/bad.lua" 2>&1); rc=$?
check "an unknown profile is a config error naming lanes.profiles" exits_with "$rc" 2 'lanes.profiles\[2\]' "$out"

write_config "$T/gw.lua" pf none 'lanes = { profiles = { "spring", "connect", "streams", "x-dlq-metadata" } },'
start_gateway gw "$T/gw.lua"
wait_drained pf src 60 && ok "all records committed" || not_ok "lag $(lag pf src)"
stop_gateway "$GW_PID"
$PY "$ROOT/spec/e2e/profile_reader.py" "$BOOTSTRAP" "$T/dlq.json" src.dlq || die "cannot read src.dlq"
$PY "$ROOT/spec/e2e/profile_reader.py" "$BOOTSTRAP" "$T/src.json" src || die "cannot read src"

# field-by-field comparison: the source record (coordinates, timestamp,
# headers) and errgate's own headers are the truth each profile must state
check "every profile decodes to the source record's facts and errgate's error" $PY - "$T/dlq.json" "$T/src.json" <<'PY'
import json, sys
dlq = json.load(open(sys.argv[1]))
src = {(r["partition"], r["offset"]): r for r in json.load(open(sys.argv[2]))}
bad = []
def want(cond, what, r):
    if not cond:
        bad.append("%s[%d]@%d: %s" % (r["topic"], r["partition"], r["offset"], what))
for r in dlq:
    e = r["errgate"]
    p, o = int(e["original.partition"]), int(e["original.offset"])
    s = src[(p, o)]
    code, msg = e["error.code"], e["error.message"]
    sp, cn, st, x = r["spring"], r["connect"], r["streams"], r["xdlq"]
    want(sp and cn and st and x, "every profile present", r)
    if not (sp and cn and st and x):
        continue
    # Spring: binary big-endian coordinates
    want(sp["original_topic"] == "src", "spring topic", r)
    want(sp["original_partition"] == p, "spring partition %r" % sp["original_partition"], r)
    want(sp["original_offset"] == o, "spring offset %r" % sp["original_offset"], r)
    want(sp["original_timestamp"] == s["timestamp"], "spring timestamp %r != %r" % (sp["original_timestamp"], s["timestamp"]), r)
    want(sp["original_timestamp_type"] == "CreateTime", "spring timestamp type", r)
    want(sp["original_consumer_group"] == "pf", "spring group", r)
    want(sp["exception_fqcn"] == code, "spring fqcn", r)
    want(sp["exception_message"] == msg, "spring message", r)
    want(sp["exception_stacktrace"].startswith(code + ": "), "spring stack trace", r)
    # Connect: decimal text
    want((cn["topic"], cn["partition"], cn["offset"]) == ("src", p, o), "connect coordinates %r" % cn, r)
    want(cn["connector_name"] == "pf" and cn["task_id"] == 0 and cn["stage"] == "TASK_PUT", "connect context", r)
    want(cn["exception_class_name"] == code and cn["exception_message"] == msg, "connect exception", r)
    # Streams: the class alone in exception, Throwable.toString() starts the stack trace
    want((st["topic"], st["partition"], st["offset"]) == ("src", p, o), "streams coordinates", r)
    want(st["exception"] == code and st["message"] == msg and st["stacktrace"] == "%s: %s" % (code, msg),
         "streams exception (the class alone, as Kafka Streams writes getClass().getName())", r)
    # x-dlq-metadata
    sh = {n: bytes.fromhex(v).decode() for n, v in s["headers"]}
    want(x.get("original_headers") == sh, "x-dlq original_headers %r != %r" % (x.get("original_headers"), sh), r)
    want(x.get("original_topic") == "src" and x.get("original_consumer_group") == "pf", "x-dlq topic/group", r)
    # as its consumers read it: every member but original_headers a single string
    want(all(isinstance(x.get(k), str) for k in ("original_topic", "original_consumer_group", "original_timestamp",
                                                  "error_info")), "x-dlq members are strings %r" % x, r)
    want(x.get("original_timestamp") == str(s["timestamp"]), "x-dlq timestamp %r" % x.get("original_timestamp"), r)
    want(x.get("error_info") == "%s: %s" % (code, msg), "x-dlq error_info %r" % x.get("error_info"), r)
    want(isinstance(x.get("original_headers"), dict) and all(isinstance(v, str) for v in x["original_headers"].values()),
         "x-dlq original_headers is an object of strings", r)
    # each header once: no profile header duplicated
    dup = [n for n, c in r["counts"].items() if c > 1]
    want(not dup, "duplicated headers %r" % dup, r)
print("# %d DLQ records checked, %d mismatches" % (len(dlq), len(bad)))
for b in bad[:10]:
    print("# " + b)
sys.exit(0 if len(dlq) == 12 and not bad else 1)
PY

# without lanes.profiles: errgate's headers only
write_config "$T/plain.lua" pf2 none 'lanes = { dlq = "plain.dlq" },'
start_gateway gw2 "$T/plain.lua"
wait_drained pf2 src 60 && ok "plain gateway committed all" || not_ok "lag $(lag pf2 src)"
stop_gateway "$GW_PID"
$PY "$ROOT/spec/e2e/profile_reader.py" "$BOOTSTRAP" "$T/plain.json" plain.dlq || die "cannot read plain.dlq"
check "no profile headers without lanes.profiles" $PY -c '
import json, sys
rows = json.load(open(sys.argv[1]))
extra = [r for r in rows if r["spring"] or r["connect"] or r["streams"] or r["xdlq"]]
sys.exit(0 if len(rows) == 12 and not extra else 1)' "$T/plain.json"
echo "1..$TESTNO"
exit $FAILED
