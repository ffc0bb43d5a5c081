"""Bad input a user types: each gets one line naming the knob and the fix, within seconds, and leaves nothing."""
from __future__ import annotations

import time

import pytest

from faultkit import processes_of
from streamlab.errors import LabError
from streamlab.lab import broker

BOUND_S = 20  # "within seconds", generous for a loaded 2-core CI machine


def _timed(fn):
    started = time.monotonic()
    try:
        fn()
    except LabError as exc:
        return str(exc), time.monotonic() - started
    raise AssertionError("no LabError was raised")


@pytest.mark.parametrize("value, says", [
    ("localhost", "'localhost' has no port: write host:port, e.g. localhost:9092"),
    ("localhost:abc", "'abc' is not a port number"),
    ("no-such-host.invalid:9092", "the host 'no-such-host.invalid' is not known (a typo, or a container that is not running)"),
    ("127.0.0.1:1", "nothing answers at 127.0.0.1:1"),
])
def test_a_bad_kafka_bootstrap_names_what_is_wrong(monkeypatch, value, says):
    """KAFKA_BOOTSTRAP without a port, with a port that is not a number, an unknown host, a closed port."""
    monkeypatch.setenv("KAFKA_BOOTSTRAP", value)
    message, seconds = _timed(broker.ensure_broker)
    assert message.startswith(f"KAFKA_BOOTSTRAP={value}") and says in message, message
    assert "write host:port" in message or "unset KAFKA_BOOTSTRAP" in message  # the fix
    assert seconds < BOUND_S, f"took {seconds:.1f} s"


@pytest.mark.broker
def test_a_bootstrap_list_whose_second_entry_answers_is_accepted(monkeypatch, shared_broker):
    """`KAFKA_BOOTSTRAP=127.0.0.1:1,<the broker>`: Kafka clients try each entry, so the lab accepts it too."""
    _, address = shared_broker
    listed = f"127.0.0.1:1,{address}"
    monkeypatch.setenv("KAFKA_BOOTSTRAP", listed)
    assert broker.ensure_broker() == listed
    assert broker.probe(listed) == "kafka"


def test_a_java_home_without_java(monkeypatch, tmp_path):
    """JAVA_HOME pointing at a folder without bin/java is named as such (not 'Java was not found')."""
    from streamlab.lab.session import java_binary

    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    message, seconds = _timed(java_binary)
    assert f"JAVA_HOME={tmp_path} holds no Java" in message and "bin/java" in message, message
    assert "Java was not found" not in message and seconds < BOUND_S


def test_an_unwritable_state_folder(monkeypatch, tmp_path):
    """STREAMLAB_HOME (.streamlab/) that cannot be written: one line naming it, no traceback, no broker left."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("STREAMLAB_HOME", str(blocker / "state"))  # a folder under a file: cannot be made
    monkeypatch.setenv("STREAMLAB_BROKER_PORT", "19899")
    monkeypatch.delenv("KAFKA_BOOTSTRAP", raising=False)
    message, seconds = _timed(lambda: broker.ensure_broker(kind="kafka", port=19899))
    assert "Cannot write the broker's folder" in message and "STREAMLAB_HOME" in message, message
    assert seconds < BOUND_S


def test_an_unwritable_temporary_folder(monkeypatch, tmp_path):
    """A TMPDIR that cannot be written: new_checkpoint() says so and names TMPDIR."""
    import tempfile

    from streamlab.lab import lifecycle

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(tempfile, "tempdir", str(blocker / "tmp"))
    monkeypatch.setattr(lifecycle, "_made_folders", ["(one made before: no sweep)"])
    message, _ = _timed(lifecycle.new_checkpoint)
    assert "Cannot make a checkpoint folder" in message and "TMPDIR" in message, message


@pytest.mark.parametrize("rate", [-5, "abc", float("nan")])
def test_a_bad_producer_rate_names_rate(rate):
    """BackgroundProducer(rate=...) with a negative, a non-number or NaN: a ValueError naming `rate`."""
    from streamlab.lab.producer import BackgroundProducer

    with pytest.raises(ValueError, match=r"rate="):
        BackgroundProducer("never-made", rate=rate)


@pytest.mark.parametrize("options, says", [
    ({"maxoffsetspertrigger": "0"}, "maxOffsetsPerTrigger=0: Spark reads NO records"),
    ({"maxoffsetspertrigger": "-1"}, "maxOffsetsPerTrigger=-1: a negative cap makes Spark plan each partition's end before its start"),
    ({"maxoffsetspertrigger": "abc"}, "maxOffsetsPerTrigger='abc' is not a whole number"),
    ({"minoffsetspertrigger": "1e3"}, "minOffsetsPerTrigger='1e3' is not a whole number"),
])
def test_a_bad_cap_in_a_learners_options_is_named(options, says):
    """The watch's reading of a query's Kafka options: a cap that reads nothing, or that is not a number."""
    from streamlab.lab.lifecycle import bad_option

    line = bad_option({"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t", **options})
    assert line is not None and says in line, line
    assert bad_option({"maxoffsetspertrigger": "1000"}) is None


@pytest.mark.broker
def test_a_broker_start_that_fails_after_launch_leaves_no_jvm(port, monkeypatch):
    """The broker is launched but does not answer in time: the LabError names it and no JVM is left behind."""
    monkeypatch.setattr(broker, "START_TIMEOUT_S", 0.5)
    message, seconds = _timed(lambda: broker.ensure_broker(kind="kafka", port=port))
    assert "did not answer within" in message, message
    folder = broker.data_dir(port, "kafka")
    time.sleep(0.5)
    assert not processes_of(folder), "a broker JVM outlived the failed start"
    assert not (folder / "broker.pid").exists()


@pytest.mark.broker
def test_broker_stop_finds_a_broker_whose_pid_file_was_lost(port):
    """A broker of ours without its pid file (written after the launch, or deleted): `broker stop` stops it."""
    broker.ensure_broker(kind="kafka", port=port)
    folder = broker.data_dir(port, "kafka")
    (folder / "broker.pid").unlink()
    assert broker.stop_broker(port=port), "stop_broker did not find the broker"
    assert not processes_of(folder) and broker.probe(f"127.0.0.1:{port}") == "closed"
