#!/usr/bin/python3
"""errgate-acls.py — the least-privilege Kafka ACL set of an errgate
deployment: what the gateway, its operators and the applications that
produce to its source topics may do, and nothing more (README.md beside
this file explains each entry).

  errgate-acls.py list  ROLES... [--format table|kafka-acls]
  errgate-acls.py apply ROLES... --admin-config FILE [--dry-run]
  errgate-acls.py apply --admin-config FILE -      (the `list` lines on stdin)

ROLES (any of the three groups, at least one principal):
  --gateway PRINCIPAL   the gateway's principal (e.g. User:errgate), with
      --group G             its consumer group (errgate's `group`)
      --source TOPIC        a source topic (repeat)
      --rung NAME           a ladder rung of the policy (repeat; `30s`)
      --dlq T --quarantine T --retry T
                            lane templates ({topic}, {rung}) when the config
                            changes lanes.dlq / lanes.quarantine / lanes.retry
      --audit TOPIC         admin.audit_topic (default errgate.audit)
      --inbox               source.inbox is set (the sources are DLQs: the
                            gateway writes SOURCE.state and the replay rung)
      --replay-to TOPIC     inbox mode: a topic its replays may write (repeat;
                            the topics source.replay_allow lets through)
  --operator PRINCIPAL  who runs errgate dlq, replay, policy test
                        --from-topic and offsets (repeat for several)
  --app PRINCIPAL=TOPIC an application that produces to a source (repeat)

`list` prints one ACL a line: PERMISSION PRINCIPAL OPERATION RESOURCE
PATTERN NAME (e.g. "ALLOW User:errgate WRITE TOPIC LITERAL orders.dlq");
--format kafka-acls prints the same set as Apache Kafka's kafka-acls.sh
command lines instead. `apply` creates the set on a cluster through
librdkafka's Admin API (CreateAcls; librdkafka is what errgate itself
links, no Java needed), connecting with the librdkafka properties of
--admin-config (KEY=VALUE lines: bootstrap.servers, security.protocol,
sasl.*, ssl.*; a principal allowed to ALTER the cluster). Creating an ACL
that exists is no error, so apply can run again after any change; it
never deletes (remove what a changed set no longer lists with
kafka-acls.sh --remove). No password is ever printed.

Exit status: 0 done, 1 the cluster refused or could not be reached (each
refused ACL named on stderr), 2 usage.
"""
import ctypes
import ctypes.util
import sys

AUDIT_DEFAULT = "errgate.audit"
LANE_DEFAULTS = {"dlq": "{topic}.dlq", "quarantine": "{topic}.quarantine",
                 "retry": "{topic}.retry.{rung}"}
REPLAY_RUNG = "replay"  # inbox mode's replay rung (src/gateway/gw_rungs.c)
OPERATOR_GROUP_PREFIX = "errgate-"
AUDIT_READER_GROUP = "errgate-audit-reader"

# librdkafka's enums (rdkafka.h; the same numbers as Kafka's protocol)
RESOURCE = {"TOPIC": 2, "GROUP": 3, "CLUSTER": 4}
PATTERN = {"LITERAL": 3, "PREFIXED": 4}
OPERATION = {"ALL": 2, "READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7,
             "DESCRIBE": 8, "CLUSTER_ACTION": 9, "DESCRIBE_CONFIGS": 10,
             "ALTER_CONFIGS": 11, "IDEMPOTENT_WRITE": 12}
PERMISSION = {"DENY": 2, "ALLOW": 3}


class Usage(Exception):
    pass


def lane(template, topic, rung=None):
    name = template.replace("{topic}", topic)
    return name.replace("{rung}", rung) if rung is not None else name


def principal(p):
    if ":" not in p or p.startswith(":") or p.endswith(":") or any(c.isspace() for c in p):
        raise Usage("a principal is TYPE:NAME (User:errgate), not '%s'" % p)
    return p


