#!/bin/sh
# kafka-run-class.sh CLASS ARGS...: Java on the image's jars (the stand-in's own script, not Kafka's).
# KAFKA_HEAP_OPTS and KAFKA_OPTS as in Kafka's scripts; tools log warnings only, to stderr.
set -e
log="${KAFKA_LOG4J_OPTS:--Dlog4j2.configurationFile=/opt/kafka/config/tools-log4j2.properties}"
# shellcheck disable=SC2086
exec java ${KAFKA_HEAP_OPTS:--Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC} ${KAFKA_OPTS:-} "$log" \
  -cp '/opt/kafka/libs/*' "$@"
