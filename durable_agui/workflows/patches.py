"""Every ``workflow.patched`` id of the thread's workflow since the latest release.

Release 0.1.0 settled every patch before it (CHANGELOG.md): the workflow took each new
branch for good, the old branches went, and ``tests/histories`` were recorded again by it.
Its histories are where compatibility starts. A later change to the commands the workflow
issues adds its id here, asks ``workflow.patched(id)`` where it changes them, and records a
history of the new path; CONTRIBUTING.md ("Add a replay history") says when a patch is
deprecated and when it goes.

Workflow code (deterministic).
"""

from __future__ import annotations