def acl_set(o):
    """The ACLs of the options o, in a stable order, without duplicates."""
    out = []

    def add(perm, who, op, res, name, pattern="LITERAL"):
        a = (perm, who, op, res, pattern, name)
        if a not in out:
            out.append(a)

    state = [lane(o["dlq"], s) + ".state" for s in o["source"]]
    if o["inbox"]:
        state += [s + ".state" for s in o["source"]]
    gw = o["gateway"]
    if gw:
        if not o["group"] or not o["source"]:
            raise Usage("--gateway needs --group and at least one --source")
        rungs = list(o["rung"]) + ([REPLAY_RUNG] if o["inbox"] else [])
        for s in o["source"]:
            add("ALLOW", gw, "READ", "TOPIC", s)
            written = [lane(o["dlq"], s), lane(o["quarantine"], s)]
            written += [lane(o["retry"], s, r) for r in rungs]
            if o["inbox"]:
                written.append(s + ".state")
            for t in written:
                # CREATE: the gateway makes its missing lanes at start with
                # the source's partition count (gw_topics.c)
                for op in ("WRITE", "CREATE"):
                    add("ALLOW", gw, op, "TOPIC", t)
            for r in rungs:  # the gateway consumes its rungs in its group
                add("ALLOW", gw, "READ", "TOPIC", lane(o["retry"], s, r))
        for t in o["replay_to"]:
            add("ALLOW", gw, "WRITE", "TOPIC", t)
        for op in ("READ", "WRITE", "CREATE"):
            add("ALLOW", gw, op, "TOPIC", o["audit"])
        add("ALLOW", gw, "READ", "GROUP", o["group"])
        # the audit reader assigns its partitions and never joins or
        # commits, yet its group id is looked up (FindCoordinator)
        add("ALLOW", gw, "DESCRIBE", "GROUP", AUDIT_READER_GROUP)
    for op_p in o["operator"]:
        for s in o["source"]:
            for t in (lane(o["dlq"], s), lane(o["quarantine"], s)):
                add("ALLOW", op_p, "READ", "TOPIC", t)
            # replay republishes to the source, and fetches a stub's
            # original from it
            add("ALLOW", op_p, "WRITE", "TOPIC", s)
            add("ALLOW", op_p, "READ", "TOPIC", s)
        for t in state:
            for op in ("READ", "WRITE", "CREATE"):
                add("ALLOW", op_p, op, "TOPIC", t)
        # replay's progress groups, dlq watch's, the readers' throw-away ids
        add("ALLOW", op_p, "READ", "GROUP", OPERATOR_GROUP_PREFIX, "PREFIXED")
        if o["group"]:
            # errgate offsets -g GROUP: the gateway's commits, read only
            add("ALLOW", op_p, "DESCRIBE", "GROUP", o["group"])
    for who, topic in o["app"]:
        add("ALLOW", who, "WRITE", "TOPIC", topic)
        # explicit: even a later wildcard ALLOW cannot open the control topics
        for t in [o["audit"]] + state:
            add("DENY", who, "ALL", "TOPIC", t)
    if not out:
        raise Usage("give --gateway, --operator or --app")
    return out


def kafka_acls_line(a):
    perm, who, op, res, pattern, name = a
    flag = {"ALLOW": "--allow-principal", "DENY": "--deny-principal"}[perm]
    op = {"IDEMPOTENT_WRITE": "IdempotentWrite", "DESCRIBE_CONFIGS": "DescribeConfigs",
          "ALTER_CONFIGS": "AlterConfigs", "CLUSTER_ACTION": "ClusterAction"}.get(op, op.capitalize())
    target = {"TOPIC": "--topic '%s'" % name, "GROUP": "--group '%s'" % name,
              "CLUSTER": "--cluster"}[res]
    return ("kafka-acls.sh --bootstrap-server \"$BOOTSTRAP\" --command-config \"$ADMIN_CONFIG\" "
            "--add %s '%s' --operation %s %s --resource-pattern-type %s"
            % (flag, who, op, target, pattern.lower()))


def parse_line(line):
    f = line.split()
    if (len(f) != 6 or f[0] not in PERMISSION or f[2] not in OPERATION or f[3] not in RESOURCE
            or f[4] not in PATTERN):
        raise Usage("not an ACL line: %r" % line)
    principal(f[1])
    return tuple(f)


