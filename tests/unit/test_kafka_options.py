"""Source option checks of the offline engine, with the messages of Spark's KafkaSourceProvider (no broker)."""
from __future__ import annotations

import logging

import pytest

from streamlab.offline.options import (
    IllegalArgumentException, client_config, parse_source_options, starting_spec, time_string_ms,
    validate_batch, validate_stream,
)

BS = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def opts(**extra):
    return {**BS, "subscribe": "events", **extra}


def rejected(check, options) -> str:
    with pytest.raises(IllegalArgumentException) as info:
        check(options)
    return str(info.value)


def test_no_strategy_is_rejected_with_the_connectors_message():
    assert rejected(parse_source_options, BS) == (
        "One of the following options must be specified for Kafka source: subscribe, subscribepattern, assign. "
        "See the docs for more details.")


def test_two_strategies_are_rejected():
    assert rejected(parse_source_options, opts(subscribePattern="e.*")).startswith(
        "Only one of the following options can be specified for Kafka source: subscribe, subscribepattern, assign.")


def test_bootstrap_servers_is_required():
    assert rejected(parse_source_options, {"subscribe": "events"}) == (
        "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer")


def test_empty_strategy_values_are_rejected():
    assert "No topics to subscribe to" in rejected(parse_source_options, {**BS, "subscribe": " , "})
    assert "Pattern to subscribe is empty" in rejected(parse_source_options, {**BS, "subscribePattern": " "})
    assert "No topicpartitions to assign" in rejected(parse_source_options, {**BS, "assign": "t:0"})
    assert rejected(parse_source_options, {**BS, "assign": "{bad"}) == (
        'Expected e.g. {"topicA":[0,1],"topicB":[0,1]}, got {bad')


def test_option_names_are_case_insensitive():
    parsed = parse_source_options({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "SubScribe": "a, b", "MAXOFFSETSPERTRIGGER": "7",
                                   "failondataloss": "FALSE", "IncludeHeaders": "true"})
    assert parsed.topics == ("a", "b")
    assert (parsed.max_offsets_per_trigger, parsed.fail_on_data_loss, parsed.include_headers) == (7, False, True)


@pytest.mark.parametrize("option, words", [
    ("kafka.auto.offset.reset", "Kafka option 'auto.offset.reset' is not supported. Instead set the source option "
                                "'startingoffsets' to 'earliest' or 'latest'"),
    ("kafka.key.deserializer", "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte "
                               "arrays with ByteArrayDeserializer."),
    ("kafka.value.deserializer", "Kafka option 'value.deserializer' is not supported as values are deserialized"),
    ("kafka.enable.auto.commit", "Kafka option 'enable.auto.commit' is not supported"),
    ("kafka.interceptor.classes", "Kafka option 'interceptor.classes' is not supported"),
])
def test_consumer_options_spark_manages_are_rejected(option, words):
    # The connector builds some of these messages with stripMargin over several lines: compare the words.
    found = " ".join(rejected(parse_source_options, opts(**{option: "x"})).split())
    assert found.startswith(words), found


def test_group_id_is_allowed_with_the_connectors_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="streamlab.offline"):
        parsed = parse_source_options(opts(**{"kafka.group.id": "mine-once", "groupIdPrefix": "p"}))
    assert parsed.kafka_params["group.id"] == "mine-once"
    assert "Kafka option 'kafka.group.id' has been set on this query" in caplog.text
    assert "Option groupIdPrefix will be ignored" in caplog.text


@pytest.mark.parametrize("value", ["0", "-3"])
def test_min_partitions_must_be_positive(value):
    assert rejected(parse_source_options, opts(minPartitions=value)) == "minPartitions must be positive"


def test_min_partitions_must_be_a_whole_number():
    # As in the connector, Scala's toInt fails before any check of ours: a NumberFormatException's text.
    assert rejected(parse_source_options, opts(minPartitions="1.5")) == 'For input string: "1.5"'


def test_min_offsets_above_max_offsets_is_rejected():
    assert rejected(parse_source_options, opts(minOffsetsPerTrigger="20", maxOffsetsPerTrigger="10")) == (
        "The value of minOffsetPerTrigger(20) is higher than the maxOffsetsPerTrigger(10).")


@pytest.mark.parametrize("text, ms", [("15m", 900_000), ("5s", 5_000), ("100ms", 100), ("250", 250),
                                      ("2min", 120_000), ("1h", 3_600_000)])
