"""Who sends a decision, as the API knows them: the principal, and the JWT claims an
approval policy may compare approvers by (``DURABLE_AGUI_APPROVER_CLAIMS``, default
``email``), stamped on every resume entry the API builds (``ResumeAnswer.approver``), never
read from the body. The thread compares them with its policies
(``durable_agui.workflows.approval``)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from durable_agui.api.auth import PrincipalDep
from durable_agui.api.context import request_context
from durable_agui.core.contract import Approver, Channel, ResumeAnswer

MAX_CLAIM = 200
"""Characters of a claim's value passed on (a policy's identities are at most as long)."""


def current_claims(request: Request, principal: PrincipalDep) -> dict[str, str]:
    """The caller's claims a policy may compare: each of ``approver_claims`` the verified
    JWT carries as a string (none with API keys or without authentication)."""
    del principal  # verified first: the claims are those of the token it read
    claims: dict[str, Any] = getattr(request.state, "jwt_claims", None) or {}
    wanted = request_context(request).settings.approver_claims
    return {
        name: claims[name]
        for name in wanted
        if isinstance(claims.get(name), str) and 0 < len(claims[name]) <= MAX_CLAIM
    }


ClaimsDep = Annotated[dict[str, str], Depends(current_claims)]


def stamped(
    resume: list[ResumeAnswer],
    channel: Channel,
    principal: str,
    claims: dict[str, str],
    *,
    is_owner: bool,
) -> list[ResumeAnswer]:
    """``resume`` with its sender on every entry (``is_owner``: the caller addresses a thread
    of its own: the thread's id space is its principal's)."""
    approver = Approver(channel=channel, principal=principal, claims=claims, is_owner=is_owner)
    return [answer.model_copy(update={"approver": approver}) for answer in resume]
