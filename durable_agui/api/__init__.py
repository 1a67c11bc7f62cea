"""The HTTP API: AG-UI runs over SSE, thread state, the REST tool-result trigger."""
