"""Approval policies: which calls of a backend tool a person must approve, who, how many,
by when, and what happens when nobody does.

The rule (issue "Approvals as organisations run them", after what people ask of agent
servers and what Temporal's Agent Kit policy engine offers):

- ``AgentDefinition.approvals`` maps a tool to one ``ApprovalRule`` or a list of them (tiers):
  the first rule whose ``when`` matches the call's arguments applies; when none does, the
  call runs without asking.
- ``ask``: ``"always"``; ``"once_per_thread"`` (once a person approved such a call, the
  thread remembers it, across continue-as-new, and stops asking); ``"never"`` (an allow list
  entry: the call runs).
- ``when``: a JSON Schema the arguments must match (``{"properties": {"amount":
  {"exclusiveMinimum": 100}}, "required": ["amount"]}``): conditions are data, checked by a
  JSON Schema validator, never Python ``eval``.
- ``approvers`` and ``quorum``: M distinct approvers out of the N named must approve; one
  denial decides. Identities are the API principal, or the JWT claim ``identity_claim``
  names (``email``). Empty ``approvers``: whoever may answer the thread (its owner, a
  decision link, a signal), one approval.
- ``deadline_s`` and ``on_deadline``: ``deny`` (the default), ``approve``, or ``escalate`` to
  the next ``ApprovalStep`` of ``escalation``, each step with its own approvers, quorum and
  deadline, on the thread's durable timer.
- ``editable``: the approver may send corrected arguments (``payload.arguments``); they are
  validated against the tool's input schema before the tool runs with them.

Every field is checked when the definition is declared (``check_approvals``): a bad policy
stops the process at start with one line naming the agent, the tool and the field. Which
rule asks for a call is decided in the turn (``asking_rule``), the same way for the stream
and for the tool; the rest (votes, deadlines, the chain) in the workflow
(``durable_agui.workflows.approval``), deterministically.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from durable_agui.core.contract.approvals import Ask, AskStep, DeadlineAction

AskWhen = Literal["always", "once_per_thread", "never"]

MAX_ASK_BYTES = 4000
"""What one rule adds to each open approval it asks for (its ``Ask``: steps, approvers,
conditions, the tool's schema when editable; UTF-8 JSON): bounded so that a batch of them
fits the thread's carry (``translation.events.ASK_POOL``)."""
MAX_TIERS = 10
"""Rules of one tool (tiers): an editable one carries the conditions of those before it."""
MAX_STEPS = 8
"""Steps of an approval (the first and its escalations): each is carried by every open
interrupt of the tool."""
MAX_APPROVERS = 50
"""Approvers named by one step."""
MAX_IDENTITY = 200
"""Characters of one approver's identity."""
MAX_CONDITION_BYTES = 4000
"""A ``when`` schema, as JSON."""
MAX_RESPONSE_SCHEMA_BYTES = 8000
"""A rule's ``response_schema``, as JSON. (An editable rule's copy of the tool's input
schema counts towards ``MAX_ASK_BYTES``, with the rest of what each approval carries.)"""
DEADLINE_ACTIONS = ("deny", "approve", "escalate")


@dataclass(frozen=True)
class ApprovalStep:
    """A further step of an approval's escalation chain: who decides then, how many, and
    until when (seconds after the step began; ``None``: the thread's answer timeout)."""

    approvers: Sequence[str] = ()
    quorum: int = 1
    deadline_s: float | None = None
    on_deadline: DeadlineAction = "deny"


@dataclass(frozen=True)
class ApprovalRule:
    """A backend tool's calls that run only once a person approves them (AG-UI 1.0
    interrupts); see the module for the rule of each field.

    ``message`` is shown to the person; ``response_schema`` (JSON Schema) describes the
    payload the person may send with the approval. The tool reads that payload from
    ``tool_context.invocation_state["approval"]`` (``@tool(context=True)``).
    """

    message: str
    response_schema: dict[str, Any] | None = None
    ask: AskWhen = "always"
    when: Mapping[str, Any] | None = None
    approvers: Sequence[str] = ()
    quorum: int = 1
    identity_claim: str | None = None
    deadline_s: float | None = None
    on_deadline: DeadlineAction = "deny"
    escalation: Sequence[ApprovalStep] = ()
    editable: bool = False

    def steps(self) -> list[AskStep]:
        """The rule's own step, then its escalation steps, as the thread carries them."""
        first = ApprovalStep(self.approvers, self.quorum, self.deadline_s, self.on_deadline)
        return [
            AskStep(
                approvers=list(step.approvers),
                quorum=step.quorum,
                deadline_s=step.deadline_s,
                on_deadline=step.on_deadline,
            )
            for step in (first, *self.escalation)
        ]

    def is_plain(self) -> bool:
        """One answer from whoever may answer, by the thread's deadline, then deny: how
        approvals worked before policies (such an interrupt carries no ``Ask``)."""
        return (
            len(self.steps()) == 1
            and not self.approvers
            and self.quorum == 1
            and self.deadline_s is None
            and self.on_deadline == "deny"
            and self.ask != "once_per_thread"
            and not self.editable
        )


Rules = ApprovalRule | Sequence[ApprovalRule]
"""What ``AgentDefinition.approvals`` maps a tool to: one rule, or tiers (first match)."""


def rules_of(approvals: Mapping[str, Rules], tool_name: str) -> tuple[ApprovalRule, ...]:
    """The rules of ``tool_name`` in order (none: it is not behind an approval)."""
    rules = approvals.get(tool_name)
    if rules is None:
        return ()
    return (rules,) if isinstance(rules, ApprovalRule) else tuple(rules)


def asking_rule(
    rules: Sequence[ApprovalRule], arguments: Any, consented: bool
) -> ApprovalRule | None:
    """The rule that asks a person about a call with ``arguments``, or ``None`` when the
    call runs unasked: the first rule whose ``when`` matches decides; ``never`` runs,
    ``once_per_thread`` runs once the thread holds the tool's consent (``consented``)."""
    for rule in rules:
        if rule.when is not None and not Draft202012Validator(rule.when).is_valid(arguments):
            continue
        if rule.ask == "never" or (rule.ask == "once_per_thread" and consented):
            return None
        return rule
    return None


def ask_of(
    rule: ApprovalRule,
    input_schema: Mapping[str, Any] | None,
    outranked_by: Sequence[Mapping[str, Any]] = (),
) -> Ask | None:
    """What the thread carries for a call ``rule`` asks about (``None``: a plain approval,
    ``ApprovalRule.is_plain``); ``input_schema``: the tool's, for an editable rule;
    ``outranked_by``: the conditions of the tiers before it that would have asked."""
    if rule.is_plain():
        return None
    return Ask(
        steps=rule.steps(),
        identity_claim=rule.identity_claim,
        remember=rule.ask == "once_per_thread",
        edit_schema=dict(input_schema or {}) if rule.editable else None,
        outranked_by=[dict(when) for when in outranked_by] if rule.editable else [],
    )


def claims_named(approvals: Mapping[str, Rules]) -> set[str]:
    """The JWT claims the agent's policies compare approvers by."""
    return {
        rule.identity_claim
        for name in approvals
        for rule in rules_of(approvals, name)
        if rule.identity_claim
    }


# -- checks, at start -------------------------------------------------------------------


class PolicyError(ValueError):
    """A policy field that cannot be served: ``field`` (``approvals['refund'][1].quorum``)
    and why; ``check_definition`` adds the agent's name."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field} {problem}")


def check_approvals(
    approvals: Mapping[str, Any], input_schemas: Mapping[str, Mapping[str, Any]] | None
) -> None:
    """Refuse a policy that cannot be served (``input_schemas``: each static tool's, to bound
    an editable rule's; ``None`` when a factory gives the tools per turn).

    Raises:
        PolicyError: naming the tool, the rule and the field.
    """
    for tool_name, rules in approvals.items():
        listed = isinstance(rules, Sequence) and not isinstance(rules, str | bytes)
        if not isinstance(rules, ApprovalRule) and not listed:
            raise PolicyError(
                f"approvals[{tool_name!r}]", "must be an ApprovalRule or a list of them"
            )
        many = rules if listed else [rules]
        if listed and not 0 < len(many) <= MAX_TIERS:
            raise PolicyError(f"approvals[{tool_name!r}]", f"must list 1-{MAX_TIERS} ApprovalRules")
        for index, rule in enumerate(many):
            where = f"approvals[{tool_name!r}]" + (f"[{index}]" if listed else "")
            if not isinstance(rule, ApprovalRule):
                raise PolicyError(where, "must be an ApprovalRule")
            schema = (input_schemas or {}).get(tool_name)
            _check_rule(where, rule, schema if input_schemas is not None else None)
            earlier = [r.when for r in many[:index] if r.when is not None and r.ask != "never"]
            _check_carried(where, ask_of(rule, schema, earlier))


def _check_rule(where: str, rule: ApprovalRule, input_schema: Mapping[str, Any] | None) -> None:
    if not isinstance(rule.message, str) or not rule.message:
        raise PolicyError(f"{where}.message", "must be a non-empty string")
    if rule.ask not in ("always", "once_per_thread", "never"):
        raise PolicyError(
            f"{where}.ask", f"must be always, once_per_thread or never; got {rule.ask!r}"
        )
    _check_schema(f"{where}.when", rule.when, MAX_CONDITION_BYTES)
    _check_schema(f"{where}.response_schema", rule.response_schema, MAX_RESPONSE_SCHEMA_BYTES)
    if rule.identity_claim is not None and (
        not isinstance(rule.identity_claim, str) or not rule.identity_claim
    ):
        raise PolicyError(
            f"{where}.identity_claim", "must be a claim name such as 'email', or None"
        )
    if not isinstance(rule.escalation, Sequence) or len(rule.escalation) >= MAX_STEPS:
        raise PolicyError(f"{where}.escalation", f"must list at most {MAX_STEPS - 1} ApprovalSteps")
    first = ApprovalStep(rule.approvers, rule.quorum, rule.deadline_s, rule.on_deadline)
    steps = [first, *rule.escalation]
    for index, step in enumerate(steps):
        prefix = where if index == 0 else f"{where}.escalation[{index - 1}]"
        if not isinstance(step, ApprovalStep):
            raise PolicyError(prefix, "must be an ApprovalStep")
        _check_step(prefix, step, is_last=index == len(steps) - 1)
    if rule.ask == "never" and not rule.is_plain():
        raise PolicyError(
            f"{where}.ask",
            "is never: the call runs unasked, so approvers, quorum, deadlines, escalation "
            "and editable mean nothing; leave them out",
        )
    _check_condition_names(where, rule.when, input_schema)


def _check_step(where: str, step: ApprovalStep, is_last: bool) -> None:
    _check_approvers(where, step)
    _check_deadline(where, step, is_last)


def _check_approvers(where: str, step: ApprovalStep) -> None:
    approvers = step.approvers
    if isinstance(approvers, str) or not isinstance(approvers, Sequence):
        raise PolicyError(f"{where}.approvers", "must be a list of identities")
    if len(approvers) > MAX_APPROVERS:
        raise PolicyError(f"{where}.approvers", f"must name at most {MAX_APPROVERS} identities")
    twice = next((a for i, a in enumerate(approvers) if a in approvers[:i]), None)
    if twice is not None:
        raise PolicyError(f"{where}.approvers", f"names {twice!r} twice")
    for approver in approvers:
        if not isinstance(approver, str) or not 0 < len(approver) <= MAX_IDENTITY:
            raise PolicyError(
                f"{where}.approvers",
                f"must hold strings of 1-{MAX_IDENTITY} characters; got {approver!r}",
            )
    quorum = step.quorum
    if not isinstance(quorum, int) or isinstance(quorum, bool) or quorum < 1:
        raise PolicyError(
            f"{where}.quorum", f"must be a whole number of at least 1; got {quorum!r}"
        )
    if quorum > 1 and quorum > len(approvers):
        raise PolicyError(
            f"{where}.quorum",
            f"is {quorum}, but approvers names {len(approvers)}: a quorum needs that many "
            "distinct approvers named",
        )


def _check_deadline(where: str, step: ApprovalStep, is_last: bool) -> None:
    deadline = step.deadline_s
    if deadline is not None and (
        not isinstance(deadline, int | float) or isinstance(deadline, bool) or not deadline > 0
    ):
        raise PolicyError(
            f"{where}.deadline_s", f"must be seconds above 0, or None; got {deadline!r}"
        )
    if step.on_deadline not in DEADLINE_ACTIONS:
        raise PolicyError(
            f"{where}.on_deadline", f"must be deny, approve or escalate; got {step.on_deadline!r}"
        )
    if step.on_deadline == "escalate" and is_last:
        raise PolicyError(f"{where}.on_deadline", "is escalate, but no escalation step follows")
    if step.on_deadline != "escalate" and not is_last:
        raise PolicyError(
            f"{where}.on_deadline",
            f"is {step.on_deadline}, so the escalation step after it is never asked; "
            "escalate, or leave that step out",
        )


def _check_schema(where: str, schema: Any, max_bytes: int) -> None:
    if schema is None:
        return
    if not isinstance(schema, Mapping):
        raise PolicyError(where, "must be a JSON Schema (a dict), or None")
    try:
        Draft202012Validator.check_schema(dict(schema))
        size = len(_json(schema))
    except SchemaError as err:
        raise PolicyError(where, f"is not a valid JSON Schema: {err.message}") from None
    except (TypeError, ValueError) as err:
        raise PolicyError(where, f"is not JSON: {err}") from None
    if size > max_bytes:
        raise PolicyError(where, f"is {size} bytes of JSON; at most {max_bytes}")


def _check_carried(where: str, ask: Ask | None) -> None:
    size = len(ask.model_dump_json().encode()) if ask is not None else 0
    if size > MAX_ASK_BYTES:
        raise PolicyError(
            where,
            f"is {size} bytes as each approval carries it (approvers, steps, conditions, the "
            f"tool's schema when editable); at most {MAX_ASK_BYTES}",
        )


def _check_condition_names(
    where: str, when: Mapping[str, Any] | None, input_schema: Mapping[str, Any] | None
) -> None:
    """A condition naming an argument the tool does not take never holds as meant (with
    ``required`` the call then runs unasked): refused, for tools known at start."""
    declared = (input_schema or {}).get("properties")
    if when is None or not isinstance(declared, Mapping):
        return
    named = set(when.get("properties") or {}) | set(when.get("required") or [])
    unknown = sorted(named - set(declared))
    if unknown:
        raise PolicyError(
            f"{where}.when",
            f"names {unknown[0]!r}, which the tool does not take "
            f"(its arguments: {', '.join(sorted(declared)) or 'none'})",
        )


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class TurnApprovals:
    """The approval rules of one turn's tools, with the consents the thread holds: what the
    turn's stream (the call's kind) and its tools (hand over or run) both ask, so they agree
    on every call."""

    approvals: Mapping[str, Rules]
    input_schemas: Mapping[str, Mapping[str, Any]]
    consents: frozenset[str] = frozenset()

    def gated(self) -> set[str]:
        """The tools behind a rule (their calls are judged one by one)."""
        return set(self.approvals)

    def asking(self, tool_name: str, arguments: Any) -> ApprovalRule | None:
        """The rule that asks about this call (``asking_rule``), or ``None``: it runs."""
        rules = rules_of(self.approvals, tool_name)
        return asking_rule(rules, arguments, tool_name in self.consents) if rules else None

    def ask(self, tool_name: str, rule: ApprovalRule) -> Ask | None:
        """``ask_of`` with the tool's input schema and the tiers before ``rule`` that would
        have asked (an edit may not move a call under one of them)."""
        rules = rules_of(self.approvals, tool_name)
        earlier = rules[: rules.index(rule)] if rule in rules else ()
        consented = tool_name in self.consents
        outranking = [
            r.when
            for r in earlier
            if r.when is not None
            and r.ask != "never"
            and not (r.ask == "once_per_thread" and consented)
        ]
        return ask_of(rule, self.input_schemas.get(tool_name), outranking)