def test_max_trigger_delay_is_a_spark_time_string(text, ms):
    assert time_string_ms(text) == ms
    assert parse_source_options(opts(maxTriggerDelay=text)).max_trigger_delay_ms == ms


def test_max_trigger_delay_defaults_to_15_minutes_and_rejects_nonsense():
    assert parse_source_options(opts()).max_trigger_delay_ms == 15 * 60 * 1000
    assert "Time must be specified as seconds (s)" in rejected(parse_source_options, opts(maxTriggerDelay="soon"))
    assert "Invalid suffix" in rejected(parse_source_options, opts(maxTriggerDelay="5parsecs"))


def test_boolean_options_accept_true_or_false_only():
    # Scala's toBoolean, as the connector calls it: the value is named, the option is not.
    assert rejected(parse_source_options, opts(failOnDataLoss="yes")) == 'For input string: "yes"'


def test_ending_offsets_are_rejected_in_a_stream_but_fine_in_a_batch():
    assert rejected(validate_stream, opts(endingOffsets="latest")) == "ending offset not valid in streaming queries"
    assert rejected(validate_stream, opts(endingOffsetsByTimestamp='{"events":{"0":1}}')) == (
        "ending timestamp not valid in streaming queries")
    assert validate_batch(opts(endingOffsets="latest")).topics == ("events",)


def test_batch_rejects_latest_as_start_and_earliest_as_end():
    assert rejected(validate_batch, opts(startingOffsets="latest")) == (
        "starting offset can't be latest for batch queries on Kafka")
    assert rejected(validate_batch, opts(endingOffsets="earliest")) == (
        "ending offset can't be earliest for batch queries on Kafka")
    assert rejected(validate_batch, opts(startingOffsets='{"events":{"0":-1}}')) == (
        "startingOffsets for events-0 can't be latest for batch queries on Kafka")
    both = opts(startingOffsets='{"events":{"0":0}}', endingOffsets='{"events":{"0":-2}}')
    assert rejected(validate_batch, both) == (
        "ending offset for events-0 can't be earliest for batch queries on Kafka")


def test_batch_rejects_a_start_after_the_end():
    assert "greater than the end offset 5" in rejected(
        validate_batch, opts(startingOffsets='{"events":{"0":9}}', endingOffsets='{"events":{"0":5}}'))


def test_starting_offsets_forms():
    assert starting_spec({}, "latest").kind == "latest"
    assert starting_spec({"startingoffsets": " EARLIEST "}, "latest").kind == "earliest"
    spec = starting_spec({"startingoffsets": '{"t":{"0":23,"1":-2,"2":-1}}'}, "latest")
    assert spec.kind == "offsets" and spec.offsets == {("t", 0): 23, ("t", 1): -2, ("t", 2): -1}
    assert rejected(lambda o: starting_spec(o, "latest"), {"startingoffsets": "{nope"}) == (
        'Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got {nope')


def test_timestamp_options_take_precedence_over_starting_offsets():
    spec = starting_spec({"startingoffsets": "earliest", "startingtimestamp": "1700000000000",
                          "startingoffsetsbytimestamp": '{"t":{"0":5}}'}, "latest")
    assert (spec.kind, spec.timestamp) == ("timestamp", 1700000000000)
    spec = starting_spec({"startingoffsets": "earliest", "startingoffsetsbytimestamp": '{"t":{"0":5}}'}, "latest")
    assert (spec.kind, spec.offsets) == ("timestamps", {("t", 0): 5})
    assert "Expected a single long value, got soon" == rejected(
        lambda o: starting_spec(o, "latest"), {"startingtimestamp": "soon"})


def test_kafka_options_map_onto_the_python_client():
    config = client_config({"bootstrap.servers": "a:1, b:2", "client.id": "me", "isolation.level": "read_committed",
                            "fetch.max.bytes": "1000", "security.protocol": "SASL_PLAINTEXT",
                            "sasl.mechanism": "PLAIN", "sasl.jaas.config":
                                'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                'username="alice" password="s3cret";'})
    assert config == {"bootstrap_servers": ["a:1", "b:2"], "client_id": "me", "isolation_level": "read_committed",
                      "fetch_max_bytes": 1000, "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
                      "sasl_plain_username": "alice", "sasl_plain_password": "s3cret"}


def test_bad_isolation_level_is_rejected():
    with pytest.raises(IllegalArgumentException, match="isolation.level"):
        client_config({"isolation.level": "committed-ish"})
