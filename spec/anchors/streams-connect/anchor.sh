#!/usr/bin/env bash
# anchor.sh — build and run the Kafka Streams / Kafka Connect / share-group
# anchor tool (spec/anchors/README.md; the same conventions as
# spec/anchors/spring/anchor.sh).
#
#   anchor.sh build          compile once; prints the cache dir
#   anchor.sh run ARGS...    run errgate.anchors.Main ARGS (building first if needed):
#                            produce BOOTSTRAP DIR [streams|connect|share ...]
#                            check-profiles BOOTSTRAP TOPIC COUNT
#
# The Kafka release is the broker's: kafka.version of spec/kafka/pom.xml,
# or KAFKA_VERSION, passed to Maven as -Dkafka.version. The project (pom.xml,
# src/) is compiled by Maven into a cache outside the tree,
# ${ERRGATE_ANCHOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/errgate/anchors}/streams-connect/SUM,
# SUM the sha256 of the release, the pom (comments and white space left
# out) and the sources and resources: target/classes and lib/ (the runtime
# jars, `dependency:copy-dependencies`). A stamp file written last under a
# lock marks a build complete; while it is there nothing runs Maven again
# (every later run is offline). Maven's repository (~/.m2) is the one
# spec/kafka/cluster.sh fetch fills.
# The JVM: serial GC, C1 only (a short run on two shared cores), 384 MiB.
# Exit status: that of the tool; 1 when the build fails (Maven's log tail on
# stderr), 2 usage.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KPOM=$HERE/../../kafka/pom.xml
CACHE=${ERRGATE_ANCHOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/errgate/anchors}/streams-connect
JVM_OPTS=${ERRGATE_ANCHOR_JVM_OPTS:--Xms64m -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true}
MAIN=errgate.anchors.Main

say() { echo "anchor.sh: $*" >&2; }
die() { say "$*"; exit 1; }

VERSION=${KAFKA_VERSION:-$(sed -n 's:.*<kafka\.version>\([^<]*\)</kafka\.version>.*:\1:p' "$KPOM" | head -n 1)}
[[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+([.-][A-Za-z0-9.-]+)?$ ]] || die "'$VERSION' is not a Kafka release (KAFKA_VERSION or $KPOM)"

# sum: the release, the pom without comments and white space, every source and resource
sum() {
  {
    echo "$VERSION"
    tr -d ' \t\r\n' <"$HERE/pom.xml" | sed 's/<!--\([^-]\|-[^-]\)*-->//g'
    (cd "$HERE" && find src -type f | LC_ALL=C sort | xargs sha256sum)
  } | sha256sum | cut -c1-16
}

# build: make $DIR hold target/classes and lib/ for the current sources
build() {
  DIR=$CACHE/$(sum)
  [ -f "$DIR/complete" ] && return 0
  command -v mvn >/dev/null || die "Maven (mvn) is needed once to build the anchor tool (make test-deps)"
  command -v javac >/dev/null || die "a JDK 17 (javac) is needed once to build the anchor tool (make test-deps)"
  mkdir -p "$DIR" || die "cannot create $DIR"
  (
    flock -w 900 9 || die "waited 15 minutes for another build in $DIR"
    [ -f "$DIR/complete" ] && exit 0
    rm -rf "$DIR/target" "$DIR/lib"
    say "building the Streams/Connect anchor tool (Apache Kafka $VERSION) with Maven into $DIR (log: $DIR/mvn.log)"
    if ! timeout 900 mvn -B -q -f "$HERE/pom.xml" -Dkafka.version="$VERSION" -Danchor.build.dir="$DIR/target" \
        compile dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$DIR/lib" \
        >"$DIR/mvn.log" 2>&1; then
      tail -n 15 "$DIR/mvn.log" | sed 's/\x1b\[[0-9;]*m//g; s/^/  mvn: /' >&2
      die "the anchor tool did not build"
    fi
    [ -f "$DIR/target/classes/${MAIN//.//}.class" ] && [ -f "$DIR/lib/kafka-streams-$VERSION.jar" ] ||
      die "Maven finished without $MAIN or kafka-streams-$VERSION.jar (see $DIR/mvn.log)"
    touch "$DIR/complete"
  ) 9>"$CACHE/.lock-$(basename "$DIR")" || exit 1
}

[ $# -ge 1 ] || { echo "usage: anchor.sh build | run ARGS..." >&2; exit 2; }
mkdir -p "$CACHE" || die "cannot create $CACHE"
case $1 in
  build) build; echo "$DIR" ;;
  run)
    shift
    build
    # shellcheck disable=SC2086
    exec java $JVM_OPTS -cp "$DIR/target/classes:$DIR/lib/*" "$MAIN" "$@"
    ;;
  *) echo "usage: anchor.sh build | run ARGS..." >&2; exit 2 ;;
esac
