#!/usr/bin/env bash
# anchor.sh — build and run the Spring Kafka anchor (spec/anchors/README.md).
#
#   anchor.sh build          compile once; prints the cache dir
#   anchor.sh run MODE ARGS  run SpringAnchor MODE (building first if needed)
#
# The project (pom.xml, src/) is compiled by Maven into a cache outside the
# tree, ${ERRGATE_ANCHOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/errgate/anchors}/spring/SUM,
# SUM the sha256 of the pom (comments and white space left out) and the
# sources: classes/ and lib/ (the runtime jars, `dependency:copy-dependencies`).
# A stamp file written last under a lock marks a build complete; while it is
# there, nothing runs Maven again (every later run is offline), and an
# edit of the sources builds a new SUM. Maven's own repository (~/.m2) is
# where spec/kafka/cluster.sh fetch puts Kafka's artifacts too.
# The JVM: serial GC, C1 only (a short run on two shared cores), 256 MiB.
# Exit status: that of the mode; 1 when the build fails (Maven's log tail on
# stderr), 2 usage.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${ERRGATE_ANCHOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/errgate/anchors}/spring
JVM_OPTS=${ERRGATE_ANCHOR_JVM_OPTS:--Xms64m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true}
MAIN=errgate.anchor.spring.SpringAnchor

say() { echo "anchor.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# sum: the pom without comments and white space, and every source file
sum() {
  {
    tr -d ' \t\r\n' <"$HERE/pom.xml" | sed 's/<!--\([^-]\|-[^-]\)*-->//g'
    (cd "$HERE" && find src -type f -name '*.java' | LC_ALL=C sort | xargs sha256sum)
  } | sha256sum | cut -c1-16
}

# build: make $DIR hold classes/ and lib/ for the current sources
build() {
  DIR=$CACHE/$(sum)
  [ -f "$DIR/complete" ] && return 0
  command -v mvn >/dev/null || die "Maven (mvn) is needed once to build the Spring Kafka anchor (make test-deps)"
  command -v java >/dev/null || die "java (17 or newer) is needed to run the Spring Kafka anchor (make test-deps)"
  mkdir -p "$DIR" || die "cannot create $DIR"
  (
    flock -w 900 9 || die "waited 15 minutes for another build in $DIR"
    [ -f "$DIR/complete" ] && exit 0
    rm -rf "$DIR/target" "$DIR/lib"
    say "building the Spring Kafka anchor with Maven into $DIR (log: $DIR/mvn.log)"
    if ! timeout 900 mvn -B -q -f "$HERE/pom.xml" -Danchor.build.dir="$DIR/target" \
        compile dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$DIR/lib" \
        >"$DIR/mvn.log" 2>&1; then
      tail -n 15 "$DIR/mvn.log" | sed 's/\x1b\[[0-9;]*m//g; s/^/  mvn: /' >&2
      die "the Spring Kafka anchor did not build"
    fi
    [ -f "$DIR/target/classes/${MAIN//.//}.class" ] || die "Maven finished without $MAIN (see $DIR/mvn.log)"
    touch "$DIR/complete"
  ) 9>"$CACHE/.lock-$(basename "$DIR")" || exit 1
}

[ $# -ge 1 ] || { echo "usage: anchor.sh build | run MODE ARGS..." >&2; exit 2; }
mkdir -p "$CACHE" || die "cannot create $CACHE"
case $1 in
  build) build; echo "$DIR" ;;
  run)
    shift
    build
    # shellcheck disable=SC2086
    exec java $JVM_OPTS -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
      -cp "$DIR/target/classes:$DIR/lib/*" "$MAIN" "$@"
    ;;
  *) echo "usage: anchor.sh build | run MODE ARGS..." >&2; exit 2 ;;
esac
