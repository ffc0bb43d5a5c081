"""A tiny LTI 1.3 platform: the LMS's side of a launch (IMS Security Framework 1.0, 5.1.1), for the workshop's tests.

It holds an RSA key and serves its public JWK set on 127.0.0.1, knows its learners (login id, display name, an
opaque `sub`, roles), starts a launch the way an LMS does (the third-party-initiated login request it sends the
learner's browser to the tool's OIDC login URL, step 1), and answers the tool's authentication request at its
authorize URL (step 2): it refuses a request whose client_id, redirect_uri, login_hint, lti_message_hint, nonce,
state or OIDC parameters are not what an LMS expects, and otherwise answers with the page that makes the browser
form-POST a signed id_token with the state to the tool's redirect URI (step 3). The id_token carries LTI 1.3's
required claims for an LtiResourceLinkRequest and the tool's custom fields, with `$User.username`-style variables
substituted as LMSs do (an unknown variable is sent as it is, as Canvas does).
"""
from __future__ import annotations

import html
import json
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self
from urllib.parse import parse_qsl, urlparse

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
LEARNER = ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner",
           "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Student"]
INSTRUCTOR = ["http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"]


def new_key() -> rsa.RSAPrivateKey:
    """A fresh 2048-bit RSA signing key."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class Person:
    """Somebody in the LMS: their login id (`$User.username`), display name, e-mail, opaque `sub` and roles."""

    username: str
    name: str
    email: str = ""
    roles: list = field(default_factory=lambda: list(LEARNER))
    sub: str = field(default_factory=lambda: str(uuid.uuid4()))

    def variables(self) -> dict:
        """The LTI substitution variables an LMS fills in custom fields with."""
        return {"$User.username": self.username, "$User.id": self.sub, "$Person.name.full": self.name,
                "$Person.email.primary": self.email}


class Platform:
    """The LMS: its issuer, the tool's registration (client id, deployment, redirect URIs, custom fields), its key."""

    def __init__(self, client_id: str, redirect_uris: list[str], custom: dict | None = None,
                 issuer: str = "https://lms.example.edu", deployment_id: str = "1:streamlab"):
        self.client_id, self.redirect_uris, self.custom = client_id, list(redirect_uris), dict(custom or {})
        self.issuer, self.deployment_id = issuer, deployment_id
        self.key, self.kid = new_key(), uuid.uuid4().hex
        self.refused: list[str] = []  # why the authorize URL refused a request, one line each
        self._launches: dict[str, tuple[Person, str, str]] = {}  # login_hint -> person, message hint, target link
        self._forgery: dict = {}
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="lti-platform", daemon=True)

    @property
    def authorize_url(self) -> str:
        """Where the tool sends the learner's browser with its authentication request (step 2)."""
        return f"{self.url}/api/lti/authorize_redirect"

    @property
    def jwks_endpoint(self) -> str:
        """The platform's public key set, which the tool checks id_tokens with."""
        return f"{self.url}/api/lti/security/jwks"

    def jwks(self) -> dict:
        """The public JWK set: only the platform's own key."""
        jwk = jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return {"keys": [{**jwk, "kid": self.kid, "alg": "RS256", "use": "sig"}]}

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def initiate(self, person: Person, target_link_uri: str) -> dict:
        """Start a launch for `person`: the parameters of the login initiation request (step 1) the LMS makes the
        browser send to the tool's OIDC login URL."""
        login_hint, message_hint = uuid.uuid4().hex, uuid.uuid4().hex
        self._launches[login_hint] = (person, message_hint, target_link_uri)
        return {"iss": self.issuer, "login_hint": login_hint, "target_link_uri": target_link_uri,
                "lti_message_hint": message_hint, "client_id": self.client_id,
                "lti_deployment_id": self.deployment_id}

    @contextmanager
    def forging(self, key: rsa.RSAPrivateKey | None = None, kid: str | None = None, **claims):
        """Meanwhile, sign id_tokens with `key` (header `kid`, the platform's own unless given) and/or replace
        some of their claims: what a forger, or another platform, would send."""
        self._forgery = {"key": key, "kid": kid, "claims": claims}
        try:
            yield self
        finally:
            self._forgery = {}

    def authorize(self, args: dict) -> tuple[int, str]:
        """The authorize URL's answer to the tool's authentication request: (status, HTML page)."""
        expected = {"response_type": "id_token", "scope": "openid", "response_mode": "form_post", "prompt": "none",
                    "client_id": self.client_id}
        wrong = [f"{k}={args.get(k)!r} (expected {v!r})" for k, v in expected.items() if args.get(k) != v]
        if args.get("redirect_uri") not in self.redirect_uris:
            wrong.append(f"redirect_uri {args.get('redirect_uri')!r} is not registered ({self.redirect_uris})")
        launch = self._launches.pop(args.get("login_hint", ""), None)
        if launch is None:
            wrong.append(f"login_hint {args.get('login_hint')!r} was not issued by this platform (or was used)")
        elif args.get("lti_message_hint") != launch[1]:
            wrong.append("lti_message_hint was not passed back unaltered")
        wrong += [f"{k} is missing" for k in ("nonce", "state") if not args.get(k)]
        if wrong:
            self.refused.append("; ".join(wrong))
            return 400, f"<p>refused: {html.escape('; '.join(wrong))}</p>"
        person, _, target = launch
        fields = {"id_token": self.id_token(person, args["nonce"], target), "state": args["state"]}
        inputs = "".join(f'<input type="hidden" name="{k}" value="{html.escape(v)}">' for k, v in fields.items())
        return 200, (f'<form id="launch" method="post" action="{html.escape(args["redirect_uri"])}">{inputs}'
                     '</form><script>document.getElementById("launch").submit()</script>')

    def id_token(self, person: Person, nonce: str, target_link_uri: str) -> str:
        """The signed id_token of `person`'s launch (an LtiResourceLinkRequest)."""
        now = int(time.time())
        variables = person.variables()
        claims = {
            "iss": self.issuer, "aud": self.client_id, "azp": self.client_id, "sub": person.sub, "nonce": nonce,
            "iat": now, "exp": now + 300, "name": person.name, "email": person.email,
            LTI + "message_type": "LtiResourceLinkRequest", LTI + "version": "1.3.0",
            LTI + "deployment_id": self.deployment_id, LTI + "target_link_uri": target_link_uri,
            LTI + "resource_link": {"id": "rl-streaming-101", "title": "Spark Structured Streaming with Kafka"},
            LTI + "context": {"id": "course-42", "label": "STREAM101", "title": "Streaming with Kafka",
                              "type": ["http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering"]},
            LTI + "roles": person.roles,
            LTI + "lis": {"person_sourcedid": person.username, "course_offering_sourcedid": "STREAM101-2026"},
            LTI + "custom": {k: variables.get(v, v) for k, v in self.custom.items()},
        }
        claims.update(self._forgery.get("claims", {}))
        key = self._forgery.get("key") or self.key
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": self._forgery.get("kid") or self.kid})


