"""The pages a decision link shows a person: the confirmation (what is asked, the arguments,
approve / deny, an optional comment), what was recorded, and every refusal, each in plain
words and with the status a browser and a test can read.

The pages carry a token in their URL, so they ask browsers to send it to no other site
(``Referrer-Policy: same-origin``; with ``no-referrer`` Chromium posts the form with
``Origin: null``, which the loopback-only mode refuses), to store nothing and to show them
in no frame (a framed page could be clicked through by another site); they load nothing
and run no script (``Content-Security-Policy``). Every text shown is
escaped: the arguments and the question are the model's and the agent author's words.
"""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any

from fastapi.responses import HTMLResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from durable_agui.core.contract import OpenInterrupt
from durable_agui.core.decision_links import MAX_COMMENT, Decision

HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "form-action 'self'; frame-ancestors 'none'",
}

_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;"
    "line-height:1.5}pre{background:#f4f4f4;padding:.75rem;overflow:auto}"
    "textarea{width:100%;min-height:4rem}button{font-size:1rem;padding:.5rem 1.25rem;"
    "margin:.5rem .5rem 0 0}.approve{background:#1a7f37;color:#fff}"
    ".deny{background:#cf222e;color:#fff}"
)

LABELS: dict[Decision, str] = {"approve": "Approve", "deny": "Deny"}


def page(status: int, title: str, body: str) -> HTMLResponse:
    """A whole page: ``title`` (plain text) as its heading, ``body`` (HTML, escaped by the
    caller) under it."""
    html = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>{escape(title)}</h1>{body}</body></html>"
    )
    return HTMLResponse(html, status_code=status, headers=HEADERS)


def refusal(status: int, title: str, why: str) -> HTMLResponse:
    """A page that changes nothing and says why."""
    return page(status, title, f'<p id="why">{escape(why)}</p><p>Nothing was changed.</p>')


def confirmation(
    interrupt: OpenInterrupt, decision: Decision, action: str, expires: str
) -> HTMLResponse:
    """The confirmation page of an open approval, for a link bound to ``decision``: the
    question, the tool and its arguments, a comment box and the decision's button, whose
    form posts to ``action`` (the link, relative to the page). ``GET`` shows it; only the
    button's ``POST`` records (mail scanners open links)."""
    other = "deny" if decision == "approve" else "approve"
    body = (
        f'<p id="question">{escape(interrupt.message)}</p>'
        f"<p>Tool <code>{escape(interrupt.tool_name)}</code>, arguments:</p>"
        f'<pre id="arguments">{escape(_arguments(interrupt))}</pre>'
        f'<form method="post" action="{escape(action)}">'
        f'<label>Comment (optional)<br><textarea name="comment" maxlength="{MAX_COMMENT}">'
        f'</textarea></label><br><button class="{decision}" type="submit">'
        f"{LABELS[decision]}</button></form>"
        f"<p>This link records this decision only, once, until {escape(expires)}. "
        f"To {other} instead, use the {other} link that came with this one, if you were "
        "sent one.</p>"
    )
    return page(200, f"{LABELS[decision]}: {interrupt.tool_name}?", body)


def recorded(decision: Decision, comment: str | None, run_id: str | None) -> HTMLResponse:
    """What a ``POST`` recorded; ``run_id``: the run it started (``data-run-id``, for a
    test to follow), ``None`` while other answers of the batch still wait."""
    said = f"<p>Your comment: <q>{escape(comment)}</q></p>" if comment else ""
    done = "approved" if decision == "approve" else "denied"
    goes_on = (
        f'<p id="recorded" data-run-id="{escape(run_id)}">You {done} it. The agent goes on '
        "without you; you may close this page.</p>"
        if run_id
        else f'<p id="recorded">You {done} it. The thread still waits for other answers '
        "before it goes on; you may close this page.</p>"
    )
    return page(200, f"Recorded: {done}", goes_on + said)


DECISION_PATH = re.compile(r"/decisions(/.*)?\Z")
"""A decision link's path (``api.routers.decisions``), under any prefix, whatever its token
(``is_decision_link``: not a thread's audit, ``/threads/{id}/decisions``)."""
THREAD_AUDIT_PATH = re.compile(r"/threads/[^/]+/decisions\Z")


def is_decision_link(path: str) -> bool:
    """Whether ``path`` is a decision link's (its errors are pages), not the JSON API's."""
    return DECISION_PATH.search(path) is not None and THREAD_AUDIT_PATH.search(path) is None


_TITLES = {
    400: "This link is not valid",
    404: "This page does not exist",
    405: "This link cannot be used this way",
    413: "This form is too large",
    415: "This form could not be read",
    422: "This form could not be read",
    429: "Try again in a moment",
    503: "Try again in a moment",
}


class DecisionErrorPages:
    """ASGI middleware: on a decision link's path, an error the API would answer in JSON
    (a body, host or origin check, a method not allowed, any refusal before the route) is
    answered as a page for people with the same status, the message in plain words: the
    person holding the link reads it in a browser."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_decision_link(scope["path"]):
            await self.app(scope, receive, send)
            return
        held: list[Message] = []

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start" and _is_json_error(message):
                held.append(message)
                return
            if not held:
                await send(message)
                return
            held.append(message)
            if not message.get("more_body", False):
                await _as_page(held)(scope, receive, send)

        await self.app(scope, receive, sending)


def _is_json_error(start: Message) -> bool:
    headers = dict(start.get("headers", []))
    content_type = headers.get(b"content-type", b"")
    return int(start["status"]) >= 400 and content_type.startswith(b"application/json")


def _as_page(held: list[Message]) -> HTMLResponse:
    """The page for an error response held whole (its start, then its body messages)."""
    status = int(held[0]["status"])
    body = b"".join(m.get("body", b"") for m in held[1:])
    try:
        message = str(json.loads(body)["detail"]["message"])
    except (ValueError, KeyError, TypeError):
        message = "The request could not be taken."
    return refusal(status, _TITLES.get(status, "This link cannot be used now"), message)


def _arguments(interrupt: OpenInterrupt) -> str:
    if interrupt.args_omitted:
        return (
            "(too large to show here, so this approval can only be denied from a link: "
            "approve it where the thread's messages are shown)"
        )
    args: dict[str, Any] = interrupt.args
    shown = json.dumps(args, indent=2, ensure_ascii=False)
    # Text direction controls would let arguments the model wrote read as something else.
    return BIDI_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", shown)


BIDI_CONTROLS = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069]")
