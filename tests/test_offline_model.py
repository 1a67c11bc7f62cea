"""The offline model's documented rules, through a real Strands Agent."""

from __future__ import annotations

from strands import Agent, tool

from durable_agui.agents.offline_model import OfflineModel, plan_reply, reasoning_signature


def test_echo_when_no_call_lines() -> None:
    agent = Agent(model=OfflineModel(), callback_handler=None)
    result = agent("hello there")
    assert str(result).strip() == "echo: hello there"


def test_call_lines_become_parallel_calls_then_results_are_reported() -> None:
    seen: list[str] = []

    @tool
    def first(x: int) -> str:
        """First."""
        seen.append(f"first {x}")
        return f"one:{x}"

    @tool
    def second(flag: bool) -> dict[str, bool]:
        """Second."""
        seen.append(f"second {flag}")
        return {"flag": flag}

    agent = Agent(model=OfflineModel(), tools=[first, second], callback_handler=None)
    result = agent('plan:\ncall first {"x": 3}\ncall second {"flag": false}')
    assert seen == ["first 3", "second False"]
    assert str(result).strip().splitlines() == [
        "first -> success: one:3",
        'second -> success: {"flag": false}',
    ]
    assistant_calls = agent.messages[1]["content"]
    assert [block["toolUse"]["name"] for block in assistant_calls] == ["first", "second"]


def test_result_rendering_text_verbatim_json_compact_and_status() -> None:
    messages = [
        {"role": "user", "content": [{"text": "x"}]},
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "a", "name": "pick", "input": {}}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "a",
                        "status": "error",
                        "content": [{"text": "denied"}, {"json": {"k": [1, 2]}}],
                    }
                }
            ],
        },
    ]
    text, calls = plan_reply(messages)  # type: ignore[arg-type]
    assert calls == []
    assert text == 'pick -> error: denied {"k":[1,2]}'


def test_malformed_call_line_is_echoed() -> None:
    text, calls = plan_reply([{"role": "user", "content": [{"text": "call x {not json}"}]}])
    assert calls == []
    assert text == "echo: call x {not json}"


def test_think_lines_become_reasoning_blocks_before_the_answer() -> None:
    agent = Agent(model=OfflineModel(), callback_handler=None)
    result = agent("think about flights\nthink-redacted s3cret\nhello")
    assert str(result).strip() == "echo: think about flights\nthink-redacted s3cret\nhello"
    blocks = agent.messages[1]["content"]
    assert blocks[0] == {
        "reasoningContent": {
            "reasoningText": {
                "text": "about flights",
                "signature": reasoning_signature("about flights"),
            }
        }
    }
    assert blocks[1] == {"reasoningContent": {"redactedContent": b"s3cret"}}
    assert "text" in blocks[2]


def test_no_reasoning_after_tool_results() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    agent = Agent(model=OfflineModel(), tools=[ping], callback_handler=None)
    agent("think first\ncall ping {}")
    assert "reasoningContent" in agent.messages[1]["content"][0]
    assert all("reasoningContent" not in block for block in agent.messages[3]["content"])
