"""JSON text a client sends, checked before it is parsed: nesting, numbers RFC 8259 has
not, and text UTF-8 cannot encode. The API checks request bodies with it
(``durable_agui.api.body_check``), the thread its signals' payloads
(``durable_agui.core.contract.signals``): one rule for both channels.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from durable_agui.core.errors import ErrorType

MAX_DEPTH = 32
"""Deepest JSON nesting a request body may have (tool schemas, content parts, metadata)."""


_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


def json_depth_over(body: bytes, limit: int) -> bool:
    """Whether the JSON text ``body`` nests deeper than ``limit`` (arrays and objects),
    found without parsing it (Python's parser recurses, and would fail on deep input)."""
    depth = 0
    for bracket in _BRACKET.finditer(_JSON_STRING.sub(b'""', body)):
        if bracket.group() in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (RFC 8259)")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text[:40]} is beyond the range of a double")
    return value


def json_body_error(body: bytes) -> tuple[ErrorType, str] | None:
    """What is wrong with the JSON request body ``body``, as ``(type, message)``, or
    ``None``. Checks every field a client sends, keys included: nesting deeper than
    ``MAX_DEPTH`` (``TooDeep``), text that is not JSON or not UTF-8, ``NaN`` / ``Infinity``
    and numbers too large for a double such as ``1e999`` (``InvalidJson``; Python's
    parser takes them, RFC 8259 has no such numbers), and lone
    surrogates such as ``"\\ud800"`` (``InvalidText``: UTF-8 cannot encode them)."""
    if json_depth_over(body, MAX_DEPTH):
        return ErrorType.TOO_DEEP, f"the body nests JSON deeper than {MAX_DEPTH} levels"
    try:
        parsed = json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)
    except ValueError as err:
        return ErrorType.INVALID_JSON, f"the body is not valid JSON: {str(err)[:200]}"
    try:
        json.dumps(parsed, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return (
            ErrorType.INVALID_TEXT,
            "the body holds text that is not valid Unicode (a lone surrogate)",
        )
    return None
