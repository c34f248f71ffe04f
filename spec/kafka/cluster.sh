#!/usr/bin/env bash
# cluster.sh — real Apache Kafka clusters (1 or 3 KRaft nodes on 127.0.0.1)
# for errgate's tests: what librdkafka's embedded mock broker cannot prove
# (replication and min ISR, broker restarts, compaction, real group
# coordination, the API versions a release still accepts) is proved here.
#
#   cluster.sh up --dir DIR [--brokers 1|3] [--sasl [--user NAME]...]
#                                             start a cluster, print its address
#   cluster.sh stop|start --dir DIR --broker N  stop one node / bring it back
#   cluster.sh down --dir DIR                 stop everything, remove the data
#   cluster.sh env --dir DIR                  print DIR/cluster.env
#   cluster.sh fetch                          download only; prints the lib dir
#
# The broker comes from Maven Central, not from a distribution tarball:
# spec/kafka/pom.xml names the release (property kafka.version, the one
# place it is written; KAFKA_VERSION overrides it, e.g. a 3.9.x whose broker
# still accepts the old API versions 4.x removed) and `fetch` copies its
# runtime jars plus a Log4j 2 binding into a cache outside the tree,
# ${ERRGATE_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/errgate/kafka}/VERSION/lib.
# A stamp file (the sha256 of the pom without its comments), written last
# under a lock, marks the lib dir complete; while it matches, no command runs
# Maven again, so every later run is offline. Two suites fetching at once wait on the same lock. Next to
# lib, a class-data archive of the broker's classes (see make_cds) halves
# every later JVM start.
#
# `up` writes one server.properties per node (each node is broker and
# controller, static controller.quorum.voters, every port a free 127.0.0.1
# port drawn by probe.py), formats each node's storage with one cluster id,
# starts every JVM under setsid/nohup (it outlives the calling shell; its pid
# is in DIR/broker-N/pid, its output and server.log in DIR/broker-N/) and
# returns once probe.py — librdkafka 2.0.2 through python3-confluent-kafka,
# the client errgate uses — sees every broker, has created the topic
# errgate-harness-check (one partition per broker, replicated on all) and
# has produced to it with acks=all. Two clusters started at the same moment
# may draw the same port: the broker that loses the bind exits, and `up`
# starts that cluster again on new ports (three attempts). `up` is bounded by
# ERRGATE_KAFKA_TIMEOUT seconds (default 120, not counting a first
# download) and kills what it started when it fails. Its stdout is only the
# lines it also writes to DIR/cluster.env:
#   bootstrap.servers=127.0.0.1:P[,...]   broker.N.pid=PID   broker.N.port=P
# Progress and errors go to stderr.
#
# With --sasl the client listener is SASL_PLAINTEXT and the cluster
# authorizes every request (KRaft's StandardAuthorizer,
# allow.everyone.if.no.acl.found=false): a principal may do only what an
# ACL allows it. The users are `admin`, the super user the brokers talk to
# each other as and the harness's own checks run as, and each --user NAME
# (implies --sasl), every one with a random password, known to the brokers
# both as SCRAM-SHA-512 credentials (written into the metadata log when the
# storage is formatted: kafka-storage format --add-scram; KRaft has no
# other way before a broker runs, and librdkafka 2.0.2 has no
# AlterUserScramCredentials) and as PLAIN users (the listener's JAAS
# config). Clients are told SCRAM-SHA-512, except where the client library
# cannot do it: librdkafka before 2.6.1 builds SCRAM's client-final-message
# with the nonce twice, which Kafka 4.x refuses as invalid credentials
# (confluentinc/librdkafka#4895), so with python3-confluent-kafka's
# librdkafka older than that and a 4.x broker they are told PLAIN (said on
# stderr); --sasl-mechanism M chooses. The controller listener stays
# PLAINTEXT on 127.0.0.1 and its principal (User:ANONYMOUS, the brokers'
# registrations and heartbeats) is a super user too: clients are never told
# its port. cluster.env then also has
#   security.protocol=SASL_PLAINTEXT   sasl.mechanism=M
#   sasl.user.NAME=PASSWORD (admin first)   sasl.user.NAME.config=FILE
# where FILE (DIR/clients/NAME.properties, mode 600) holds the librdkafka
# properties a client of that user needs (bootstrap.servers,
# security.protocol, sasl.mechanism, sasl.username, sasl.password).
# Without --sasl nothing of this exists: PLAINTEXT, no authorizer.
#
# `stop` sends SIGTERM (a controlled shutdown) and waits up to
# ERRGATE_KAFKA_STOP_WAIT seconds (60) before SIGKILL; `start` brings a
# stopped or killed node back on its data with the same ports and config,
# waits until it is in the metadata and back in the ISR of its partitions,
# and prints (and records) its new pid line; cluster.env keeps a stopped
# broker's last pid. `down` stops every node (SIGTERM, the same bounded
# wait, SIGKILL) and removes the data, keeping each node's logs and config.
# A process is a node of DIR's cluster when its command line names that
# node's server.properties and the cluster's id (-Derrgate.kafka.cluster);
# nothing is ever looked up or killed by a broad name.
# Exit status: 0 done, 1 failure (reason and the broker log's tail on
# stderr), 2 usage.
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
POM=$HERE/pom.xml
LOG4J=$HERE/log4j2.xml
PROBE=$HERE/probe.py
PY=/usr/bin/python3
TOPIC=errgate-harness-check
TIMEOUT=${ERRGATE_KAFKA_TIMEOUT:-120}
STOP_WAIT=${ERRGATE_KAFKA_STOP_WAIT:-60}
# Serial GC and a small heap: several brokers share two cores in the tests.
# C1 only (TieredStopAtLevel=1) starts a broker a second sooner, and on two
# cores it produces faster too (no C2 threads competing with the brokers);
# ERRGATE_KAFKA_JVM_OPTS replaces the whole set.
JVM_OPTS=${ERRGATE_KAFKA_JVM_OPTS:--Xms256m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true}
# the short-lived storage formatter
TOOL_OPTS="-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
[[ $TIMEOUT =~ ^[1-9][0-9]*$ && $STOP_WAIT =~ ^[1-9][0-9]*$ ]] || {
  echo "cluster.sh: ERRGATE_KAFKA_TIMEOUT and ERRGATE_KAFKA_STOP_WAIT are whole seconds" >&2
  exit 2
}
CACHE=${ERRGATE_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/errgate/kafka}
USAGE="usage: cluster.sh up --dir DIR [--brokers 1|3] [--sasl] [--user NAME]... [--sasl-mechanism SCRAM-SHA-512|PLAIN] | start|stop --dir DIR --broker N | down --dir DIR | env --dir DIR | fetch"

