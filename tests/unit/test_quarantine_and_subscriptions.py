"""streamlab.delivery.quarantine and streamlab.observe.subscriptions: the parts that need neither a broker nor Spark."""
from __future__ import annotations

import json

from streamlab.delivery import quarantine
from streamlab.errors import first_line
from streamlab.observe import subscriptions

ORDER = "id long, user string, amount double"
PAYMENT = "order_id long, method string, paid double"


def test_pattern_matching_like_findfirstin_and_like_kafka():
    names = ["events-1", "old-events-1", "events-1-backup", "other"]
    assert subscriptions.matches("events-.*", names) == ["events-1", "events-1-backup", "old-events-1"]
    assert subscriptions.matches("events-.*", names, whole_name=True) == ["events-1", "events-1-backup"]
    assert subscriptions.matches(r"^events-\d+$", names) == ["events-1"]


def test_data_loss_reason_is_the_line_reported():
    error = Exception("Some data may have been lost ...\nIf you don't want ...\n"
                      "Reason: Added partition t-0 starts from 60 instead of 0. SQLSTATE: XXKST\n=== Streaming Query ===")
    assert first_line(error) == "Exception: Added partition t-0 starts from 60 instead of 0."
    assert first_line(ValueError("\nfirst\nsecond")) == "ValueError: first"


def test_ddl_fields_and_python_validation():
    assert quarantine.ddl_fields(ORDER) == [("id", "long"), ("user", "string"), ("amount", "double")]
    assert quarantine.is_good(quarantine.order(5), ORDER)
    assert quarantine.is_good(quarantine.payment(5).encode(), PAYMENT)
    assert not quarantine.is_good(quarantine.payment(5), ORDER)  # missing fields
    assert not quarantine.is_good('{"id":1,"user":"u","amount":"1,50"}', ORDER)  # wrong type
    assert not quarantine.is_good('{"id":1,"us', ORDER)
    assert not quarantine.is_good(b"", ORDER) and not quarantine.is_good(None, ORDER)
    assert not quarantine.is_good("[1, 2]", ORDER)


def test_malformed_messages_come_in_two_kinds():
    cut, comma = quarantine.malformed(quarantine.order(3), 3), quarantine.malformed(quarantine.order(4), 4)
    assert not quarantine.is_good(cut, ORDER) and not quarantine.is_good(comma, ORDER)
    try:
        json.loads(cut)
        raise AssertionError("an odd record must be cut off beyond repair")
    except ValueError:
        pass
    fixed = json.loads(comma)
    assert isinstance(fixed["amount"], str) and "," in fixed["amount"]


def test_share_of_malformed_messages():
    messages = quarantine.Messages(quarantine.payment, 0.2)
    bad = [i for i in range(1000) if not quarantine.is_good(messages(i), PAYMENT)]
    assert len(bad) == 200
    assert any(i % 2 for i in bad) and any(i % 2 == 0 for i in bad)  # both kinds
    messages.share = 0.0
    assert all(quarantine.is_good(messages(i), PAYMENT) for i in range(200))


def test_the_routing_demo_is_a_live_demo_with_a_share_slider_and_a_panel_of_its_own():
    import time

    from streamlab.demo import LiveDemo

    demo = quarantine.RoutingDemo(None, {"o": "id long", "p": "order_id long"}, {"o": quarantine.order,
                                                                                 "p": quarantine.payment},
                                  {"o": "o-clean", "p": "p-clean"}, "q", rates={"o": 150, "p": 75},
                                  labels={"o": "orders", "p": "payments"}, script=[(6, 30)], bootstrap="nowhere:1")
    assert isinstance(demo, LiveDemo) and demo.topics == ["o", "p"] and demo.on_batch is demo.router
    assert demo.script == [(6, "malformed", 30)] and demo.drain
    demo._t0, demo._wall0 = time.monotonic() - 5, time.time() - 5
    demo._make_widgets()
    assert {"rate", "rate:p", "malformed"} <= set(demo._sliders)
    demo._sliders["malformed"].value = 40
    assert demo.malformed_share == 0.4 and all(m.share == 0.4 for m in demo.messages.values())
    demo.router.history.append({"batch": 0, "at": 1.0, "clean": {"o": 90, "p": 40}, "quarantined": {"o": 10, "p": 5}})
    fig = demo.figure()
    assert fig.axes[len(demo.charts)].get_title(loc="left").startswith("rows per batch by source topic")
    assert demo.routed().to_dict("records") == [{"batch": 0, "at": 1.0, "orders clean": 90, "payments clean": 40,
                                                 "orders quarantined": 10, "payments quarantined": 5}]
    assert "quarantined 15" in demo.readout(2.0)


def test_copy_topic_puts_every_record_in_its_partition_of_a_new_topic(monkeypatch):
    """Module 6's Exercise 4 replays into copies of the demo's topics: the copy holds the same records, partition by
    partition and in order, with their keys and headers; a topic that is gone is said in one line."""
    import kafka
    import pytest

    from streamlab.errors import LabError
    from streamlab.lab import lifecycle, topics

    class Record:
        def __init__(self, partition, offset, value, key=None, headers=None):
            self.partition, self.offset, self.value, self.key, self.headers = partition, offset, value, key, headers

    held = {"src": [Record(0, 0, b"a"), Record(1, 0, b"b", key=b"k"), Record(0, 1, b"c", headers=[("h", b"1")])]}
    sent, made = [], []

    class Producer:
        def __init__(self, **options):
            assert options == {"bootstrap_servers": "b:1"}

        def send(self, topic, **record):
            sent.append((topic, record))

        flush = close = lambda self, **kw: None

    monkeypatch.setattr(topics, "describe_topic", lambda t, b=None: {0: (0, 2), 1: (0, 1)} if t in held else {})
    monkeypatch.setattr(lifecycle, "new_topic", lambda prefix, partitions=1: made.append((prefix, partitions)) or "copy")
    monkeypatch.setattr(kafka, "KafkaProducer", Producer)
    monkeypatch.setattr(quarantine, "read_all", lambda t, b=None: held[t])
    assert quarantine.copy_topic("src", "shop-ex4-orders", "b:1") == "copy"
    assert made == [("shop-ex4-orders", 2)]
    assert sent == [("copy", {"key": None, "value": b"a", "partition": 0, "headers": []}),
                    ("copy", {"key": b"k", "value": b"b", "partition": 1, "headers": []}),
                    ("copy", {"key": None, "value": b"c", "partition": 0, "headers": [("h", b"1")]})]
    with pytest.raises(LabError, match="no topic gone to copy.*run the cells that make it again"):
        quarantine.copy_topic("gone", "x", "b:1")
