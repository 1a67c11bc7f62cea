"""Saved event histories of the core scenarios, replayed by ``tests/test_replay.py``."""
