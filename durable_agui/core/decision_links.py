"""Decision links: a waiting approval decided from a link in an e-mail or a chat message,
with no credential but the link itself.

The rule (ours, docs "Decision links"): a link is a JSON Web Token (RFC 7519, HS256 under
``Settings.decision_link_key``) in the URL ``<public_url>/decisions/<token>``, bound to the
thread (its id and owner: thread ids are per principal), the approval (interrupt id and the
call's wire id), the decision (``approve`` or ``deny``) and the delivery that carried it
(the webhook delivery's ``Idempotency-Key``, or ``thread-view`` for ``GET /threads/{id}``),
expiring with the approval (``exp`` = its ``expiresAt``). A token altered in any claim, or
signed with another key, does not verify. An ``approve`` link exists only where the
approval's ``responseSchema`` accepts the fixed answer ``{}`` (the person picks nothing on
the page) and its arguments are shown (a call whose arguments workflow state could not keep,
``argsOmitted``, is never approved unseen); a ``deny`` link always does. A key being replaced
keeps verifying the links it signed until the moment the operator sets
(``decision_link_previous_key_until``). Each link records its own decision only: its page
offers no other. A person's comment is the payload's ``comment`` (a denial's always, an
approval's where the schema accepts it). A link works once: the thread judges its decision
as every other answer, and remembers which link decided (``LinkDecision.link_id``).

Pure: no I/O; PyJWT signs and verifies, ``jsonschema`` judges the fixed answer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

import jsonschema
import jwt

Decision = Literal["approve", "deny"]
"""What a link records: ``approve`` (resume status ``resolved``, payload ``{}``) or ``deny``
(``cancelled``)."""

DECISIONS: tuple[Decision, ...] = ("approve", "deny")

THREAD_VIEW_DELIVERY = "thread-view"
"""The ``delivery`` of links shown by ``GET /threads/{threadId}`` (not sent by a webhook)."""

FIXED_ANSWER: dict[str, Any] = {}
"""The payload an ``approve`` link records: the person picks nothing on the page."""

MAX_COMMENT = 1000
"""Longest comment a person may add on the page (characters)."""

MIN_KEY_BYTES = 32
"""Shortest ``decision_link_key`` (UTF-8 bytes): RFC 7518 3.2 asks an HS256 key of at least
the hash's size."""

_AUDIENCE = "durable-agui:decision-link"
_ALGORITHM = "HS256"


class LinkRefused(Exception):
    """A token that is no decision link of this deployment; ``expired``: it was one, and its
    approval's deadline has passed."""

    def __init__(self, message: str, *, expired: bool = False) -> None:
        super().__init__(message)
        self.expired = expired


@dataclass(frozen=True)
class DecisionLink:
    """What a link is bound to (its claims)."""

    thread_id: str
    owner: str
    interrupt_id: str
    tool_call_id: str
    decision: Decision
    delivery: str
    expires_at: datetime
    approver: str | None = None
    """The identity the link was made for (an approval whose policy names approvers: one
    link per approver, and the decision is theirs); ``None``: whoever holds it."""

    @property
    def link_id(self) -> str:
        """The link's id (16 hex digits): the same for every attempt of one delivery, so a
        retried webhook carries the same link."""
        bound = "\n".join([self.delivery, self.owner, self.thread_id, self.interrupt_id])
        made_for = "" if self.approver is None else f"\n{self.approver}"
        return hashlib.sha256(f"{bound}\n{self.decision}{made_for}".encode()).hexdigest()[:16]

    def sibling(self, decision: Decision) -> DecisionLink:
        """The link of the other decision, from the same delivery."""
        return DecisionLink(**{**self.__dict__, "decision": decision})


def sign(key: str, link: DecisionLink) -> str:
    """The token of ``link`` under ``key``."""
    claims = {
        "aud": _AUDIENCE,
        "jti": link.link_id,
        "thr": link.thread_id,
        "own": link.owner,
        "int": link.interrupt_id,
        "call": link.tool_call_id,
        "dec": link.decision,
        "dlv": link.delivery,
        "exp": int(link.expires_at.timestamp()),
        **({"apr": link.approver} if link.approver is not None else {}),
    }
    return jwt.encode(claims, key, algorithm=_ALGORITHM)


