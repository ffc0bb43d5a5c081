"""The Kafka sink's schema plan and option mapping, without Spark or a broker."""
from __future__ import annotations

import pytest
from pyspark.sql.types import (ArrayType, BinaryType, DoubleType, IntegerType, LongType, StringType, StructField,
                               StructType, TimestampType)

from streamlab.offline.options import IllegalArgumentException
from streamlab.offline.sink import HEADERS_TYPE, plan_write, producer_config

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


def schema(**fields):
    return StructType([StructField(name, kind) for name, kind in fields.items()])


def test_plan_uses_every_supported_column():
    # The 4.2 connector writes no timestamp column (records get the producer's time): it is ignored like `other`.
    plan = plan_write(schema(topic=StringType(), key=BinaryType(), value=StringType(), headers=HEADERS,
                             partition=IntegerType(), timestamp=TimestampType(), other=LongType()), None)
    assert plan.topic is None
    assert plan.columns == {"topic": "string", "key": "binary", "value": "string", "headers": HEADERS_TYPE,
                            "partition": "int"}


def test_the_topic_option_wins_and_is_trimmed():
    plan = plan_write(schema(topic=IntegerType(), value=BinaryType()), "  orders ")
    assert plan.topic == "orders" and "topic" not in plan.columns  # the column is not even type-checked
    assert "timestamp" not in plan_write(schema(value=StringType(), timestamp=DoubleType()), "t").columns


def test_column_names_are_case_sensitive_like_the_connector():
    with pytest.raises(ValueError, match=r"^Required attribute 'value' not found$"):
        plan_write(schema(Value=StringType()), "t")


def test_the_first_problem_reported_follows_the_connectors_order():
    # topic, key, value, headers, partition: a bad key is reported before a missing value.
    with pytest.raises(ValueError, match=r"^key attribute unsupported type bigint\. key must be a\(n\) string or "
                                         r"binary$"):
        plan_write(schema(key=LongType()), "t")


def test_producer_options_map_to_kafka_python():
    config = producer_config({"kafka.bootstrap.servers": "a:1, b:2", "kafka.acks": "all", "kafka.linger.ms": "7",
                              "kafka.batch.size": "1000", "kafka.compression.type": "none",
                              "kafka.client.id": "me", "kafka.enable.idempotence": "false",
                              "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "PLAIN",
                              "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule '
                                                        'required username="u" password="p";',
                              "kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.location": "/ca.pem",
                              "kafka.ssl.endpoint.identification.algorithm": "",
                              "topic": "ignored-here", "KAFKA.Retries": "3"})
    assert config == {"bootstrap_servers": ["a:1", "b:2"], "acks": "all", "linger_ms": 7, "batch_size": 1000,
                      "compression_type": None, "client_id": "me", "enable_idempotence": False,
                      "security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_plain_username": "u",
                      "sasl_plain_password": "p", "ssl_cafile": "/ca.pem", "ssl_check_hostname": False,
                      "retries": 3}


def test_transactional_id_is_passed_on_so_sends_fail_as_in_the_connector():
    assert producer_config({"kafka.bootstrap.servers": "a:1", "kafka.transactional.id": "tx"})[
        "transactional_id"] == "tx"


@pytest.mark.parametrize("options, message", [
    ({"kafka.bootstrap.servers": "a:1", "kafka.key.serializer": "x"},
     "Kafka option 'key.serializer' is not supported as keys are serialized with ByteArraySerializer."),
    ({"kafka.bootstrap.servers": "a:1", "kafka.value.serializer": "x"},
     "Kafka option 'value.serializer' is not supported as value are serialized with ByteArraySerializer."),
    ({"kafka.bootstrap.servers": "a:1", "kafka.acks": "most"},
     "Invalid value most for configuration acks: String must be one of: all, -1, 0, 1"),
    ({"kafka.bootstrap.servers": "a:1", "kafka.ssl.truststore.location": "/t.jks"},
     "Kafka option 'ssl.truststore.location' points to a JKS store, which the offline engine (kafka-python) "
     "cannot read: convert it to PEM and set kafka.ssl.truststore.type=PEM."),
])
def test_rejected_options(options, message):
    with pytest.raises(IllegalArgumentException) as caught:
        producer_config(options)
    assert str(caught.value) == message


def test_java_only_options_are_ignored_with_a_warning():
    with pytest.warns(UserWarning, match="kafka.buffer.memory' only means something to Java's Kafka client"):
        assert producer_config({"kafka.bootstrap.servers": "a:1", "kafka.buffer.memory": "1"}) == {
            "bootstrap_servers": ["a:1"]}
