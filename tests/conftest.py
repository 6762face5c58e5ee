"""Shared fixtures."""

import pytest


@pytest.fixture(scope="module")
def core():
    """bob.core; a missing native core fails the test, it never skips it."""
    try:
        import bob.core as core_module
    except ImportError as exc:  # includes bob.core.NativeCoreUnavailable
        pytest.fail(f"bob.core cannot be imported; the native core must be built: {exc!r}")
    return core_module
