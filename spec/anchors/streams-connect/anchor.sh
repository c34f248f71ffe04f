#!/usr/bin/env bash
# anchor.sh — build and run the Kafka Streams / Kafka Connect / share-group
# anchor tool (spec/anchors/README.md):
#   anchor.sh build | run ARGS...   (errgate.anchors.Main ARGS:
#     produce BOOTSTRAP DIR [streams|connect|share ...],
#     check-profiles BOOTSTRAP TOPIC COUNT)
# The Kafka release is the broker's: kafka.version of spec/kafka/pom.xml, or
# KAFKA_VERSION, passed to Maven as -Dkafka.version. How it builds, caches
# and runs: spec/anchors/tool.sh. The JVM: serial GC, C1 only, 384 MiB.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOOL=streams-connect
MAIN=errgate.anchors.Main
JVM_OPTS="-Xms64m -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true"
KPOM=$HERE/../../kafka/pom.xml
VERSION=${KAFKA_VERSION:-$(sed -n 's:.*<kafka\.version>\([^<]*\)</kafka\.version>.*:\1:p' "$KPOM" | head -n 1)}
source "$HERE/../tool.sh"
[[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+([.-][A-Za-z0-9.-]+)?$ ]] || die "'$VERSION' is not a Kafka release (KAFKA_VERSION or $KPOM)"
SUM_EXTRA=$VERSION
MVN_ARGS=(-Dkafka.version="$VERSION")
NEEDS=lib/kafka-streams-$VERSION.jar
anchor_main "$@"
