"""``client.snapshot_refs``: a snapshot's reference is a valid AG-UI event no reader mistakes
for another, and carries what the run brings, not the thread."""

from __future__ import annotations

import json

import pytest
from ag_ui.core import UserMessage

from durable_agui.client.snapshot_refs import messages_ref, refers_to, state_digest, state_ref
from durable_agui.core.contract import event_from_wire, event_to_wire

pytestmark = pytest.mark.unit


def test_a_reference_is_a_custom_event_that_names_what_it_refers_to() -> None:
    prompt = [UserMessage(id="m4", role="user", content="hello")]
    messages = event_to_wire(messages_ref(4, prompt, {"tooluse_1": "call_1"}, set()))
    state = event_to_wire(state_ref(4, {"k": 1}, {"k": 1, "stored": True}))
    assert event_from_wire(messages).type == "CUSTOM"  # an API that does not resolve it
    assert refers_to(messages, "messages") and not refers_to(messages, "state")
    assert refers_to(state, "state") and not refers_to(state, "messages")
    assert not refers_to({"type": "CUSTOM", "name": "turn_retried", "value": {}}, "state")
    assert not refers_to({"type": "CUSTOM", "name": messages["name"], "value": "x"}, "state")
    assert messages["value"]["prompt"] == [{"id": "m4", "role": "user", "content": "hello"}]
    assert messages["value"]["wireIds"] == {"tooluse_1": "call_1"}


def test_a_state_reference_holds_the_clients_keys_and_a_digest_not_the_state() -> None:
    stored = {f"k{n}": "z" * 10_000 for n in range(20)}
    ref = event_to_wire(state_ref(9, {"mine": 1}, {**stored, "mine": 1}))
    assert len(json.dumps(ref)) < 300
    assert ref["value"]["client"] == {"mine": 1}
    assert ref["value"]["digest"] == state_digest({"mine": 1, **stored})  # key order
    assert ref["value"]["digest"] != state_digest({**stored, "mine": 2})