usage() { echo "cluster.sh: ${1:+$1; }$USAGE" >&2; exit 2; }
say() { echo "cluster.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# --- the release and its jars ---------------------------------------------

pom_version() { sed -n 's:.*<kafka\.version>\([^<]*\)</kafka\.version>.*:\1:p' "$POM" | head -n 1; }

# set_version V: VERSION, VDIR (its cache dir), LIB, STAMP
set_version() {
  VERSION=$1
  [[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+([.-][A-Za-z0-9.-]+)?$ ]] ||
    die "'$VERSION' is not a Kafka release number (KAFKA_VERSION or kafka.version in $POM)"
  VDIR=$CACHE/$VERSION
  LIB=$VDIR/lib
  STAMP=$VDIR/complete
}

# pom_sum: the pom's sha256 without its comments and white space (editing
# a comment does not make every machine fetch again)
pom_sum() { tr -d ' \t\r\n' <"$POM" | sed 's/<!--\([^-]\|-[^-]\)*-->//g' | sha256sum | cut -d' ' -f1; }

# resolve: make $LIB hold the release's jars; runs Maven only when the stamp
# is missing or was written for another pom.
resolve() {
  local want
  want=$(pom_sum)
  [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && return 0
  command -v mvn >/dev/null || die "Maven (mvn) is needed once to fetch Apache Kafka $VERSION into $LIB"
  mkdir -p "$VDIR" || die "cannot create $VDIR"
  (
    flock -w 900 9 || die "waited 15 minutes for another fetch into $VDIR ($VDIR/.lock)"
    [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && exit 0
    rm -rf "$VDIR/lib.partial" "$STAMP"
    say "fetching Apache Kafka $VERSION with Maven into $LIB (log: $VDIR/mvn.log)"
    if ! timeout 900 mvn -B -q -f "$POM" -Dkafka.version="$VERSION" \
        dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$VDIR/lib.partial" >"$VDIR/mvn.log" 2>&1; then
      local why
      why=$(grep -E 'Could not (find|resolve|transfer)|Failure to find|Non-resolvable|Unknown host|Connection|timed out' "$VDIR/mvn.log" |
        sed 's/\x1b\[[0-9;]*m//g; s/^\[ERROR\] *//' | head -n 3)
      say "Maven could not resolve Apache Kafka $VERSION (org.apache.kafka:kafka_2.13:$VERSION and its dependencies, see $POM)"
      if [ -n "$why" ]; then
        printf '%s\n' "$why" | sed 's/^/  /' >&2
      else
        tail -n 5 "$VDIR/mvn.log" | sed 's/\x1b\[[0-9;]*m//g; s/^/  mvn: /' >&2
      fi
      exit 1
    fi
    [ -f "$VDIR/lib.partial/kafka_2.13-$VERSION.jar" ] ||
      die "Maven finished but $VDIR/lib.partial has no kafka_2.13-$VERSION.jar (see $VDIR/mvn.log)"
    # the same jars again: keep lib and its class-data archive (running
    # brokers read them); other jars replace both
    if [ -d "$LIB" ] && diff -rq "$LIB" "$VDIR/lib.partial" >/dev/null 2>&1; then
      rm -rf "$VDIR/lib.partial"
    else
      rm -rf "$LIB" "$VDIR"/cds-*.jsa* && mv "$VDIR/lib.partial" "$LIB" || die "cannot install $LIB"
    fi
    echo "$want" >"$STAMP.tmp" && mv "$STAMP.tmp" "$STAMP" || die "cannot write $STAMP"
  ) 9>"$VDIR/.lock" || exit 1
}

# --- class-data archive ------------------------------------------------------
# A broker JVM spends most of its start-up loading and verifying classes. An
# application class-data archive (JDK AppCDS) of the classes one broker loads
# is made once per release and JVM (a throwaway one-node cluster started with
# -XX:ArchiveClassesAtExit and stopped), checked by a JVM that must map it
# (-Xshare:on), and only then renamed into place: a truncated archive crashes
# the JVM that maps it. Every later broker and formatter maps it. A failed
# attempt leaves a .failed marker and brokers start without an archive.
# ERRGATE_KAFKA_CDS=0 turns it off.

# cds_path: the archive's path for this release and this JVM (empty: none)
cds_path() {
  local jbin jvm
  [ "${ERRGATE_KAFKA_CDS:-1}" = 0 ] && return
  jbin=$(readlink -f "$(command -v java)") || return
  jvm=${jbin%/bin/java}/lib/server/libjvm.so
  [ -f "$jvm" ] || return
  echo "$VDIR/cds-$(printf '%s %s' "$jbin" "$(stat -c '%s %Y' "$jvm")" | sha256sum | cut -c1-12).jsa"
}

# cds_opt: the JVM option that maps the archive, when there is one
cds_opt() {
  local a
  a=$(cds_path)
  [ -n "$a" ] && [ -f "$a" ] && echo "-XX:SharedArchiveFile=$a"
}

# make_cds: make the archive if this release and JVM have none yet
make_cds() {
  local a
  a=$(cds_path)
  [ -n "$a" ] || return 0
  [ -f "$a" ] || [ -f "$a.failed" ] && return 0
  (
    flock -w 900 9 || exit 0
    [ -f "$a" ] || [ -f "$a.failed" ] && exit 0
    local t
    t=$(mktemp -d "${TMPDIR:-/tmp}/errgate-kafka-cds.XXXXXX") || exit 0
    rm -f "$a.tmp"
    say "making a class-data archive of the Apache Kafka $VERSION broker (once): $a"
    if ERRGATE_KAFKA_CDS=0 KAFKA_VERSION=$VERSION \
        ERRGATE_KAFKA_JVM_OPTS="$JVM_OPTS -XX:ArchiveClassesAtExit=$a.tmp" \
        "$HERE/cluster.sh" up --dir "$t" --brokers 1 >/dev/null 2>"$t/up.err"; then
      "$HERE/cluster.sh" down --dir "$t" 2>>"$t/up.err"
    else
      "$HERE/cluster.sh" down --dir "$t" 2>/dev/null
    fi
    if [ -s "$a.tmp" ] && java $TOOL_OPTS -Xshare:on -XX:SharedArchiveFile="$a.tmp" \
        -cp "$LIB/*" kafka.tools.StorageTool random-uuid >/dev/null 2>&1; then
      mv "$a.tmp" "$a"
    else
      say "no class-data archive (brokers start without one); see $a.failed"
      { cat "$t/up.err"; tail -n 20 "$t"/broker-1/console.log; } >"$a.failed" 2>/dev/null
      rm -f "$a.tmp"
    fi
    rm -rf "$t"
  ) 9>"$VDIR/.lock"
  return 0
}

# --- processes --------------------------------------------------------------

# props_of N: the node's config file (its path identifies its process)
props_of() { echo "$DIR/broker-$1/server.properties"; }

# Every broker's command line carries -Derrgate.kafka.cluster=ID, the cluster
# id `up` formatted it with (kept in DIR/cluster.state as CID): start and stop
# act only on the nodes of the cluster now in DIR, not on a broker left over
# from an earlier cluster in the same directory (one whose test never ran
# `down`); `up` and `down` stop those too.
CID=""

# cmdline PID: its command line, arguments separated by spaces (fails if gone or a zombie)
cmdline() {
  local st
  st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  st=${st##*) }
  [ "${st%% *}" != Z ] || return 1
  tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null
}

# is_ours PID N: PID is a live broker N of the cluster in DIR
is_ours() {
  local cmd
  [ -n "$1" ] && cmd=$(cmdline "$1") || return 1
  [[ -z $CID || $cmd == *" -Derrgate.kafka.cluster=$CID "* ]] && [[ $cmd == *" kafka.Kafka $(props_of "$2") "* ]]
}

# strays: every live broker process whose config is in DIR, of any cluster
strays() {
  local f p cmd
  for f in $(grep -lsF -- "$DIR/broker-" /proc/[0-9]*/cmdline); do
    p=${f#/proc/}
    p=${p%/cmdline}
    cmd=$(cmdline "$p") || continue
    [[ $cmd == *" kafka.Kafka $DIR/broker-"+([0-9])"/server.properties "* ]] && echo "$p"
  done
}

# pid_of N: the running broker N's pid (empty if none)
pid_of() {
  local pid p
  pid=$(cat "$DIR/broker-$1/pid" 2>/dev/null)
  if is_ours "$pid" "$1"; then echo "$pid"; return; fi
  # no pid file (or a stale one): look for the command line naming its config
  for p in $(grep -lsF -- "$(props_of "$1")" /proc/[0-9]*/cmdline); do
    p=${p#/proc/}
    p=${p%/cmdline}
    is_ours "$p" "$1" && { echo "$p"; return; }
  done
}

# nodes: the node numbers configured in DIR
nodes() {
  local f n
  for f in "$DIR"/broker-*/server.properties; do
    [ -f "$f" ] || continue
    n=${f%/server.properties}; n=${n##*/broker-}
    echo "$n"
  done | sort -n
}

prop() { sed -n "s/^$2=//p" "$1" | head -n 1; }

# port_of N: broker N's client port
port_of() { local l; l=$(prop "$(props_of "$1")" advertised.listeners); echo "${l##*:}"; }

# launch N: start node N's JVM in its own session; sets PID
launch() {
  local n=$1 d="$DIR/broker-$1"
  (
    # no descriptor of the caller (a pipe of $(...), a lock) reaches the JVM
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-" 2>/dev/null
    done
    # shellcheck disable=SC2086
    exec setsid nohup java $JVM_OPTS $(cds_opt) -Derrgate.kafka.cluster="$CID" -Dkafka.logs.dir="$d" \
      -Dlog4j2.configurationFile="$LOG4J" -cp "$LIB/*" \
      kafka.Kafka "$(props_of "$n")" </dev/null >>"$d/console.log" 2>&1
  ) &
  PID=$!
  # no "Killed" job report from bash when up_abort kills it
  disown "$PID"
  echo "$PID" >"$d/pid"
}

# running PID...: those of PID... still running (a zombie has exited)
running() {
  local p st
  for p in "$@"; do
    st=$(cat "/proc/$p/stat" 2>/dev/null) || continue
    st=${st##*) }
    [ "${st%% *}" != Z ] && echo "$p"
  done
}

# await TENTHS PID...: wait up to TENTHS/10 s for PID... to exit; false if some still run
await() {
  local i n=$1
  shift
  for ((i = 0; i < n; i++)); do
    [ -z "$(running "$@")" ] && return 0
    sleep 0.1
  done
  [ -z "$(running "$@")" ]
}

# halt WAIT PID...: SIGTERM, wait up to WAIT s, then SIGKILL (said on stderr)
halt() {
  local wait=$1 left
  shift
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null
  await $((wait * 10)) "$@" && return 0
  left=$(running "$@" | tr '\n' ' ')
  say "pid ${left% } still running ${wait} s after SIGTERM: sent SIGKILL"
  # shellcheck disable=SC2086
  kill -KILL $left 2>/dev/null
  # shellcheck disable=SC2086
  await 100 $left
  return 0
}

# log_tail N: the end of node N's logs, for an error report
log_tail() {
  local d="$DIR/broker-$1" f
  for f in "$d/console.log" "$d/server.log"; do
    [ -s "$f" ] || continue
    echo "--- broker $1: tail of $f" >&2
    tail -n 15 "$f" >&2
  done
}

bind_failed() { grep -qsE 'Address already in use|BindException' "$DIR/broker-$1/console.log" "$DIR/broker-$1/server.log"; }

# set_env_pid N PID: record broker N's pid in DIR/cluster.env
set_env_pid() {
  (
    flock -w 30 8
    sed "s/^broker\.$1\.pid=.*/broker.$1.pid=$2/" "$DIR/cluster.env" >"$DIR/cluster.env.tmp" &&
      mv "$DIR/cluster.env.tmp" "$DIR/cluster.env"
  ) 8>"$DIR/.env.lock"
}

# --- node configuration -----------------------------------------------------

# write_props N COUNT VOTERS: node N's server.properties (BPORT/CPORT arrays)
write_props() {
  local n=$1 count=$2 voters=$3 d="$DIR/broker-$1" rf isr major=${VERSION%%.*}
  if [ "$count" -ge 3 ]; then rf=3 isr=2; else rf=1 isr=1; fi
  mkdir -p "$d/data" || die "cannot create $d/data"
  {
    echo "# errgate test broker $n of $count (Apache Kafka $VERSION), written by spec/kafka/cluster.sh"
    echo "process.roles=broker,controller"
    echo "node.id=$n"
    echo "controller.quorum.voters=$voters"
    echo "controller.listener.names=CONTROLLER"
    if [ "$SASL" = 1 ]; then
      echo "listeners=SASL_PLAINTEXT://127.0.0.1:${BPORT[$n]},CONTROLLER://127.0.0.1:${CPORT[$n]}"
      echo "advertised.listeners=SASL_PLAINTEXT://127.0.0.1:${BPORT[$n]}"
      echo "inter.broker.listener.name=SASL_PLAINTEXT"
      echo "listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"
      echo "sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN"
      echo "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512"
      echo "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"${SASL_PASS[admin]}\";"
      local u plain="org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" password=\"${SASL_PASS[admin]}\""
      for u in "${SASL_USERS[@]}"; do plain+=" user_$u=\"${SASL_PASS[$u]}\""; done
      echo "listener.name.sasl_plaintext.plain.sasl.jaas.config=$plain;"
      echo "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
      echo "super.users=User:admin;User:ANONYMOUS"
      echo "allow.everyone.if.no.acl.found=false"
    else
      echo "listeners=PLAINTEXT://127.0.0.1:${BPORT[$n]},CONTROLLER://127.0.0.1:${CPORT[$n]}"
      echo "advertised.listeners=PLAINTEXT://127.0.0.1:${BPORT[$n]}"
      echo "inter.broker.listener.name=PLAINTEXT"
      echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    fi
    echo "log.dirs=$d/data"
    echo "num.partitions=4"
    echo "auto.create.topics.enable=true"
    echo "group.initial.rebalance.delay.ms=0"
    # errgate's tests pass short session timeouts (3 s) so that a killed
    # member's partitions move on soon; Kafka's floor is 6 s by default
    echo "group.min.session.timeout.ms=1000"
    echo "default.replication.factor=$rf"
    echo "min.insync.replicas=$isr"
    echo "offsets.topic.replication.factor=$rf"
    echo "offsets.topic.num.partitions=8"
    echo "transaction.state.log.replication.factor=$rf"
    echo "transaction.state.log.min.isr=$isr"
    echo "transaction.state.log.num.partitions=8"
    if [ "$major" -ge 4 ]; then
      echo "share.coordinator.state.topic.replication.factor=$rf"
      echo "share.coordinator.state.topic.min.isr=$isr"
      echo "share.coordinator.state.topic.num.partitions=8"
    fi
    # a restarted node is refused (DUPLICATE_BROKER_REGISTRATION) until its
    # previous session expires, even after a controlled shutdown, and a killed
    # one keeps leading its partitions that long: 4 s instead of 9
    echo "broker.heartbeat.interval.ms=1000"
    echo "broker.session.timeout.ms=4000"
    # the cleaner's dedupe buffer is allocated whole at start (128 MB by default)
    echo "log.cleaner.dedupe.buffer.size=16777216"
  } >"$(props_of "$n")"
  # the admin password is in it
  [ "$SASL" = 1 ] && chmod 600 "$(props_of "$n")"
  return 0
}

# --- SASL/SCRAM users (--sasl) ---------------------------------------------

SASL=0
SASL_MECH=""         # what clients are told (--sasl-mechanism, else chosen)
SASL_USERS=()        # admin first, then each --user
declare -A SASL_PASS # NAME -> password

# sasl_init: a fresh random password for admin and every --user, and the
# mechanism clients are told (see the top of this file)
sasl_init() {
  local u rdk
  if [ -z "$SASL_MECH" ]; then
    SASL_MECH=SCRAM-SHA-512
    rdk=$("$PY" -c 'import confluent_kafka; print(confluent_kafka.libversion()[1])' 2>/dev/null)
    if [ "${VERSION%%.*}" -ge 4 ] && [ -n "$rdk" ] && [ "$rdk" -lt $((0x020601ff)) ]; then
      SASL_MECH=PLAIN
      say "clients are told SASL PLAIN: the client's librdkafka ($("$PY" -c 'import confluent_kafka; print(confluent_kafka.libversion()[0])')) fails SCRAM against Kafka $VERSION (fixed in 2.6.1)"
    fi
  fi
  SASL_USERS=(admin "${USERS[@]}")
  for u in "${SASL_USERS[@]}"; do
    SASL_PASS[$u]=$(od -An -tx1 -N16 /dev/urandom | tr -d " \n")
  done
}

# sasl_load: the users and passwords of the cluster in DIR (from cluster.env)
sasl_load() {
  local l u
  SASL=0 SASL_USERS=()
  [ "$(prop "$DIR/cluster.state" sasl)" = 1 ] || return 0
  SASL=1
  SASL_MECH=$(prop "$DIR/cluster.env" sasl.mechanism)
  while IFS= read -r l; do
    [[ $l =~ ^sasl\.user\.([A-Za-z0-9_-]+)=(.*)$ ]] || continue
    u=${BASH_REMATCH[1]}
    SASL_USERS+=("$u")
    SASL_PASS[$u]=${BASH_REMATCH[2]}
  done <"$DIR/cluster.env"
}

# scram_args: kafka-storage format's --add-scram arguments, one per user
scram_args() {
  local u
  for u in "${SASL_USERS[@]}"; do
    printf '%s\n' "--add-scram" "SCRAM-SHA-512=[name=$u,password=${SASL_PASS[$u]}]"
  done
}

# write_clients BOOT: DIR/clients/NAME.properties for every user (--sasl)
write_clients() {
  local u f
  [ "$SASL" = 1 ] || return 0
  mkdir -p "$DIR/clients" && chmod 700 "$DIR/clients" || die "cannot create $DIR/clients"
  for u in "${SASL_USERS[@]}"; do
    f=$DIR/clients/$u.properties
    (
      umask 077
      printf '%s\n' "bootstrap.servers=$1" "security.protocol=SASL_PLAINTEXT" "sasl.mechanism=$SASL_MECH" \
        "sasl.username=$u" "sasl.password=${SASL_PASS[$u]}" >"$f"
    ) || die "cannot write $f"
  done
}

# probe_config: the client properties probe.py connects with (empty: plain)
probe_config() { [ "$SASL" = 1 ] && echo "$DIR/clients/admin.properties"; }

# sasl_env: the SASL lines of cluster.env
sasl_env() {
  local u
  [ "$SASL" = 1 ] || return 0
  echo "security.protocol=SASL_PLAINTEXT"
  echo "sasl.mechanism=$SASL_MECH"
  for u in "${SASL_USERS[@]}"; do
    echo "sasl.user.$u=${SASL_PASS[$u]}"
    echo "sasl.user.$u.config=$DIR/clients/$u.properties"
  done
}

# cluster_id: a random Kafka Uuid (16 bytes, unpadded URL-safe base64) that,
# like Kafka's own, does not begin with '-'
cluster_id() {
  local id
  while :; do
    id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22)
    [ "${id:0:1}" != - ] && [ ${#id} = 22 ] && break
  done
  echo "$id"
}

# --- subcommands ------------------------------------------------------------

# the pids up has started so far: killed (SIGKILL, their data is thrown away
# or was never served) if it fails or is interrupted
STARTED=()
up_abort() {
  local n
  if [ ${#STARTED[@]} -gt 0 ]; then
    kill -KILL "${STARTED[@]}" 2>/dev/null
    await 100 "${STARTED[@]}"
  fi
  for n in $(nodes); do
    [[ " ${STARTED[*]} " == *" $(cat "$DIR/broker-$n/pid" 2>/dev/null) "* ]] && rm -f "$DIR/broker-$n/pid"
  done
  STARTED=()
}

cmd_up() {
  local count=$1 attempt n rc cid voters boot now deadline ports i dead
  local left
  [ "$SASL" = 1 ] && sasl_init
  if [ -f "$DIR/cluster.state" ]; then
    CID=$(prop "$DIR/cluster.state" cluster.id)
    for n in $(nodes); do
      [ -n "$(pid_of "$n")" ] && die "a cluster already runs in $DIR (broker $n, pid $(pid_of "$n")); run: cluster.sh down --dir $DIR"
    done
  fi
  left=$(strays | tr '\n' ' ')
  if [ -n "$left" ]; then
    say "killing broker(s) left over from an earlier cluster in $DIR: pid ${left% }"
    # shellcheck disable=SC2086
    kill -KILL $left 2>/dev/null
    # shellcheck disable=SC2086
    await 100 $left
  fi
  resolve
  command -v java >/dev/null || die "java (17 or newer) is needed to run the broker"
  make_cds
  now=$(date +%s)
  deadline=$((now + TIMEOUT))
  "$PY" -c 'import confluent_kafka' 2>/dev/null ||
    die "$PY with confluent_kafka is needed (Debian package python3-confluent-kafka)"
  rm -f "$DIR/cluster.env"
  trap 'up_abort; say "interrupted; stopped the brokers started so far"; exit 1' INT TERM HUP
  say "starting $count Apache Kafka $VERSION broker(s) in $DIR"
  for attempt in 1 2 3; do
    ports=($("$PY" "$PROBE" ports $((2 * count)))) || { up_abort; die "no free ports"; }
    [ ${#ports[@]} -eq $((2 * count)) ] || { up_abort; die "no free ports"; }
    BPORT=() CPORT=() voters=""
    for ((n = 1; n <= count; n++)); do
      BPORT[$n]=${ports[$((2 * n - 2))]}
      CPORT[$n]=${ports[$((2 * n - 1))]}
      voters+="${voters:+,}$n@127.0.0.1:${CPORT[$n]}"
    done
    rm -rf "$DIR"/broker-*
    cid=$(cluster_id)
    CID=$cid
    local fpids=()
    for ((n = 1; n <= count; n++)); do
      write_props "$n" "$count" "$voters"
      local scram=()
      [ "$SASL" = 1 ] && mapfile -t scram < <(scram_args)
      # shellcheck disable=SC2046
      java $TOOL_OPTS $(cds_opt) -cp "$LIB/*" kafka.tools.StorageTool format -t "$cid" -c "$(props_of "$n")" \
        "${scram[@]}" >"$DIR/broker-$n/format.log" 2>&1 &
      fpids+=($!)
    done
    for ((n = 1; n <= count; n++)); do
      wait "${fpids[$((n - 1))]}" ||
        { tail -n 20 "$DIR/broker-$n/format.log" >&2; die "formatting the storage of broker $n failed"; }
    done
    STARTED=()
    boot=""
    for ((n = 1; n <= count; n++)); do
      launch "$n"
      STARTED+=("$PID")
      boot+="${boot:+,}127.0.0.1:${BPORT[$n]}"
    done
    write_clients "$boot"
    ERRGATE_PROBE_CONFIG=$(probe_config) "$PY" "$PROBE" ready "$boot" "$count" "$TOPIC" "$(
      IFS=,
      echo "${STARTED[*]}"
    )" "$deadline"
    rc=$?
    [ $rc = 0 ] && break
    dead=""
    for ((n = 1; n <= count; n++)); do
      is_ours "${STARTED[$((n - 1))]}" "$n" || { dead=$n; break; }
    done
    if [ $rc = 3 ] && [ -n "$dead" ] && bind_failed "$dead" && [ "$attempt" -lt 3 ] &&
      [ "$(date +%s)" -lt "$deadline" ]; then
      say "broker $dead could not bind its port (another process took it); starting again on new ports"
      up_abort
      continue
    fi
    up_abort
    if [ -n "$dead" ]; then
      log_tail "$dead"
      die "broker $dead exited during start-up"
    fi
    for ((n = 1; n <= count; n++)); do log_tail "$n"; done
    die "the cluster was not ready within ${TIMEOUT} s (ERRGATE_KAFKA_TIMEOUT)"
  done
  trap - INT TERM HUP
  {
    echo "version=$VERSION"
    echo "cluster.id=$CID"
    echo "lib=$LIB"
    echo "brokers=$count"
    echo "sasl=$SASL"
  } >"$DIR/cluster.state"
  {
    echo "bootstrap.servers=$boot"
    for ((n = 1; n <= count; n++)); do
      echo "broker.$n.pid=${STARTED[$((n - 1))]}"
      echo "broker.$n.port=${BPORT[$n]}"
    done
    sasl_env
  } >"$DIR/cluster.env.tmp" && mv "$DIR/cluster.env.tmp" "$DIR/cluster.env"
  say "ready in $(($(date +%s) - now)) s: $boot"
  cat "$DIR/cluster.env"
}

# load_state: VERSION/LIB of the cluster in DIR (fetched again if the cache was cleared)
load_state() {
  [ -f "$DIR/cluster.state" ] && [ -f "$DIR/cluster.env" ] || die "no cluster in $DIR (run: cluster.sh up --dir $DIR)"
  set_version "$(prop "$DIR/cluster.state" version)"
  CID=$(prop "$DIR/cluster.state" cluster.id)
  sasl_load
  resolve
}

cmd_start() {
  local n=$1 pid rc port
  load_state
  [ -f "$(props_of "$n")" ] || die "the cluster in $DIR has no broker $n"
  pid=$(pid_of "$n")
  [ -n "$pid" ] && die "broker $n already runs (pid $pid)"
  port=$(port_of "$n")
  STARTED=()
  trap 'up_abort; say "interrupted; stopped broker '"$n"'"; exit 1' INT TERM HUP
  say "starting broker $n on 127.0.0.1:$port"
  launch "$n"
  STARTED=("$PID")
  ERRGATE_PROBE_CONFIG=$(probe_config) "$PY" "$PROBE" member "127.0.0.1:$port" "$n" "$PID" "$(($(date +%s) + TIMEOUT))"
  rc=$?
  if [ $rc != 0 ]; then
    up_abort
    log_tail "$n"
    if [ $rc = 3 ] && bind_failed "$n"; then
      die "broker $n could not bind its ports (another process holds 127.0.0.1:$port or its controller port)"
    fi
    [ $rc = 3 ] && die "broker $n exited during start-up"
    die "broker $n did not rejoin within ${TIMEOUT} s (ERRGATE_KAFKA_TIMEOUT)"
  fi
  trap - INT TERM HUP
  set_env_pid "$n" "$PID"
  echo "broker.$n.pid=$PID"
}

cmd_stop() {
  local n=$1 pid
  [ -f "$(props_of "$n")" ] || die "no broker $n in $DIR"
  pid=$(pid_of "$n")
  if [ -z "$pid" ]; then
    say "broker $n is not running"
  else
    say "stopping broker $n (pid $pid)"
    halt "$STOP_WAIT" "$pid"
  fi
  rm -f "$DIR/broker-$n/pid"
}

cmd_down() {
  local n pids
  # every broker of DIR, this cluster's and any left over from an earlier one
  pids=($(strays))
  [ ${#pids[@]} -gt 0 ] && say "stopping ${#pids[@]} broker(s) in $DIR"
  halt "$STOP_WAIT" "${pids[@]}"
  for n in $(nodes); do
    rm -rf "$DIR/broker-$n/data" "$DIR/broker-$n/pid"
  done
  rm -f "$DIR/cluster.env" "$DIR/cluster.env.tmp" "$DIR/cluster.state" "$DIR/.env.lock"
  rm -rf "$DIR/clients"
}

# --- arguments --------------------------------------------------------------

[ $# -ge 1 ] || usage
CMD=$1
shift
DIR="" BROKERS=1 BROKER="" USERS=()
while [ $# -gt 0 ]; do
  case $1 in
    --dir) [ $# -ge 2 ] || usage "--dir needs a value"; DIR=$2; shift 2 ;;
    --dir=*) DIR=${1#*=}; shift ;;
    --brokers) [ $# -ge 2 ] || usage "--brokers needs a value"; BROKERS=$2; shift 2 ;;
    --brokers=*) BROKERS=${1#*=}; shift ;;
    --broker) [ $# -ge 2 ] || usage "--broker needs a value"; BROKER=$2; shift 2 ;;
    --broker=*) BROKER=${1#*=}; shift ;;
    --sasl) SASL=1; shift ;;
    --user) [ $# -ge 2 ] || usage "--user needs a name"; USERS+=("$2"); SASL=1; shift 2 ;;
    --user=*) USERS+=("${1#*=}"); SASL=1; shift ;;
    --sasl-mechanism) [ $# -ge 2 ] || usage "--sasl-mechanism needs a value"; SASL_MECH=$2; SASL=1; shift 2 ;;
    --sasl-mechanism=*) SASL_MECH=${1#*=}; SASL=1; shift ;;
    *) usage "unknown argument '$1'" ;;
  esac
done

need_dir() {
  [ -n "$DIR" ] || usage "$CMD needs --dir DIR"
  if [ "$CMD" = up ]; then mkdir -p "$DIR" || die "cannot create $DIR"; fi
  [ -d "$DIR" ] || die "no directory $DIR"
  DIR=$(cd "$DIR" && pwd)
}
need_broker() {
  [[ $BROKER =~ ^[1-9][0-9]*$ ]] || usage "$CMD needs --broker N (a node number from 1)"
}

case $CMD in
  up)
    [[ $BROKERS == 1 || $BROKERS == 3 ]] || usage "--brokers is 1 or 3, not '$BROKERS'"
    [[ -z $SASL_MECH || $SASL_MECH == SCRAM-SHA-512 || $SASL_MECH == PLAIN ]] ||
      usage "--sasl-mechanism is SCRAM-SHA-512 or PLAIN, not '$SASL_MECH'"
    for u in "${USERS[@]}"; do
      [[ $u =~ ^[A-Za-z0-9_-]{1,64}$ && $u != admin ]] ||
        usage "--user is a name of letters, digits, _ and - (not admin, the super user), not '$u'"
    done
    need_dir
    set_version "${KAFKA_VERSION:-$(pom_version)}"
    cmd_up "$BROKERS"
    ;;
  start) need_broker; need_dir; cmd_start "$BROKER" ;;
  stop) need_broker; need_dir; cmd_stop "$BROKER" ;;
  down)
    # nothing to stop where there is no directory (a test's cleanup after a failed up)
    [ -n "$DIR" ] && [ ! -e "$DIR" ] && exit 0
    need_dir
    cmd_down
    ;;
  env)
    need_dir
    [ -f "$DIR/cluster.env" ] || die "no cluster in $DIR"
    cat "$DIR/cluster.env"
    ;;
  fetch)
    set_version "${KAFKA_VERSION:-$(pom_version)}"
    resolve
    command -v java >/dev/null && make_cds
    echo "$LIB"
    ;;
  -h | --help | help) echo "$USAGE"; exit 0 ;;
  *) usage "unknown command '$CMD'" ;;
esac
