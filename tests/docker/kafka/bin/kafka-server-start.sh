#!/bin/sh
# kafka-server-start.sh server.properties: the broker, logging to the console (the container's log).
export KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms64m -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1}"
export KAFKA_LOG4J_OPTS="${KAFKA_LOG4J_OPTS:--Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties}"
exec "$(dirname "$0")/kafka-run-class.sh" kafka.Kafka "$@"
