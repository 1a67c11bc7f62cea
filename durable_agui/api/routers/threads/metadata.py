"""``PATCH /threads/{threadId}``: a thread's title and tags."""

from __future__ import annotations

from durable_agui.api.auth import PrincipalDep
from durable_agui.api.deps import TemporalDep, ThreadIdDep
from durable_agui.api.errors import NO_THREAD, error_responses
from durable_agui.api.models import ThreadMetadataPatch
from durable_agui.api.routers.threads.base import threads_router
from durable_agui.client import set_metadata, thread_state
from durable_agui.core.contract import ThreadMetadata

router = threads_router()


@router.patch(
    "/{threadId}",
    response_model=ThreadMetadata,
    responses=error_responses({**NO_THREAD, 422: "A title or tags that do not fit."}),
)
async def patch_thread(
    thread_id: ThreadIdDep,
    body: ThreadMetadataPatch,
    client: TemporalDep,
    principal: PrincipalDep,
) -> ThreadMetadata:
    """Change the thread's title or tags (a JSON merge patch, RFC 7396: ``{"title": ...}``
    keeps the tags, ``{"tags": [...]}`` keeps the title, ``"title": null`` removes it; other
    fields are 422); title at most 200 characters, at most 20 tags of 1-50 characters.
    Answers the thread's metadata now. ``GET /threads`` finds threads by them (``tag``,
    ``q``); runs may set them too (``forwardedProps.threadMetadata``). PATCHes sent at the
    same moment are not merged with each other: the last one written wins whole."""
    current = (await thread_state(client, thread_id, principal)).metadata or ThreadMetadata()
    merged = current.model_copy(update=body.model_dump(exclude_unset=True))
    return await set_metadata(client, thread_id, principal, merged)
