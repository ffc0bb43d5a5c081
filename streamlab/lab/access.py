"""A learner's access to a shared cluster: a name prefix and SCRAM credentials, applied without the notebook knowing.

In a workshop (workshop) many learners share one Kafka cluster. Kafka keeps them apart with a SCRAM user
each and ACLs on the names that start with `<learner>-`; the notebooks, though, write only
`.option("kafka.bootstrap.servers", bootstrap)`, as they do on a laptop. Two environment variables, set by the
workshop's spawner, close that gap:

- `STREAMLAB_TOPIC_PREFIX` (`ada-`): every topic `new_topic()` makes starts with it, and Spark's Kafka source gets
  `groupIdPrefix=<prefix>spark-kafka-source`, so the consumer groups it makes are the learner's too;
- `STREAMLAB_KAFKA_OPTIONS`: a file of Spark `kafka.*` options (Java properties syntax), e.g.
  `kafka.security.protocol=SASL_PLAINTEXT`, `kafka.sasl.mechanism=SCRAM-SHA-512`, `kafka.sasl.jaas.config=…`.
  Every `format("kafka")` reader and writer starts with them (an option the notebook sets wins), and every
  kafka-python client streamlab makes (admin, producer, consumer) gets the same credentials.

Without the variables nothing here changes anything.
"""
from __future__ import annotations

import re
from pathlib import Path

from streamlab import patches
from streamlab.errors import LabError
from streamlab.settings import settings


def topic_prefix() -> str:
    """The prefix of every name this learner may use on a shared cluster ('' outside a workshop)."""
    return settings.topic_prefix


def prefixed(name: str) -> str:
    """`name` with this learner's prefix in front (once): topics, transactional ids and groups a helper names
    itself must carry it, or the workshop's Kafka refuses them (its ACLs are prefixed)."""
    prefix = topic_prefix()
    return name if name.startswith(prefix) else prefix + name


def kafka_options() -> dict[str, str]:
    """The Spark `kafka.*` options of $STREAMLAB_KAFKA_OPTIONS ({} when unset), or a LabError naming the file."""
    path = settings.kafka_options
    if not path:
        return {}
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise LabError(f"STREAMLAB_KAFKA_OPTIONS={path} cannot be read ({exc.strerror}): ask the instructor to "
                       "provision your account again (python -m workshop add NAME).") from None
    options = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip().startswith("kafka."):
            raise LabError(f"{path}: {line[:60]!r} is not a kafka.<option>=<value> line")
        options[key.strip()] = value.strip()
    return options


def uses_sasl() -> bool:
    """Whether the lab's Kafka clients authenticate with SASL (a workshop's shared cluster)."""
    return kafka_options().get("kafka.security.protocol", "").upper().startswith("SASL")


def python_client_config() -> dict:
    """The same credentials as kafka-python keyword arguments ({} outside a workshop)."""
    options = kafka_options()
    if not options:
        return {}
    config = {}
    if "kafka.security.protocol" in options:
        config["security_protocol"] = options["kafka.security.protocol"]
    if "kafka.sasl.mechanism" in options:
        config["sasl_mechanism"] = options["kafka.sasl.mechanism"]
    jaas = options.get("kafka.sasl.jaas.config", "")
    user = re.search(r'username="([^"]*)"', jaas)
    password = re.search(r'password="([^"]*)"', jaas)
    if user and password:
        config["sasl_plain_username"], config["sasl_plain_password"] = user[1], password[1]
    return config


def install_clients() -> None:
    """Give every kafka-python client made from now on the workshop's credentials (nothing outside a workshop)."""
    config = python_client_config()
    if config:
        patches.install("workshop-client-defaults", config=config)


def client_defaults(cls, originals: dict, config: dict) -> dict:
    """The patch "workshop-client-defaults" (streamlab.patches): `cls`'s DEFAULT_CONFIG with the credentials."""
    # kafka-python copies DEFAULT_CONFIG into each new client, then applies the caller's arguments.
    defaults = originals["DEFAULT_CONFIG"]
    return {"DEFAULT_CONFIG": {**defaults, **{k: v for k, v in config.items() if k in defaults}}}


def install_spark() -> None:
    """Make every format("kafka") reader and writer start with the workshop's options (nothing outside one)."""
    options = kafka_options()
    prefix = topic_prefix()
    if options or prefix:
        patches.install("workshop-kafka-defaults", options=options, prefix=prefix)


def format_defaults(cls, originals: dict, options: dict, prefix: str) -> dict:
    """The patch "workshop-kafka-defaults" (streamlab.patches): `cls.format("kafka")` with the workshop's options
    (and, on a reader, the learner's group prefix)."""
    reader = cls.__name__ in ("DataFrameReader", "DataStreamReader")
    return {"format": _with_defaults(originals["format"], options, prefix if reader else "")}


def _with_defaults(original, options: dict, prefix: str):
    def format(self, source):
        result = original(self, source)
        if str(source).lower() == "kafka":
            for key, value in options.items():
                result = result.option(key, value)
            if prefix:
                result = result.option("groupIdPrefix", f"{prefix}spark-kafka-source")
        return result

    format.__doc__ = original.__doc__
    return format
