#!/usr/bin/env bash
# anchor.sh — build and run the Spring Kafka anchor (spec/anchors/README.md):
#   anchor.sh build | run MODE ARGS...
# How it builds, caches and runs: spec/anchors/tool.sh. The JVM: serial GC,
# C1 only (a short run on two shared cores), 256 MiB.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOOL=spring
MAIN=errgate.anchor.spring.SpringAnchor
JVM_OPTS="-Xms64m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn"
MVN_ARGS=()
source "$HERE/../tool.sh"
anchor_main "$@"
