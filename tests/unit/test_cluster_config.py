"""The cluster's node configuration and ports, without starting anything (streamlab.lab.cluster)."""
from __future__ import annotations

import pytest

from streamlab.errors import LabError


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMLAB_HOME", str(tmp_path))
    monkeypatch.setenv("STREAMLAB_CLUSTER_PORT", "29292")
    monkeypatch.setenv("STREAMLAB_SPARK_PORT", "27077")
    monkeypatch.setenv("STREAMLAB_SPARK_UI_PORT", "28080")
    from streamlab.lab import cluster

    return cluster


def _config(cluster, node, password=None):
    (cluster.folder() / f"node-{node}").mkdir(parents=True)
    path = cluster._node_config(node, password)
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def test_ports_follow_the_variables(cluster):
    p = cluster.ports()
    assert p.brokers == (29292, 29293, 29294) and p.controllers == (29295, 29296, 29297)
    assert (p.master, p.master_ui, p.workers, p.worker_uis) == (27077, 28080, (27078, 27079), (28081, 28082))
    assert cluster.bootstrap() == "127.0.0.1:29292,127.0.0.1:29293,127.0.0.1:29294"
    assert cluster.master_url() == "spark://127.0.0.1:27077"


def test_a_bad_port_is_one_line_naming_the_fix(cluster, monkeypatch):
    monkeypatch.setenv("STREAMLAB_CLUSTER_PORT", "nine")
    with pytest.raises(LabError, match="STREAMLAB_CLUSTER_PORT='nine' is not a port number"):
        cluster.ports()


def test_every_topic_and_internal_topic_has_three_replicas_and_two_in_sync(cluster):
    conf = _config(cluster, 2)
    assert conf["node.id"] == "2" and conf["process.roles"] == "broker,controller"
    assert conf["controller.quorum.voters"] == "1@127.0.0.1:29295,2@127.0.0.1:29296,3@127.0.0.1:29297"
    assert conf["listeners"] == "PLAINTEXT://127.0.0.1:29293,CONTROLLER://127.0.0.1:29296"
    for key in ("default.replication.factor", "offsets.topic.replication.factor",
                "transaction.state.log.replication.factor"):
        assert conf[key] == "3", key
    assert conf["min.insync.replicas"] == "2" and conf["transaction.state.log.min.isr"] == "2"


def test_scram_uses_the_standard_authorizer_with_controllers_as_super_users(cluster):
    conf = _config(cluster, 1, password="pw")
    assert conf["listeners"].startswith("SASL_PLAINTEXT://127.0.0.1:29292")
    assert conf["listener.security.protocol.map"] == "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"
    assert conf["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert conf["super.users"] == "User:admin;User:ANONYMOUS"
    assert conf["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"


def test_stop_without_a_cluster_says_so(cluster):
    assert cluster.stop() == "no cluster was running"


def test_scram_needs_a_password(cluster):
    with pytest.raises(LabError, match="admin_password"):
        cluster.start(scram=True)
