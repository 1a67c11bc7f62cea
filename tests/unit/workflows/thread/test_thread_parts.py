"""The thread workflow's composition (docs/concepts/architecture.md, "The thread's parts"):
each part is built with its collaborators, each slice of the carry has one owner, and no
class leans on attributes someone else assigns. Checked on the source, and by building every
part without a server."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from durable_agui.core.contract import ThreadCarry, ThreadInput
from durable_agui.workflows.batch import ToolCallBatch
from durable_agui.workflows.telemetry import ThreadTelemetry
from durable_agui.workflows.thread.answer_intake import AnswerIntake
from durable_agui.workflows.thread.cursor import SessionCursor
from durable_agui.workflows.thread.endings import ThreadEndings
from durable_agui.workflows.thread.events import ThreadEvents
from durable_agui.workflows.thread.ledger import RunLedger
from durable_agui.workflows.thread.moment import ThreadMoment
from durable_agui.workflows.thread.record import ThreadRecord
from durable_agui.workflows.thread.runs import RunExecutor
from durable_agui.workflows.thread.visibility import ThreadVisibility
from durable_agui.workflows.thread.webhooks import WebhookDeliveries

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[4] / "durable_agui"
THREAD = PACKAGE / "workflows" / "thread"

OWNERS = {
    "RunLedger": {"queue", "run_digests", "run_start_offsets", "run_trace_ids", "finished_run_ids", "turns"},
    "SessionCursor": {
        "message_count", "last_turn_run_id", "prompt_indexes", "turn_end_counts",
        "taken_message_digests", "tail", "tail_anchor", "approved",
    },
    "ThreadRecord": {"metadata", "frontend_tools", "webhook_failures", "refused_signals"},
}  # fmt: skip
"""Who writes which field of ``ThreadCarry`` (``batch``: ``ToolCallBatch``, over its
``BatchState``)."""
MUTATORS = {"append", "extend", "insert", "pop", "update", "clear", "remove", "setdefault"}


def test_the_owners_cover_every_field_of_the_carry_but_the_batch() -> None:
    owned = [field for fields in OWNERS.values() for field in fields]
    assert len(owned) == len(set(owned))
    assert set(owned) == set(ThreadCarry.model_fields) - {"batch"}


def _carry_field(node: ast.expr) -> str | None:
    """``x.carry.f``, ``self._carry.f``, ``carry.f`` (or an item of one): the field ``f``."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if not isinstance(node, ast.Attribute) or node.attr not in ThreadCarry.model_fields:
        return None
    base = node.value
    name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
    return node.attr if name.lstrip("_") in ("carry", "book") else None


def _written(tree: ast.AST) -> list[tuple[str | None, str, int]]:
    """(enclosing class, carry field, line) of every write to a carry field."""
    found: list[tuple[str | None, str, int]] = []

    def visit(node: ast.AST, owner: str | None) -> None:
        if isinstance(node, ast.ClassDef):
            owner = node.name
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATORS
        ):
            targets = [node.func.value]
        for target in targets:
            for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                if (field := _carry_field(element)) is not None:
                    found.append((owner, field, getattr(node, "lineno", 0)))
        for child in ast.iter_child_nodes(node):
            visit(child, owner)

    visit(tree, None)
    return found


def test_only_an_owner_writes_a_carry_field() -> None:
    strays = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for owner, field, line in _written(ast.parse(path.read_text())):
            if field not in OWNERS.get(owner or "", set()):
                strays.append(f"{path.relative_to(PACKAGE)}:{line} {owner}.{field}")
    assert strays == []


def test_the_check_finds_a_stray_write() -> None:
    stray = "def f(carry):\n    carry.queue.append(1)\n    carry.tail = []\n"
    assert [(o, f) for o, f, _ in _written(ast.parse(stray))] == [(None, "queue"), (None, "tail")]


def _declared_not_assigned(cls: ast.ClassDef) -> list[str]:
    decorators = [d.func if isinstance(d, ast.Call) else d for d in cls.decorator_list]
    if any(getattr(d, "id", getattr(d, "attr", "")) == "dataclass" for d in decorators):
        return []  # a dataclass's annotations are its fields: its __init__ assigns them
    declared = {
        n.target.id
        for n in cls.body
        if isinstance(n, ast.AnnAssign) and n.value is None and isinstance(n.target, ast.Name)
    }
    assigned = {
        t.attr
        for n in ast.walk(cls)
        for t in (n.targets if isinstance(n, ast.Assign) else [getattr(n, "target", None)])
        if isinstance(t, ast.Attribute) and getattr(t.value, "id", "") == "self"
    }
    return sorted(declared - assigned)


def test_no_class_of_the_thread_declares_an_attribute_it_does_not_assign() -> None:
    leaning = {
        f"{path.name}:{cls.name}": missing
        for path in sorted(THREAD.glob("*.py"))
        for cls in ast.walk(ast.parse(path.read_text()))
        if isinstance(cls, ast.ClassDef) and (missing := _declared_not_assigned(cls))
    }
    assert leaning == {}


def test_the_check_finds_a_mixin() -> None:
    mixin = ast.parse("class Half:\n    _book: int\n    def f(self):\n        return self._book\n")
    assert _declared_not_assigned(mixin.body[0]) == ["_book"]  # type: ignore[arg-type]


def test_every_part_builds_without_a_server() -> None:
    """As ``AgentThreadWorkflow.__init__`` builds them, minus what needs a workflow
    (``ThreadEvents.attach``, the clock)."""
    from datetime import UTC, datetime

    start = ThreadInput(thread_id="t", agent="demo", owner="alice")
    carry = ThreadCarry()
    telemetry = ThreadTelemetry("t", "demo")
    moment = ThreadMoment(idle_since=datetime(2026, 12, 6, tzinfo=UTC))
    batch = ToolCallBatch(carry.batch)
    ledger, cursor, record = RunLedger(carry), SessionCursor(carry), ThreadRecord(carry)
    events = ThreadEvents(start, telemetry)
    visibility = ThreadVisibility(start, carry, batch, events, moment)
    webhooks = WebhookDeliveries(start, batch, record, visibility)
    intake = AnswerIntake(start, batch, ledger, record, events, visibility, moment, telemetry)
    RunExecutor(
        start,
        ledger,
        cursor,
        record,
        batch,
        intake,
        events,
        visibility,
        webhooks,
        moment,
        telemetry,
    )
    ThreadEndings(start, carry, ledger, batch, events, webhooks, moment, telemetry)
    assert visibility.status.value == "idle" and webhooks.under_way == 0
