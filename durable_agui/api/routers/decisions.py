"""``/decisions/{token}``: an approval decided from a decision link, by a person with no other
credential (``durable_agui.core.decision_links`` has the rule).

``GET`` shows the confirmation page of the link's own decision (a link bound to ``deny``
cannot approve: whoever holds it holds that decision only) and changes nothing (mail
scanners and chat previews open links); ``POST`` (the page's form: ``comment``, optional,
at most ``MAX_COMMENT`` characters) records the link's decision through the same judgement as every other answer
(the ``submit_tool_results`` update, as the thread's owner), with ``decided_by`` naming the
link and its delivery: the thread's history, its Temporal UI details and its messages show
it. A link works once: a second use, an expired, forged or altered link, and a link whose
approval was answered otherwise or closed get a page that says so, and change nothing.
Off (404) unless ``Settings.decision_link_key`` is set. Not in the OpenAPI document: these
are pages for people, not routes for clients.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from durable_agui.api import decision_page
from durable_agui.api.decision_page import refusal
from durable_agui.api.deps import SettingsDep, TemporalDep
from durable_agui.client import submit_tool_results, thread_state
from durable_agui.core.contract import (
    Approver,
    LinkDecision,
    OpenInterrupt,
    ResumeAnswer,
    ThreadState,
    ToolResultsRequest,
)
from durable_agui.core.decision_links import (
    MAX_COMMENT,
    DecisionLink,
    LinkRefused,
    approval_payload,
    read,
)
from durable_agui.core.errors import ErrorType, ThreadRefused
from durable_agui.core.settings import Settings

router = APIRouter(prefix="/decisions", tags=["decisions"], include_in_schema=False)


class PageRefusal(Exception):
    """A request a decision page refuses: the page that says why."""

    def __init__(self, response: HTMLResponse) -> None:
        self.response = response


@router.get("/{token}", response_class=HTMLResponse)
async def show_decision(token: str, settings: SettingsDep, client: TemporalDep) -> HTMLResponse:
    """The confirmation page of the link's approval, or the page that says why not."""
    try:
        _, link = _link(settings, token)
        interrupt = _waiting(await _state(client, link), link)
        _check_shown(interrupt, link)
    except PageRefusal as refused:
        return refused.response
    expires = link.expires_at.strftime("%d %B %Y, %H:%M UTC")
    # The form posts to this very link (relative: it keeps any prefix the API is under).
    return decision_page.confirmation(interrupt, link.decision, token, expires)


@router.post("/{token}", response_class=HTMLResponse)
async def record_decision(
    token: str, request: Request, settings: SettingsDep, client: TemporalDep
) -> HTMLResponse:
    """Record the link's decision (with the form's ``comment``), once."""
    try:
        _, link = _link(settings, token)
        comment = _comment(await request.body())
        interrupt = _waiting(await _state(client, link), link)
        _check_shown(interrupt, link)
        return await _record(client, link, interrupt, comment)
    except PageRefusal as refused:
        return refused.response


async def _record(
    client: TemporalDep, link: DecisionLink, interrupt: OpenInterrupt, comment: str | None
) -> HTMLResponse:
    decided_by = LinkDecision(
        link_id=link.link_id,
        delivery=link.delivery,
        decision=link.decision,
        comment=comment,
        decided_at=datetime.now(UTC),
    )
    # The comment is the payload's too: a denial's reaches the model with the "declined"
    # result, an approval's the tool (invocation_state["approval"]) where the schema allows.
    denied = {"comment": comment} if comment else None
    approved = approval_payload(interrupt.response_schema, comment)
    answer = ResumeAnswer(
        interrupt_id=link.interrupt_id,
        status="resolved" if link.decision == "approve" else "cancelled",
        payload=approved if link.decision == "approve" else denied,
        decided_by=decided_by,
        approver=Approver(channel="link", principal=link.owner, named=link.approver),
    )
    request = ToolResultsRequest(
        run_id=f"link-{uuid.uuid4().hex}", principal=link.owner, resume=[answer]
    )
    try:
        accepted = await submit_tool_results(client, link.thread_id, request)
    except ThreadRefused as refused:
        raise PageRefusal(_thread_refusal(refused)) from None
    if link.interrupt_id not in accepted.accepted:
        # Acknowledged: the same decision was recorded a moment ago (this link, or the same
        # decision's link of another delivery).
        raise PageRefusal(
            refusal(409, "This approval was already decided", "It was decided the same way.")
        )
    if accepted.run_id is not None and await _deleted(client, link):
        # A deletion that came just after the decision: the agent will not go on.
        raise PageRefusal(
            refusal(
                404,
                "This thread is gone",
                "Your decision was recorded, then the conversation was deleted; the agent "
                "will not go on.",
            )
        )
    return decision_page.recorded(link.decision, comment, accepted.run_id)


