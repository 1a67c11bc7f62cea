"""Saved event histories of the core scenarios, replayed by ``tests/unit/test_replay.py``."""