def read(key: str, token: str, previous: tuple[str, ...] = ()) -> DecisionLink:
    """The link ``token`` is, signed with ``key`` or one of the ``previous`` keys (those
    still verifying: a key being replaced).

    Raises:
        LinkRefused: not signed with any of them, altered, not a decision link, or
            (``expired``) past its ``exp``.
    """
    for attempt in (key, *previous):
        try:
            claims = jwt.decode(
                token,
                attempt,
                algorithms=[_ALGORITHM],
                audience=_AUDIENCE,
                options={"require": ["exp", "jti", "aud"]},
            )
            break
        except jwt.InvalidSignatureError:
            continue
        except jwt.ExpiredSignatureError:
            raise LinkRefused("this link has expired", expired=True) from None
        except jwt.PyJWTError:
            raise LinkRefused("this is not a valid decision link") from None
    else:
        raise LinkRefused("this is not a valid decision link")
    try:
        link = DecisionLink(
            thread_id=str(claims["thr"]),
            owner=str(claims["own"]),
            interrupt_id=str(claims["int"]),
            tool_call_id=str(claims["call"]),
            decision=_decision(claims["dec"]),
            delivery=str(claims["dlv"]),
            expires_at=datetime.fromtimestamp(int(claims["exp"]), UTC),
            approver=str(claims["apr"]) if "apr" in claims else None,
        )
    except (KeyError, ValueError, TypeError):
        raise LinkRefused("this is not a valid decision link") from None
    if link.link_id != claims["jti"]:
        raise LinkRefused("this is not a valid decision link")
    return link


def _decision(value: object) -> Decision:
    for decision in DECISIONS:
        if value == decision:
            return decision
    raise ValueError(value)


def offered(
    response_schema: dict[str, Any] | None, args_shown: bool = True
) -> tuple[Decision, ...]:
    """The decisions an approval gets links for: ``deny`` always, ``approve`` where its
    arguments are shown (``args_shown``) and ``response_schema`` accepts ``FIXED_ANSWER`` (a
    schema that is not valid JSON Schema accepts nothing)."""
    approvable = args_shown and _accepts(response_schema, FIXED_ANSWER)
    return DECISIONS if approvable else ("deny",)


def approval_payload(response_schema: dict[str, Any] | None, comment: str | None) -> Any:
    """What an ``approve`` link records as the resume payload (what the approved tool reads
    as ``invocation_state["approval"]``): ``{"comment": comment}`` when there is a comment
    and ``response_schema`` accepts it, else ``FIXED_ANSWER`` (the comment is then in the
    audit only)."""
    if comment and _accepts(response_schema, {"comment": comment}):
        return {"comment": comment}
    return dict(FIXED_ANSWER)


def _accepts(response_schema: dict[str, Any] | None, payload: Any) -> bool:
    """Whether ``response_schema`` accepts ``payload``; a schema that cannot be evaluated
    (not JSON Schema, a ``$ref`` to nowhere, a reference cycle) accepts nothing."""
    if response_schema is None:
        return True
    try:
        jsonschema.validate(payload, response_schema)
    except jsonschema.ValidationError:
        return False
    except Exception:
        # SchemaError, referencing errors, RecursionError...: the author's schema, not the
        # person's answer, is at fault; offer no fixed answer.
        return False
    return True


def links(
    key: str,
    base_url: str,
    approval: DecisionLink,
    schema: dict[str, Any] | None,
    args_shown: bool = True,
) -> dict[str, str]:
    """The decision links of one approval, by decision (``{"approve": url, "deny": url}``,
    as ``offered`` by its ``responseSchema`` ``schema`` and ``args_shown``). ``approval``:
    the links' claims (its ``decision`` is replaced); ``base_url``: where people reach the
    API (``Settings.public_url``, with the prefix it is mounted at)."""
    root = base_url.rstrip("/")
    return {
        decision: f"{root}/decisions/{sign(key, approval.sibling(decision))}"
        for decision in offered(schema, args_shown)
    }


def body_links(key: str, base_url: str, body: dict[str, Any], delivery: str) -> dict[str, Any]:
    """A ``thread.waiting`` or ``approval.escalated`` webhook body with ``decisionLinks``
    added to each interrupt, for delivery ``delivery`` (its ``Idempotency-Key``); an
    interrupt whose policy asks named approvers now (``approvals.askedNow``) gets
    ``decisionLinksByApprover`` instead: one pair per approver, each made for them.
    ``body``: as ``workflows.thread.notifications`` builds it (``threadId``, ``owner``,
    ``interrupts`` with ``id``, ``toolCallId``, ``responseSchema``, ``argsOmitted`` and
    ``expiresAt`` as ISO 8601 text)."""
    interrupts = []
    for interrupt in body.get("interrupts", []):
        link = DecisionLink(
            thread_id=body["threadId"],
            owner=body["owner"],
            interrupt_id=interrupt["id"],
            tool_call_id=interrupt["toolCallId"],
            decision="deny",
            delivery=delivery,
            expires_at=datetime.fromisoformat(interrupt["expiresAt"]),
        )
        schema, shown = interrupt.get("responseSchema"), not interrupt.get("argsOmitted", False)
        asked = (interrupt.get("approvals") or {}).get("askedNow") or []
        if asked:
            interrupt = {
                **interrupt,
                "decisionLinksByApprover": {
                    approver: links(key, base_url, replace(link, approver=approver), schema, shown)
                    for approver in asked
                },
            }
        else:
            interrupt = {**interrupt, "decisionLinks": links(key, base_url, link, schema, shown)}
        interrupts.append(interrupt)
    return {**body, "interrupts": interrupts}
