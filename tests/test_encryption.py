"""Payload encryption: Temporal stores ciphertext; the codec endpoint decodes for the UI."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import httpx
import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.client import Client

from durable_agui.core.codec import new_key
from durable_agui.core.contract import workflow_id_for
from tests.stack import DevStack
from tests.support import parse_sse, run_input, send_raw_signal, text_of

SECRET = "my passport number is X1234567"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    folder = tmp_path_factory.mktemp("encrypted")
    running = DevStack(
        folder / "data", folder / "dev.log", env={"DURABLE_AGUI_PAYLOAD_ENCRYPTION_KEY": new_key()}
    )
    running.start()
    try:
        yield running
    finally:
        running.stop()


async def test_history_on_the_server_is_ciphertext_and_the_ui_path_decodes(stack: DevStack) -> None:
    async with httpx.AsyncClient(base_url=stack.url, timeout=60) as http:
        user = {"id": "u1", "role": "user", "content": SECRET}
        response = await http.post("/agents/demo", json=run_input("enc", "r1", [user], []))
        assert text_of(parse_sse(response.text)) == f"echo: {SECRET}"

        # A client without the key sees only ciphertext in the stored history.
        raw = await Client.connect(stack.temporal_address)
        history = await raw.get_workflow_handle("agui-thread-enc").fetch_history()
        payloads: list[Payload] = []
        for event in history.events:
            if event.HasField("workflow_execution_update_accepted_event_attributes"):
                payloads += event.workflow_execution_update_accepted_event_attributes.accepted_request.input.args.payloads
            if event.HasField("workflow_execution_started_event_attributes"):
                payloads += event.workflow_execution_started_event_attributes.input.payloads
            if event.HasField("workflow_execution_signaled_event_attributes"):
                payloads += event.workflow_execution_signaled_event_attributes.input.payloads
            if event.HasField("activity_task_scheduled_event_attributes"):
                payloads += event.activity_task_scheduled_event_attributes.input.payloads
            if event.HasField("activity_task_completed_event_attributes"):
                payloads += event.activity_task_completed_event_attributes.result.payloads
        assert len(payloads) >= 4  # started, the run's update, the turn's input and result
        assert all(p.metadata["encoding"] == b"binary/encrypted" for p in payloads)
        assert all(SECRET.encode() not in p.SerializeToString() for p in payloads)

        # The Temporal UI's codec call (browser CORS preflight included) decodes them.
        ui = {"Origin": stack.temporal_ui}
        preflight = await http.options(
            "/codec/decode",
            headers={
                **ui,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type,x-namespace",
            },
        )
        assert preflight.headers["access-control-allow-origin"] == stack.temporal_ui
        body = json_format.MessageToJson(Payloads(payloads=payloads))
        decoded = await http.post(
            "/codec/decode",
            content=body,
            headers={**ui, "content-type": "application/json", "X-Namespace": "default"},
        )
        assert decoded.status_code == 200
        plain = [base64.b64decode(p["data"]) for p in json.loads(decoded.text)["payloads"]]
        assert any(SECRET.encode() in data for data in plain)
        assert all(
            p["metadata"]["encoding"] != base64.b64encode(b"binary/encrypted").decode()
            for p in json.loads(decoded.text)["payloads"]
        )

        # Everything still works for clients of the API.
        listed = (await http.get("/threads/enc/messages")).json()["messages"]
        assert listed[0]["content"] == SECRET


@pytest.fixture(scope="module")
def keyed_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    """Encryption with API keys: alice and bob use the API, ops is the UI's operator."""
    folder = tmp_path_factory.mktemp("encrypted-keys")
    env = {
        "DURABLE_AGUI_PAYLOAD_ENCRYPTION_KEY": new_key(),
        "DURABLE_AGUI_AUTH": "api_key",
        "DURABLE_AGUI_API_KEYS": json.dumps({"k-alice": "alice", "k-bob": "bob", "k-ops": "ops"}),
        "DURABLE_AGUI_CODEC_PRINCIPALS": json.dumps(["ops"]),
    }
    running = DevStack(folder / "data", folder / "dev.log", env=env)
    running.start()
    try:
        yield running
    finally:
        running.stop()


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_only_operators_may_decode_and_bad_payloads_are_400(keyed_stack: DevStack) -> None:
    async with httpx.AsyncClient(base_url=keyed_stack.url, timeout=60) as http:
        user = {"id": "u1", "role": "user", "content": SECRET}
        body = run_input("alice-secret", "r1", [user], [])
        response = await http.post("/agents/demo", json=body, headers=bearer("k-alice"))
        assert text_of(parse_sse(response.text)) == f"echo: {SECRET}"
        raw = await Client.connect(keyed_stack.temporal_address)
        workflow_id = workflow_id_for("alice-secret", "alice")
        history = await raw.get_workflow_handle(workflow_id).fetch_history()
        payloads = [
            payload
            for event in history.events
            if event.HasField("workflow_execution_update_accepted_event_attributes")
            for payload in event.workflow_execution_update_accepted_event_attributes.accepted_request.input.args.payloads
        ]
        document = json_format.MessageToJson(Payloads(payloads=payloads))
        json_headers = {"content-type": "application/json"}
        for who, status in (("k-bob", 403), ("k-alice", 403), (None, 401)):
            refused = await http.post(
                "/codec/decode",
                content=document,
                headers={**json_headers, **(bearer(who) if who else {})},
            )
            assert refused.status_code == status, (who, refused.text)
            assert SECRET not in refused.text
        decoded = await http.post(
            "/codec/decode", content=document, headers={**json_headers, **bearer("k-ops")}
        )
        assert decoded.status_code == 200
        plain = [base64.b64decode(p["data"]) for p in json.loads(decoded.text)["payloads"]]
        assert any(SECRET.encode() in data for data in plain)
        for bad in (
            '{"payloads": [{"data": 5}]}',
            '{"payloads": [{"metadata": {"encoding": "YmluYXJ5L2VuY3J5cHRlZA=="}, "data": "AAAA"}]}',
            '{"nothing": true}',
            "[1, 2]",
            "[]",
            "[[]]",
            '{"payloads": null}',
            '{"payloads": [{"data": "!!"}]}',
            '{"payloads": [{"metadata": {"encoding": 7}}]}',
        ):
            answer = await http.post(
                "/codec/decode", content=bad, headers={**json_headers, **bearer("k-ops")}
            )
            assert answer.status_code == 400, (bad, answer.text)
            assert answer.json()["detail"]["type"] == "BadPayloads"
            assert "Error" not in answer.text and "Traceback" not in answer.text
        empty = await http.post(
            "/codec/decode", content='{"payloads": []}', headers={**json_headers, **bearer("k-ops")}
        )
        assert empty.status_code == 200 and json.loads(empty.text) == {}