# --- applying through librdkafka ---------------------------------------------

def librdkafka():
    path = ctypes.util.find_library("rdkafka") or "librdkafka.so.1"
    lib = ctypes.CDLL(path)
    vp, cp, sz, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int
    sig = {
        "rd_kafka_conf_new": (vp, []),
        "rd_kafka_conf_set": (i, [vp, cp, cp, cp, sz]),
        "rd_kafka_new": (vp, [i, vp, cp, sz]),
        "rd_kafka_destroy": (None, [vp]),
        "rd_kafka_AclBinding_new": (vp, [i, cp, i, cp, cp, i, i, cp, sz]),
        "rd_kafka_AclBinding_destroy_array": (None, [ctypes.POINTER(vp), sz]),
        "rd_kafka_AdminOptions_new": (vp, [vp, i]),
        "rd_kafka_AdminOptions_set_request_timeout": (i, [vp, i, cp, sz]),
        "rd_kafka_AdminOptions_destroy": (None, [vp]),
        "rd_kafka_queue_new": (vp, [vp]),
        "rd_kafka_queue_destroy": (None, [vp]),
        "rd_kafka_queue_poll": (vp, [vp, i]),
        "rd_kafka_CreateAcls": (None, [vp, ctypes.POINTER(vp), sz, vp, vp]),
        "rd_kafka_event_error": (i, [vp]),
        "rd_kafka_event_error_string": (cp, [vp]),
        "rd_kafka_event_CreateAcls_result": (vp, [vp]),
        "rd_kafka_CreateAcls_result_acls": (ctypes.POINTER(vp), [vp, ctypes.POINTER(sz)]),
        "rd_kafka_acl_result_error": (vp, [vp]),
        "rd_kafka_error_string": (cp, [vp]),
        "rd_kafka_event_destroy": (None, [vp]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


def read_props(path):
    props = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if "=" not in line:
                raise Usage("%s:%d: not KEY=VALUE" % (path, n))
            k, v = line.split("=", 1)
            props[k.strip()] = v.strip()
    return props


def apply(acls, props, timeout_ms=30000):
    lib = librdkafka()
    err = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    for k, v in props.items():
        if lib.rd_kafka_conf_set(conf, k.encode(), v.encode(), err, 512) != 0:
            # the message names the property, never its value
            raise Usage("--admin-config: %s: %s" % (k, err.value.decode(errors="replace")))
    lib.rd_kafka_conf_set(conf, b"log_level", b"3", err, 512)
    rk = lib.rd_kafka_new(0, conf, err, 512)  # RD_KAFKA_PRODUCER
    if not rk:
        raise RuntimeError("cannot create a Kafka client: %s" % err.value.decode(errors="replace"))
    arr = (ctypes.c_void_p * len(acls))()
    try:
        for n, (perm, who, op, res, pattern, name) in enumerate(acls):
            b = lib.rd_kafka_AclBinding_new(RESOURCE[res], name.encode(), PATTERN[pattern],
                                            who.encode(), b"*", OPERATION[op], PERMISSION[perm],
                                            err, 512)
            if not b:
                raise Usage("%s: %s" % (" ".join(acls[n]), err.value.decode(errors="replace")))
            arr[n] = b
        opts = lib.rd_kafka_AdminOptions_new(rk, 0)  # RD_KAFKA_ADMIN_OP_ANY
        lib.rd_kafka_AdminOptions_set_request_timeout(opts, timeout_ms, err, 512)
        q = lib.rd_kafka_queue_new(rk)
        lib.rd_kafka_CreateAcls(rk, arr, len(acls), opts, q)
        ev = lib.rd_kafka_queue_poll(q, timeout_ms + 5000)
        failed = []
        if not ev:
            failed.append("no answer from the cluster within %d s" % ((timeout_ms + 5000) // 1000))
        elif lib.rd_kafka_event_error(ev):
            failed.append("CreateAcls: %s" % lib.rd_kafka_event_error_string(ev).decode(errors="replace"))
        else:
            res = lib.rd_kafka_event_CreateAcls_result(ev)
            cnt = ctypes.c_size_t(0)
            rs = lib.rd_kafka_CreateAcls_result_acls(res, ctypes.byref(cnt))
            for n in range(cnt.value):
                e = lib.rd_kafka_acl_result_error(rs[n])
                if e:
                    failed.append("%s: %s" % (" ".join(acls[n]),
                                              lib.rd_kafka_error_string(e).decode(errors="replace")))
        if ev:
            lib.rd_kafka_event_destroy(ev)
        lib.rd_kafka_queue_destroy(q)
        lib.rd_kafka_AdminOptions_destroy(opts)
        return failed
    finally:
        lib.rd_kafka_AclBinding_destroy_array(arr, len(acls))
        lib.rd_kafka_destroy(rk)


def parse(argv):
    if not argv or argv[0] not in ("list", "apply"):
        raise Usage("the first argument is list or apply")
    o = {"cmd": argv[0], "gateway": None, "group": None, "source": [], "rung": [],
         "audit": AUDIT_DEFAULT, "inbox": False, "operator": [], "app": [], "replay_to": [],
         "format": "table", "admin_config": None, "dry": False, "stdin": False}
    o.update(LANE_DEFAULTS)
    args = argv[1:]
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-h", "--help"):
            print(__doc__)
            sys.exit(0)
        if a == "-":
            o["stdin"] = True
            i += 1
            continue
        if a in ("--inbox", "--dry-run"):
            o["inbox" if a == "--inbox" else "dry"] = True
            i += 1
            continue
        if i + 1 >= len(args):
            raise Usage("%s needs a value" % a)
        v = args[i + 1]
        i += 2
        if a == "--gateway":
            o["gateway"] = principal(v)
        elif a in ("--group", "--audit", "--dlq", "--quarantine", "--retry", "--format"):
            o[a[2:]] = v
        elif a == "--admin-config":
            o["admin_config"] = v
        elif a in ("--source", "--rung"):
            o[a[2:]].append(v)
        elif a == "--replay-to":
            o["replay_to"].append(v)
        elif a == "--operator":
            o["operator"].append(principal(v))
        elif a == "--app":
            who, _, topic = v.rpartition("=")
            if not who or not topic:
                raise Usage("--app is PRINCIPAL=TOPIC, not '%s'" % v)
            o["app"].append((principal(who), topic))
        else:
            raise Usage("unknown option '%s'" % a)
    if o["format"] not in ("table", "kafka-acls"):
        raise Usage("--format is table or kafka-acls")
    for t in ("dlq", "quarantine"):
        if "{topic}" not in o[t]:
            raise Usage("--%s needs {topic}" % t)
    if "{topic}" not in o["retry"] or "{rung}" not in o["retry"]:
        raise Usage("--retry needs {topic} and {rung}")
    if o["cmd"] == "apply" and not o["admin_config"]:
        raise Usage("apply needs --admin-config FILE")
    return o


def main(argv):
    try:
        o = parse(argv[1:])
        if o["stdin"]:
            acls = [parse_line(ln) for ln in sys.stdin if ln.strip() and not ln.startswith("#")]
        else:
            acls = acl_set(o)
        if o["cmd"] == "list" or o["dry"]:
            for a in acls:
                print(kafka_acls_line(a) if o["format"] == "kafka-acls" else " ".join(a))
            return 0
        props = read_props(o["admin_config"])
    except Usage as e:
        print("errgate-acls: %s" % e, file=sys.stderr)
        return 2
    except OSError as e:
        print("errgate-acls: %s" % e, file=sys.stderr)
        return 2
    try:
        failed = apply(acls, props)
    except Usage as e:
        print("errgate-acls: %s" % e, file=sys.stderr)
        return 2
    except (OSError, RuntimeError) as e:
        print("errgate-acls: %s" % e, file=sys.stderr)
        return 1
    for f in failed:
        print("errgate-acls: refused: %s" % f, file=sys.stderr)
    if failed:
        return 1
    print("errgate-acls: %d ACL(s) in place" % len(acls), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
