"""The workshop hub's configuration, the busy-kernel activity stamp and the LMS exports, without starting anything."""
from __future__ import annotations

import csv
from types import SimpleNamespace



def test_the_hub_binds_to_localhost_culls_idle_servers_and_asks_the_instructor_to_approve(tmp_path, monkeypatch):
    from traitlets.config import Config

    from workshop import hub

    monkeypatch.setattr(hub, "proxy_command", lambda: "/bin/true")
    settings = hub.Settings(root=str(tmp_path), hub_port=18010, instructor="teacher")
    hub.write_config(settings)
    c = Config()
    hub.configure(c, str(tmp_path))
    assert c.JupyterHub.bind_url == "http://127.0.0.1:18010"
    assert c.JupyterHub.hub_bind_url.startswith("http://127.0.0.1:")
    assert c.ConfigurableHTTPProxy.api_url.startswith("http://127.0.0.1:")
    assert c.JupyterHub.authenticator_class is hub.WorkshopNativeAuthenticator
    assert c.NativeAuthenticator.open_signup is False and c.Authenticator.admin_users == {"teacher"}
    culler = next(s for s in c.JupyterHub.services if s["name"] == "idle-culler")
    assert "--timeout=2700" in culler["command"]
    server_config = (tmp_path / "server-config" / "jupyter_server_config.json").read_text()
    assert '"workshop.activity": true' in server_config


def test_a_busy_kernel_counts_as_activity():
    from workshop.activity import busy

    kernels = {"a": SimpleNamespace(execution_state="idle"), "b": SimpleNamespace(execution_state="busy")}
    manager = SimpleNamespace(list_kernel_ids=lambda: list(kernels), get_kernel=kernels.__getitem__)
    assert busy(manager)
    kernels["b"].execution_state = "idle"
    assert not busy(manager)


def test_exports_hold_every_learners_score(tmp_path):
    from workshop import instructor
    from workshop.hub import Settings

    settings = Settings(root=str(tmp_path))
    for aid, rows in {"00-setup": [("ada", "3", "3"), ("bob", "0", "3")], "01-source-internals": [("ada", "7", "10")]}.items():
        (tmp_path / "grades" / aid).mkdir(parents=True)
        with (tmp_path / "grades" / aid / "grades.csv").open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["student", "assignment", "score", "max_score", "status"])
            writer.writerows([(s, aid, score, top, "graded") for s, score, top in rows])
    canvas = list(csv.reader(instructor.export(settings, tmp_path / "c.csv", "canvas").open()))
    assert canvas[0][-2:] == ["00-setup", "01-source-internals"] and canvas[1][-2:] == ["3", "10"]
    assert canvas[2] == ["ada", "", "", "ada", "", "3", "7"] and canvas[3] == ["bob", "", "", "bob", "", "0", ""]
    moodle = list(csv.reader(instructor.export(settings, tmp_path / "m.csv", "moodle").open()))
    assert moodle == [["username", "00-setup", "01-source-internals"], ["ada", "3", "7"], ["bob", "0", ""]]
