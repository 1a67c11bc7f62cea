"""Workflow definitions: deterministic state machines, no I/O."""

from workflows.thread import AgentThreadWorkflow

__all__ = ["AgentThreadWorkflow"]
