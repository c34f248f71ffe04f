# tool.sh — building and running an anchor's Java tool (spec/anchors/README.md),
# sourced by each anchor's anchor.sh after it sets:
#   HERE      the tool's Maven project (pom.xml, src/)
#   TOOL      its name under the cache, and in messages
#   MAIN      the main class
#   JVM_OPTS  the JVM's options (ERRGATE_ANCHOR_JVM_OPTS overrides them)
# and optionally SUM_EXTRA (text that changes the build, e.g. a Kafka
# release), MVN_ARGS (an array of more Maven arguments) and NEEDS (a file
# of the build that must exist, relative to its directory).
#
# The project is compiled by Maven into a cache outside the tree,
# ${ERRGATE_ANCHOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/errgate/anchors}/TOOL/SUM,
# SUM the sha256 of SUM_EXTRA, the pom (comments and white space left out)
# and every file under src/: target/classes and lib/ (the runtime jars,
# `dependency:copy-dependencies`). A stamp file written last under a lock
# marks a build complete; while it is there nothing runs Maven again (every
# later run is offline), and an edit of the sources builds a new SUM.
# Maven's repository (~/.m2) is the one spec/kafka/cluster.sh fetch fills.
#
#   anchor.sh build          compile once; prints the cache dir
#   anchor.sh run ARGS...    run MAIN ARGS (building first if needed)
# Exit status: that of the tool; 1 when the build fails (Maven's log tail on
# stderr), 2 usage.
CACHE=${ERRGATE_ANCHOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/errgate/anchors}/$TOOL
JVM_OPTS=${ERRGATE_ANCHOR_JVM_OPTS:-$JVM_OPTS}

say() { echo "anchor.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# sum: SUM_EXTRA, the pom without comments and white space, every file under src/
sum() {
  {
    echo "${SUM_EXTRA:-}"
    tr -d ' \t\r\n' <"$HERE/pom.xml" | sed 's/<!--\([^-]\|-[^-]\)*-->//g'
    (cd "$HERE" && find src -type f | LC_ALL=C sort | xargs sha256sum)
  } | sha256sum | cut -c1-16
}

# build: make $DIR hold target/classes and lib/ for the current sources
build() {
  DIR=$CACHE/$(sum)
  [ -f "$DIR/complete" ] && return 0
  command -v mvn >/dev/null || die "Maven (mvn) is needed once to build the $TOOL anchor (make test-deps)"
  command -v javac >/dev/null || die "a JDK 17 (javac) is needed once to build the $TOOL anchor (make test-deps)"
  mkdir -p "$DIR" || die "cannot create $DIR"
  (
    flock -w 900 9 || die "waited 15 minutes for another build in $DIR"
    [ -f "$DIR/complete" ] && exit 0
    rm -rf "$DIR/target" "$DIR/lib"
    say "building the $TOOL anchor with Maven into $DIR (log: $DIR/mvn.log)"
    if ! timeout 900 mvn -B -q -f "$HERE/pom.xml" "${MVN_ARGS[@]}" -Danchor.build.dir="$DIR/target" \
        compile dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$DIR/lib" \
        >"$DIR/mvn.log" 2>&1; then
      tail -n 15 "$DIR/mvn.log" | sed 's/\x1b\[[0-9;]*m//g; s/^/  mvn: /' >&2
      die "the $TOOL anchor did not build"
    fi
    [ -f "$DIR/target/classes/${MAIN//.//}.class" ] || die "Maven finished without $MAIN (see $DIR/mvn.log)"
    [ -z "${NEEDS:-}" ] || [ -f "$DIR/$NEEDS" ] || die "Maven finished without $NEEDS (see $DIR/mvn.log)"
    touch "$DIR/complete"
  ) 9>"$CACHE/.lock-$(basename "$DIR")" || exit 1
}

# anchor_main ARGS...: anchor.sh's command line
anchor_main() {
  [ $# -ge 1 ] || { echo "usage: anchor.sh build | run ARGS..." >&2; exit 2; }
  mkdir -p "$CACHE" || die "cannot create $CACHE"
  case $1 in
    build) build; echo "$DIR" ;;
    run)
      shift
      build
      command -v java >/dev/null || die "java (17 or newer) is needed to run the $TOOL anchor (make test-deps)"
      # shellcheck disable=SC2086
      exec java $JVM_OPTS -cp "$DIR/target/classes:$DIR/lib/*" "$MAIN" "$@"
      ;;
    *) echo "usage: anchor.sh build | run ARGS..." >&2; exit 2 ;;
  esac
}
