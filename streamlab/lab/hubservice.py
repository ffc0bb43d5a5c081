"""A learner's server asking one of its workshop hub's services: the partitions service (topics.add_partitions) and
the checks service (the grader's Check my work on a hub), both workshop/services.py's.

Why one place: each is asked the same way, a POST of JSON with the server's $JUPYTERHUB_API_TOKEN to 127.0.0.1
(never through an http_proxy), and answers JSON, or a refusal whose one line the service wrote for the learner;
each caller only words what it asked for around that line.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request

from streamlab.settings import settings


class Refused(Exception):
    """The service answered, and refused: its one line (or the HTTP status when it gave none)."""


class Unanswered(Exception):
    """Nothing answered at the service's address, or the answer was not JSON."""


def ask(url: str, body: dict, timeout: float) -> dict:
    """POST `body` to the hub service at `url` with this server's token; its JSON answer, or Refused / Unanswered."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "Content-Type": "application/json", "Authorization": f"token {settings.hub_api_token}"})
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=timeout) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as exc:
        try:
            reason = json.load(exc)["error"]
        except (ValueError, KeyError, TypeError):
            reason = f"HTTP {exc.code}"
        raise Refused(reason) from None
    except OSError as exc:
        raise Unanswered(str(getattr(exc, "reason", exc))) from None
    except ValueError:
        raise Unanswered(f"the answer of {url} is not JSON") from None