async def test_a_signal_that_does_not_decrypt_is_refused_and_the_thread_goes_on(
    stack: DevStack,
) -> None:
    """Before, the codec raised before the thread saw the signal: every workflow task of the
    thread failed, for good."""
    async with httpx.AsyncClient(base_url=stack.url, timeout=60) as http:
        ask = {"id": "u1", "role": "user", "content": 'call cancel_booking {"booking":"BK-1"}'}
        response = await http.post("/agents/demo", json=run_input("enc-forged", "r1", [ask], []))
        (interrupt,) = parse_sse(response.text)[-1]["outcome"]["interrupts"]
        # A client without the key sends what looks encrypted: it does not decrypt.
        forged = Payload(
            metadata={"encoding": b"binary/encrypted", "encryption-key-id": b"default"},
            data=b"\0" * 12 + b"not ciphertext at all",
        )
        await send_raw_signal(stack.temporal_address, "enc-forged", "approval_decisions", forged)
        for _ in range(300):
            view = (await http.get("/threads/enc-forged")).json()
            if view["refusedSignals"]:
                break
        assert [r["type"] for r in view["refusedSignals"]] == ["InvalidJson"]
        answer = {"resume": [{"interruptId": interrupt["id"], "status": "resolved"}]}
        answered = await http.post("/threads/enc-forged/tool-results", json=answer)
        assert answered.status_code == 200 and answered.json()["accepted"] == [interrupt["id"]]
