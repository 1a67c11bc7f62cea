"""Large Temporal payloads are stored beside the sessions and histories hold references
(``durable_agui/sessions/payloads.py``): on every store, a payload comes back as stored or
not at all; through real processes, runs of 400 KB messages keep the thread's history small
and its workflow run whole, and a fresh worker replays it from the store."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import cast

import httpx
import pytest
from temporalio.api.common.v1 import Payload
from temporalio.api.sdk.v1.external_storage_pb2 import ExternalStorageReference
from temporalio.client import Client
from temporalio.converter import StorageDriverClaim, StorageDriverRetrieveContext
from temporalio.converter import StorageDriverStoreContext as StoreContext

from durable_agui.core.contract import workflow_id_for
from durable_agui.core.settings import Settings
from durable_agui.sessions import session_store
from durable_agui.sessions.payloads import (
    DRIVER_NAME,
    UNRETRIEVABLE,
    SessionStorePayloads,
)
from durable_agui.sessions.store import PAYLOADS
from tests.stack import Cluster, StoreKind, store_env, store_of
from tests.support import post_run, run_input, send_raw_signal


@pytest.fixture(params=["file", "postgres", "s3"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    env = store_env(request, request.param)
    store_of(env, tmp_path).prepare()
    return Settings(
        data_dir=tmp_path,
        session_store=cast(StoreKind, env.get("DURABLE_AGUI_SESSION_STORE", "file")),
        postgres_url=env.get("DURABLE_AGUI_POSTGRES_URL"),
        s3_bucket=env.get("DURABLE_AGUI_S3_BUCKET"),
        s3_endpoint_url=env.get("DURABLE_AGUI_S3_ENDPOINT_URL"),
    )


async def test_a_stored_payload_comes_back_as_stored_or_not_at_all(settings: Settings) -> None:
    """Stored twice, it is there once and reads back whole; a payload under another's
    SHA-256 (changed in the store) and a missing one read as ``UNRETRIEVABLE``, never as
    the payload stored."""
    driver = SessionStorePayloads(settings)
    payload = Payload(metadata={"encoding": b"json/plain"}, data=b'"' + b"x" * 50_000 + b'"')
    first = await driver.store(StoreContext(), [payload])
    again = await driver.store(StoreContext(), [payload])
    assert first == again
    assert await driver.retrieve(StorageDriverRetrieveContext(), first) == [payload]
    forged = hashlib.sha256(b"what the history stored").hexdigest()
    session_store(settings).put_payload(forged, payload.SerializeToString())
    for claim in (forged, "0" * 64, "../../etc/passwd"):
        (read,) = await driver.retrieve(
            StorageDriverRetrieveContext(), [StorageDriverClaim(claim_data={"sha256": claim})]
        )
        assert read == Payload(metadata={"encoding": UNRETRIEVABLE})


def reference(driver: str, claim: dict[str, str]) -> Payload:
    """A payload that says it is a stored payload's reference, as anyone may send one."""
    return Payload(
        metadata={
            "encoding": b"json/protobuf",
            "messageType": ExternalStorageReference.DESCRIPTOR.full_name.encode(),
        },
        data=json.dumps({"driverName": driver, "claimData": claim}).encode(),
    )


async def test_a_signal_of_forged_references_is_refused_and_the_thread_goes_on(
    cluster: Cluster,
) -> None:
    """References to a payload the store does not hold, to another driver, one that does
    not parse, and a payload marked as an encoded reference that is none, each sent as a
    signal's input: each is refused and listed, and the
    thread's approval is still answered (in SDK 1.35 each failed every workflow task of the
    thread, for good)."""
    cluster.start_worker("w")
    url = cluster.start_api("api")
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        ask = {"id": "u1", "role": "user", "content": 'call cancel_booking {"booking":"BK-1"}'}
        _, events = await post_run(http, "demo", run_input("forged", "r1", [ask], []))
        (interrupt,) = events[-1]["outcome"]["interrupts"]
        address = cluster.server.address
        bad_json = reference(DRIVER_NAME, {})
        bad_json.data = b"{not json"
        marked = Payload(  # says it is an encoded reference (SDK 1.35's marker); it is not
            metadata={"encoding": b"json/plain", "__temporal_external_storage_reference": b"true"},
            data=b'"x"',
        )
        forged_ones = (
            reference(DRIVER_NAME, {"sha256": "0" * 64}),
            reference("elsewhere", {"key": "k"}),
            bad_json,
            marked,
        )
        for forged in forged_ones:
            await send_raw_signal(address, "forged", "approval_decisions", forged)
        for _ in range(300):
            view = (await http.get("/threads/forged")).json()
            if len(view["refusedSignals"]) == len(forged_ones):
                break
        assert len(view["refusedSignals"]) == len(forged_ones), view["refusedSignals"]
        answer = {"resume": [{"interruptId": interrupt["id"], "status": "resolved"}]}
        answered = await http.post("/threads/forged/tool-results", json=answer)
        assert answered.status_code == 200 and answered.json()["accepted"] == [interrupt["id"]]


async def test_runs_of_400_kb_messages_keep_the_history_small_and_replay_from_the_store(
    cluster: Cluster,
) -> None:
    """Six runs of a 400 KB message: each adds a few KB of history (it was 800 KB: the
    request and the turn's input), so the thread stays in one workflow run (it continued
    as new every five). A new worker, after the first is killed, replays that history from
    the store and runs a seventh."""
    cluster.start_worker("w1")
    url = cluster.start_api("api")
    client = await Client.connect(cluster.server.address)
    handle = client.get_workflow_handle(workflow_id_for("big"))
    sizes = []
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        for n in range(7):
            if n == 6:
                cluster.kill("w1")
                cluster.start_worker("w2")
            user = {"id": f"u{n}", "role": "user", "content": f"m{n} " + "x" * 400_000}
            status, events = await post_run(http, "demo", run_input("big", f"r{n}", [user], []))
            assert status == 200 and events[-1]["type"] == "RUN_FINISHED", events[-1]
            history = await handle.fetch_history()
            sizes.append(sum(event.ByteSize() for event in history.events))
        runs = [e async for e in client.list_workflows(f"WorkflowId = '{handle.id}'")]
    assert len(runs) == 1, runs  # no continue-as-new
    assert sizes[-1] < 7 * 16_000, sizes
    stored = cluster.store.stored_messages("big")
    assert [m["content"][0]["text"][:3] for m in stored[::2]] == [f"m{n} " for n in range(7)]


@pytest.mark.parametrize("cluster", ["file"], indirect=True)
async def test_a_store_that_cannot_take_a_payload_is_a_503_and_nothing_is_taken(
    cluster: Cluster,
) -> None:
    """The store cannot write the run's 400 KB request (``.payloads`` is a file, not a
    folder): 503 ``SessionStoreUnavailable`` before any stream, no thread made; once it
    can, the same request runs."""
    cluster.start_worker("w")
    url = cluster.start_api("api")
    blocker = cluster.data_dir / "sessions" / PAYLOADS
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("not a folder")
    user = {"id": "u1", "role": "user", "content": "x" * 400_000}
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        status, body = await post_run(http, "demo", run_input("blocked", "r1", [user], []))
        assert status == 503 and body[0]["detail"]["type"] == "SessionStoreUnavailable", body
        assert (await http.get("/threads/blocked")).status_code == 404
        blocker.unlink()
        status, events = await post_run(http, "demo", run_input("blocked", "r1", [user], []))
        assert status == 200 and events[-1]["type"] == "RUN_FINISHED", events[-1]
