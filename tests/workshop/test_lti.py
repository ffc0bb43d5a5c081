"""LTI 1.3 launches from an LMS into the workshop's hub, as docs/workshop.md tells an instructor to set them up.

The LMS is tests/workshop/lti_platform.py, registered with the hub's URLs from the docs' table and the custom
fields they give; the hub is JupyterHub with the course's own config (workshop.json with `auth: "lti"` and the
`lti` keys of the docs' example, filled with the platform's values), started by the course's `start` behind its
configurable-http-proxy, on free 127.0.0.1 ports. Each launch goes the way a browser takes it, with `requests`:
the LMS's login initiation to /hub/lti13/oauth_login, the hub's redirect to the LMS's authorize URL (which checks
the hub's request), the LMS's page form-posting the signed id_token to the hub's redirect URI.

No learner's server is started (that needs the room's Kafka, which these tests do not start): they end where the
hub would spawn one.
"""
from __future__ import annotations

import html
import json
import re
import shutil
import socket
import tempfile
from pathlib import Path
from urllib.parse import urlparse

import pytest
import requests
from lti_platform import LTI, Person, Platform, auto_submitted, new_key

from workshop.hub import REPO, Settings, kept_secret

pytestmark = pytest.mark.timeout(180)

HOST = "https://<your host>"  # how docs/workshop.md writes the hub's public address


def documented() -> tuple[dict, dict]:
    """From docs/workshop.md's LTI section: the LMS fields' table ({field: value}) and workshop.json's example."""
    text = (REPO / "docs" / "workshop.md").read_text()
    section = text[text.index("**LTI 1.3, from an LMS"):]
    section = section[:section.index("\n## ")]
    fields = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 2 and "`" in cells[1]:
            fields[cells[0]] = cells[1].strip("`")
    example = json.loads("{" + re.search(r"```json\n(.*?)```", section, re.DOTALL).group(1) + "}")
    return fields, example


def field(fields: dict, word: str) -> str:
    """The value of the one LMS field whose name has `word`."""
    found = [v for k, v in fields.items() if word in k.lower()]
    assert len(found) == 1, f"docs/workshop.md's LMS table has {len(found)} fields about {word!r}: {fields}"
    return found[0]


def _ports(n: int, low: int = 28000, high: int = 28099) -> list[int]:
    ports = []
    for port in range(low, high + 1):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        ports.append(port)
        if len(ports) == n:
            return ports
    pytest.skip(f"fewer than {n} free ports in {low}-{high}")


@pytest.fixture(scope="module")
def site():
    """The LMS, with the hub registered as its docs say, and the hub, configured for it; both stopped afterwards."""
    from workshop import kafka
    from workshop.__main__ import start, stop

    fields, example = documented()
    assert example["auth"] == "lti"
    hub_port, proxy_api_port, hub_api_port = _ports(3)
    url = f"http://127.0.0.1:{hub_port}"
    custom = dict(pair.split("=", 1) for pair in field(fields, "custom").split(";")) if any(
        "custom" in k.lower() for k in fields) else {}
    root = Path(tempfile.mkdtemp(prefix="streamlab-lti-"))
    with Platform(client_id="10000000000042", custom=custom,
                  redirect_uris=[field(fields, "redirect").replace(HOST, url)]) as lms:
        lti = {"issuer": lms.issuer, "client_id": [lms.client_id], "authorize_url": lms.authorize_url,
               "jwks_endpoint": lms.jwks_endpoint, "username_key": example["lti"]["username_key"]}
        assert set(lti) == set(example["lti"]), "the docs' workshop.json example has other LTI keys than these"
        settings = Settings(root=str(root), hub_port=hub_port, proxy_api_port=proxy_api_port,
                            hub_api_port=hub_api_port, auth="lti", lti=lti)
        # A run killed by a time-out runs no teardown: test_hub's watcher stops the hub when this process is gone.
        from support import guardian
        from test_hub import STOP_WORKSHOP

        watching = guardian(STOP_WORKSHOP, root)
        try:
            # The course's start, less the room's Kafka: a launch needs none, only a learner's server would.
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(kafka, "start", lambda room: None)
                start(settings, timeout=60)
            yield {"lms": lms, "settings": settings, "url": url, "fields": fields,
                   "token": kept_secret(root / "hub" / "instructor.token"),
                   "target": field(fields, "target link").replace(HOST, url),
                   "login": field(fields, "login url").replace(HOST, url)}
        finally:
            print("stopped: " + ", ".join(stop(settings)))
            shutil.rmtree(root, ignore_errors=True)
            watching.kill()
            watching.wait()


def users(site) -> set[str]:
    """The hub's users, as the instructor's token sees them through the REST API."""
    got = requests.get(f"{site['url']}/hub/api/users", headers={"Authorization": f"token {site['token']}"},
                       timeout=10)
    got.raise_for_status()
    return {u["name"] for u in got.json()}


