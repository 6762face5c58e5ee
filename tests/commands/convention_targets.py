"""Fuzz targets for tests/commands/test_convention.py (imported by bob-fuzz's
worker processes too, through PYTHONPATH)."""

from __future__ import annotations


def varying(data: bytes) -> None:
    """One bug whose message holds a value that changes from input to input."""
    if len(data) % 3 == 1:
        raise ValueError(f"planted: length {len(data)} is 1 mod 3, first byte {data[:1].hex() or 'none'}")


def always_fails(data: bytes) -> None:
    """Fails on every input, the empty one included: minimize shrinks anything to nothing."""
    raise ValueError(f"planted: {len(data)} bytes")


def crashes(data: bytes) -> None:
    """A native crash on inputs that start with 'X' (the process dies by SIGSEGV)."""
    if data[:1] == b"X":
        import os
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)