async def _deleted(client: TemporalDep, link: DecisionLink) -> bool:
    """Whether the link's thread is gone (or going): a read that answers 404."""
    try:
        await thread_state(client, link.thread_id, link.owner)
    except ThreadRefused as refused:
        return refused.status == 404
    return False


def _check_shown(interrupt: OpenInterrupt, link: DecisionLink) -> None:
    """Refuse to approve what the page cannot show: arguments workflow state could not keep
    (``argsOmitted``) get deny links only, and an approve link minted before that rule held
    is refused here."""
    if link.decision == "approve" and interrupt.args_omitted:
        raise PageRefusal(
            refusal(
                409,
                "This approval cannot be approved from a link",
                "Its arguments are too large to show on this page, and nobody approves what "
                "they cannot see: deny it from its deny link, or approve it where the "
                "thread's messages are shown.",
            )
        )


def _link(settings: Settings, token: str) -> tuple[str, DecisionLink]:
    key = settings.decision_link_key
    if key is None:
        raise PageRefusal(
            refusal(404, "Decision links are off", "This server signs no decision links.")
        )
    previous = settings.decision_link_previous_keys(datetime.now(UTC))
    try:
        return key.get_secret_value(), read(key.get_secret_value(), token, previous)
    except LinkRefused as refused:
        if refused.expired:
            raise PageRefusal(
                refusal(410, "This link has expired", "The time to decide has passed.")
            ) from None
        raise PageRefusal(
            refusal(
                400,
                "This link is not valid",
                "It was changed or cut short, it is not a decision link of this server, or "
                "the server's link key was replaced since it was sent. Open the newest "
                "message about this approval, or decide it in the app that asked you.",
            )
        ) from None


async def _state(client: TemporalDep, link: DecisionLink) -> ThreadState:
    try:
        return await thread_state(client, link.thread_id, link.owner)
    except ThreadRefused as refused:
        raise PageRefusal(_thread_refusal(refused)) from None


def _waiting(state: ThreadState, link: DecisionLink) -> OpenInterrupt:
    """The link's approval, still waiting; else the page that says what became of it."""
    decided = state.decisions.get(link.tool_call_id)
    if decided is not None and decided.link_id == link.link_id:
        raise PageRefusal(_used())
    for interrupt in state.interrupts:
        if interrupt.interrupt_id == link.interrupt_id and interrupt.resolution is None:
            return interrupt
    raise PageRefusal(
        refusal(
            409,
            "This approval is no longer waiting",
            "It was already answered (here or elsewhere), or it expired or was cancelled.",
        )
    )


def _used() -> HTMLResponse:
    return refusal(409, "This link was already used", "Its decision is recorded.")


def _thread_refusal(refused: ThreadRefused) -> HTMLResponse:
    if refused.status == 404:
        return refusal(404, "This thread is gone", "The conversation was deleted or expired.")
    if refused.type == ErrorType.APPROVER_NOT_ALLOWED:
        return refusal(
            403,
            "This decision is not yours to make now",
            "The approval's policy asks someone else at this step.",
        )
    if refused.status in (429, 503):
        return refusal(
            refused.status, "Try again in a moment", "The thread cannot take the decision now."
        )
    return refusal(
        409,
        "This approval is no longer waiting",
        f"It was already answered, or it closed ({refused.type}).",
    )


def _comment(body: bytes) -> str | None:
    """The form's ``comment``: ``None`` when absent or blank.

    Raises:
        PageRefusal: 422, a body that is not a form of UTF-8 text or a comment over
            ``MAX_COMMENT`` characters.
    """
    try:
        fields = parse_qs(
            body.decode(), keep_blank_values=True, strict_parsing=bool(body), max_num_fields=4
        )
    except (UnicodeDecodeError, ValueError):
        raise PageRefusal(
            refusal(422, "This form could not be read", "Send it from the link's page.")
        ) from None
    # A browser sends a textarea's line breaks as CRLF; its maxlength counts them once.
    comment = (fields.get("comment") or [""])[0].replace("\r\n", "\n").strip()
    if len(comment) > MAX_COMMENT:
        raise PageRefusal(
            refusal(
                422,
                "This comment is too long",
                f"Keep it to {MAX_COMMENT} characters; nothing was recorded.",
            )
        )
    return comment or None
