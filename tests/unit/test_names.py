"""The names a thread's callers send are the ones its workflow defines: every update name of
``core.contract.THREAD_UPDATES`` is a handler of ``AgentThreadWorkflow``, the answer signals
are taken, and no caller names an update by a string literal (which could drift from the
handler's name unseen: the API never imports the workflow)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from temporalio import workflow

from durable_agui.core.contract import ANSWER_SIGNALS, THREAD_UPDATES
from durable_agui.workflows import AgentThreadWorkflow

pytestmark = pytest.mark.unit  # no server: the inner loop (pytest -m unit)

PACKAGE = Path(__file__).resolve().parents[2] / "durable_agui"
SENDS = {"execute_update", "start_update", "execute_update_with_start_workflow"}


def test_the_workflow_defines_every_update_its_callers_send() -> None:
    defined = workflow._Definition.must_from_class(AgentThreadWorkflow).updates
    assert set(THREAD_UPDATES) <= set(defined)


def test_every_signal_reaches_the_threads_one_handler() -> None:
    signals = workflow._Definition.must_from_class(AgentThreadWorkflow).signals
    assert list(signals) == [None]  # dynamic: any name, any number of inputs
    assert set(ANSWER_SIGNALS) == {"tool_results", "approval_decisions"}


def test_no_caller_names_an_update_by_a_string_literal() -> None:
    literal = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in SENDS
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                literal.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert literal == []
