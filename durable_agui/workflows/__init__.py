"""Workflow definitions: deterministic state machines, no I/O."""

from durable_agui.workflows.thread import AgentThreadWorkflow

__all__ = ["AgentThreadWorkflow"]
