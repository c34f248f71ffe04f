#!/usr/bin/env bash
# test_kafka_acls_scram.sh — test_kafka_acls with SASL/SCRAM-SHA-512, on
# Apache Kafka 3.9.2: librdkafka before 2.6.1 (Debian 12 has 2.0.2) sends
# SCRAM's client nonce twice, which Kafka 3.8.1-3.9.x accepts and 4.x
# refuses as invalid credentials (confluentinc/librdkafka#4895), so SCRAM
# is proven on the newest release that takes it, and PLAIN on 4.4.0. The
# release is fetched with the others by .ci/run (spec/kafka/cluster.sh fetch).
# spec/run.sh: kafka only
export KAFKA_VERSION=3.9.2 EXPECT_SASL_MECHANISM=SCRAM-SHA-512
exec bash "$(dirname "$0")/test_kafka_acls.sh"
