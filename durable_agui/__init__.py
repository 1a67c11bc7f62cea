"""Durable AG-UI threads for Strands agents, on Temporal: CLI, settings and the shared contract."""
