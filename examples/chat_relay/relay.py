"""A relay from durable-agui's webhook to a chat channel: each approval a thread waits on is
posted with its decision links, so the person who decides answers from the chat with one
click (docs/guides/decision-links.md).

durable-agui POSTs ``thread.waiting`` here (``DURABLE_AGUI_WEBHOOK_URL``); this checks the
signature and posts ``{"text": ...}`` to ``CHAT_WEBHOOK_URL``, the body Slack's incoming
webhooks take (Mattermost, Rocket.Chat and Google Chat take it too). Run it beside the
server, with the same webhook secret:

    WEBHOOK_SECRET=whsec-… CHAT_WEBHOOK_URL=https://hooks.slack.com/services/… \\
        uvicorn relay:app --port 9000

A chat that cannot be reached answers 502, so durable-agui retries the delivery; a retry of
a delivery already posted (the same ``Idempotency-Key``) is not posted twice.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from typing import Any

import httpx
from fastapi import FastAPI, HTTPException, Request, Response

app = FastAPI(title="durable-agui chat relay")
posted: set[str] = set()
"""Idempotency keys already posted (this process's; a store of yours would outlive it)."""


def signed_by_durable_agui(secret: bytes, signature: str, raw_body: bytes) -> bool:
    """The ``X-Durable-Agui-Signature`` check (docs/guides/webhooks.md): the HMAC-SHA256 of
    ``<t>.<raw body>`` under the secret, and ``t`` within five minutes."""
    try:
        fields = dict(part.split("=", 1) for part in signature.split(","))
        signed = f"{fields['t']}.".encode() + raw_body
        fresh = abs(time.time() - int(fields["t"])) < 300
    except (KeyError, ValueError):
        return False
    expected = hmac.new(secret, signed, hashlib.sha256).hexdigest()
    return fresh and hmac.compare_digest(expected, fields.get("v1", ""))


# --8<-- [start:chat_text]
def chat_text(body: dict[str, Any]) -> str:
    """One chat message for a ``thread.waiting`` body: each approval, its arguments and its
    links (Slack's ``<url|label>`` link syntax)."""
    lines = [f"Thread `{body['threadId']}` waits for a decision:"]
    for approval in body["interrupts"]:
        links = approval.get("decisionLinks") or {}
        choices = " · ".join(f"<{url}|{decision.title()}>" for decision, url in links.items())
        args = json.dumps(approval["args"], ensure_ascii=False)
        lines.append(f"• {approval['message']} `{approval['toolName']}` {args} {choices}")
    return "\n".join(lines)


# --8<-- [end:chat_text]


@app.post("/hooks", status_code=204)
async def relay(request: Request) -> Response:
    raw = await request.body()
    secret = os.environ["WEBHOOK_SECRET"].encode()
    if not signed_by_durable_agui(secret, request.headers.get("x-durable-agui-signature", ""), raw):
        raise HTTPException(401, "not signed by durable-agui")
    body = json.loads(raw)
    key = request.headers.get("idempotency-key", "")
    if body["type"] != "thread.waiting" or not body["interrupts"] or key in posted:
        return Response(status_code=204)
    async with httpx.AsyncClient(timeout=10) as chat:
        try:
            answer = await chat.post(os.environ["CHAT_WEBHOOK_URL"], json={"text": chat_text(body)})
        except httpx.HTTPError:
            raise HTTPException(502, "the chat cannot be reached") from None
    if not answer.is_success:
        raise HTTPException(502, f"the chat answered {answer.status_code}")
    posted.add(key)
    return Response(status_code=204)