def _handler(platform: Platform):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            url = urlparse(self.path)
            if url.path == urlparse(platform.jwks_endpoint).path:
                self._send(200, json.dumps(platform.jwks()), "application/json")
            elif url.path == urlparse(platform.authorize_url).path:
                self._send(*platform.authorize(dict(parse_qsl(url.query))), "text/html")
            else:
                self._send(404, "not found", "text/plain")

        def do_POST(self):  # the authentication request may come as a form post too
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            if urlparse(self.path).path == urlparse(platform.authorize_url).path:
                self._send(*platform.authorize(dict(parse_qsl(body))), "text/html")
            else:
                self._send(404, "not found", "text/plain")

        def _send(self, status, text, kind):
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", f"{kind}; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args):
            pass

    return Handler


class _Form(HTMLParser):
    def __init__(self):
        super().__init__()
        self.action, self.method, self.fields = None, None, {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form" and self.action is None:
            self.action, self.method = attrs.get("action"), (attrs.get("method") or "get").lower()
        elif tag == "input" and attrs.get("name"):
            self.fields[attrs["name"]] = attrs.get("value") or ""


def auto_submitted(page: str) -> tuple[str, str, dict]:
    """What a browser sends when the page's script submits its form: (method, action, fields)."""
    form = _Form()
    form.feed(page)
    if form.action is None:
        raise AssertionError(f"the page has no form to submit: {page[:300]}")
    return form.method, form.action, form.fields
