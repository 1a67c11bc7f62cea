"""Webhook deliveries: a POST to the deployment's webhook when a run ends and when a thread
starts waiting for a person, signed so the receiver can check it came from this server;
``thread.waiting`` bodies carry each approval's decision links when the worker has a
decision link key (``core.decision_links``: signed here, never in the workflow, whose
history must not hold the key).

The signature follows the usual scheme (Stripe, Slack): ``X-Durable-Agui-Signature:
t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the webhook secret>``; a
receiver recomputes it over the raw body and refuses old timestamps. Every attempt of one
delivery carries the same ``Idempotency-Key``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

import httpx
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_agui.core.contract import WebhookDelivery
from durable_agui.core.decision_links import body_links
from durable_agui.core.settings import Settings

DELIVERY_TIMEOUT_S = 10.0
"""Longest one attempt may take (connect, send, the receiver's answer)."""
SIGNATURE_HEADER = "X-Durable-Agui-Signature"


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``X-Durable-Agui-Signature`` value for ``body`` sent at ``timestamp``."""
    signed = f"{timestamp}.".encode() + body
    digest = hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


class WebhookActivities:
    """``deliver_webhook``, bound to the worker's settings (the URL and secret)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    @activity.defn(name="deliver_webhook")
    async def deliver_webhook(self, delivery: WebhookDelivery) -> int:
        """POST ``delivery.body`` (compact JSON) to ``Settings.webhook_url``; the receiver's
        status. Nothing is sent, and 0 returned, when the worker has no webhook configured.

        Raises:
            ApplicationError: ``WebhookFailed`` (retried by the workflow's policy) for a
                connection failure, a timeout or a status other than 2xx.
        """
        url, secret = self._settings.webhook_url, self._settings.webhook_secret
        if url is None or secret is None:
            return 0
        body = json.dumps(self._body(delivery), separators=(",", ":"), ensure_ascii=False).encode()
        headers = {
            "Content-Type": "application/json",
            "Idempotency-Key": delivery.idempotency_key,
            "X-Durable-Agui-Event": delivery.event,
            SIGNATURE_HEADER: signature(secret.get_secret_value(), int(time.time()), body),
        }
        try:
            async with httpx.AsyncClient(timeout=DELIVERY_TIMEOUT_S) as client:
                response = await client.post(url, content=body, headers=headers)
        except httpx.HTTPError as err:
            raise ApplicationError(
                f"webhook delivery failed: {type(err).__name__}", type="WebhookFailed"
            ) from None
        if not response.is_success:
            raise ApplicationError(
                f"webhook receiver answered {response.status_code}", type="WebhookFailed"
            )
        return response.status_code

    def _body(self, delivery: WebhookDelivery) -> dict[str, Any]:
        """The delivery's body; a ``thread.waiting`` one with each approval's decision links
        (``decisionLinks``) when the worker signs them (``Settings.decision_link_key``)."""
        key, base_url = self._settings.decision_link_key, self._settings.public_url
        asks = delivery.event in ("thread.waiting", "approval.escalated")
        if not asks or key is None or base_url is None:
            return delivery.body
        return body_links(key.get_secret_value(), base_url, delivery.body, delivery.idempotency_key)
