"""A workshop learner's prefix and credentials (streamlab.lab.access): read from the spawner's variables, and
nothing at all without them."""
from __future__ import annotations

import pytest

from streamlab.errors import LabError
from streamlab.lab import access, topics


def test_without_the_variables_nothing_changes(monkeypatch):
    monkeypatch.delenv("STREAMLAB_TOPIC_PREFIX", raising=False)
    monkeypatch.delenv("STREAMLAB_KAFKA_OPTIONS", raising=False)
    assert access.topic_prefix() == "" and access.kafka_options() == {} and access.python_client_config() == {}
    assert not access.uses_sasl()
    assert topics.unique_name("setup").startswith("setup-")


def test_the_options_file_gives_spark_and_kafka_python_the_same_credentials(tmp_path, monkeypatch):
    from workshop.kafka import spark_options

    path = tmp_path / "kafka.properties"
    path.write_text("# ada's credentials\n" + "".join(f"{k}={v}\n" for k, v in spark_options("ada", "s3=cr;t").items()))
    monkeypatch.setenv("STREAMLAB_KAFKA_OPTIONS", str(path))
    monkeypatch.setenv("STREAMLAB_TOPIC_PREFIX", "ada-")
    assert access.kafka_options()["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    assert access.python_client_config() == {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-512",
                                             "sasl_plain_username": "ada", "sasl_plain_password": "s3=cr;t"}
    assert access.uses_sasl()
    assert topics.unique_name("setup").startswith("ada-setup-")


def test_a_bad_options_file_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMLAB_KAFKA_OPTIONS", str(tmp_path / "missing"))
    with pytest.raises(LabError, match="cannot be read.*provision"):
        access.kafka_options()
    (tmp_path / "bad").write_text("security.protocol=SASL_PLAINTEXT\n")
    monkeypatch.setenv("STREAMLAB_KAFKA_OPTIONS", str(tmp_path / "bad"))
    with pytest.raises(LabError, match="not a kafka.<option>=<value> line"):
        access.kafka_options()


@pytest.mark.parametrize("name", ["Ada", "a", "admin", "controller", "learner", "ada-1", "x" * 21, ""])
def test_learner_names_kafka_linux_and_the_hub_all_accept(name):
    from workshop.kafka import check_name

    with pytest.raises(LabError, match="cannot be a learner name"):
        check_name(name)
