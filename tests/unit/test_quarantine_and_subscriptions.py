"""streamlab.quarantine and streamlab.subscriptions: the parts that need neither a broker nor Spark."""
from __future__ import annotations

import json

from streamlab import quarantine, subscriptions

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
    assert subscriptions._first_line(error).startswith("Added partition t-0 starts from 60 instead of 0")
    assert subscriptions._first_line(ValueError("\nfirst\nsecond")) == "first"


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