def launch(site, person: Person) -> tuple[requests.Session, requests.Response]:
    """`person` launches the course from the LMS in a fresh browser: its session, and the hub's answer to the
    id_token the LMS made the browser post."""
    browser = requests.Session()
    lms = site["lms"]
    hub = browser.post(site["login"], data=lms.initiate(person, site["target"]), allow_redirects=False, timeout=10)
    assert hub.status_code == 302, f"the hub's OIDC login answered {hub.status_code}: {hub.text[:500]}"
    assert hub.headers["Location"].startswith(lms.authorize_url + "?")
    page = browser.get(hub.headers["Location"], allow_redirects=False, timeout=10)
    assert page.status_code == 200, f"the LMS refused the hub's authentication request: {lms.refused[-1:]}"
    method, action, fields = auto_submitted(page.text)
    assert method == "post" and set(fields) == {"id_token", "state"}
    return browser, browser.post(action, data=fields, allow_redirects=False, timeout=30)


def logged_in(site, browser: requests.Session) -> str | None:
    """Who the browser's hub cookie logs in (the hub's home page names them), or None."""
    home = browser.get(f"{site['url']}/hub/home", allow_redirects=False, timeout=10)
    if home.status_code != 200:
        return None
    return browser.get(f"{site['url']}/hub/api/user", timeout=10).json()["name"]


def test_a_launch_logs_the_learner_in_under_their_login_id(site):
    before = users(site)
    ada = Person("ada", "Ada Lovelace", "ada.lovelace@uni.example")
    browser, answer = launch(site, ada)
    assert answer.status_code == 302, f"the hub refused ada's launch ({answer.status_code}): {_message(answer)}"
    # where the learner lands: a hub page that starts their server, not an LTI endpoint
    landing = urlparse(answer.headers["Location"]).path
    assert landing in ("/hub/", "/hub/spawn", "/hub/home"), f"the launch lands on {landing}"
    assert users(site) - before == {"ada"}, f"the launch made users {users(site) - before}, not ada"
    assert logged_in(site, browser) == "ada"
    again, answer = launch(site, ada)  # a second launch logs the same user in
    assert answer.status_code == 302 and logged_in(site, again) == "ada" and users(site) - before == {"ada"}


def test_every_hub_url_the_docs_give_the_lms_exists(site):
    for name, value in site["fields"].items():
        if value.startswith(HOST):
            answer = requests.get(value.replace(HOST, site["url"]), allow_redirects=False, timeout=10)
            assert answer.status_code != 404, f"docs/workshop.md's {name!r}, {value}, is not on the hub (404)"


FORGERIES = {  # what the forger changes, and the reason the hub gives
    "another key under the LMS's key id": ({"key": new_key()}, "Signature verification failed"),
    "another key of its own": ({"key": new_key(), "kid": "not-in-the-jwks"}, "Unable to find a signing key"),
    "another issuer": ({"iss": "https://other-lms.example.edu"}, "Invalid issuer"),
    "another client id": ({"aud": "10000000000666", "azp": "10000000000666"}, "Audience doesn't match"),
}


@pytest.mark.parametrize("forgery", FORGERIES)
def test_a_forged_launch_is_refused_and_makes_no_user(site, forgery):
    changes, reason = FORGERIES[forgery]
    before = users(site)
    with site["lms"].forging(**changes):
        browser, answer = launch(site, Person("mallory", "Mallory"))
    assert answer.status_code in (400, 401), f"a launch with {forgery} got {answer.status_code}: {_message(answer)}"
    assert reason in _message(answer), _message(answer)
    assert users(site) == before and logged_in(site, browser) is None


@pytest.mark.parametrize("login", ["Dee Dee Ramone", "dee@uni.example", "$User.username"])
def test_a_launch_whose_name_is_no_learner_name_is_refused_with_a_clear_message(site, login):
    """A display name, an e-mail (Canvas's login ids often are), or the variable itself, as an LMS sends it when it
    cannot substitute it: none can be a learner name (Kafka user, home folder, Linux account)."""
    before = users(site)
    browser, answer = launch(site, Person(login, "Dee Dee Ramone", "dee@uni.example"))
    made = users(site) - before
    assert answer.status_code in (400, 403), f"the hub let {login!r} in as {made} ({answer.status_code})"
    assert "cannot be a learner name" in _message(answer), _message(answer)
    assert not made and logged_in(site, browser) is None


def test_a_launch_without_the_login_id_is_refused_not_named_after_its_sub(site):
    """The LMS sends no custom field (it was not set up): ltiauthenticator falls back on the opaque `sub`."""
    before = users(site)
    with site["lms"].forging(**{LTI + "custom": {}}):
        browser, answer = launch(site, Person("eve", "Eve"))
    made = users(site) - before
    assert answer.status_code in (400, 403), f"the hub let eve in as {made} ({answer.status_code})"
    assert "cannot be a learner name" in _message(answer) and "'sub'" in _message(answer), _message(answer)
    assert not made and logged_in(site, browser) is None


def _message(answer: requests.Response) -> str:
    """The text of a hub page from its heading on (an error page's status and message), on one line."""
    page = re.sub(r"<script.*?</script>", " ", answer.text, flags=re.DOTALL)
    page = page[page.find("<h1"):] if "<h1" in page else page
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())[:600]
