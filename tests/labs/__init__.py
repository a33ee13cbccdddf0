"""Lab tests. Those marked ``sandbox`` run code through the real bubblewrap sandbox."""

from __future__ import annotations

import os

import pytest

REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES") == "1"


def require_sandbox() -> None:
    """Skip where no sandbox can start, with the reason; under REQUIRE_SERVICES=1 (CI), fail."""
    from labs.sandbox import unavailable

    reason = unavailable()
    if reason is None:
        return
    if REQUIRE_SERVICES:
        pytest.fail(f"REQUIRE_SERVICES=1 but no lab sandbox can start: {reason}")
    pytest.skip(f"no lab sandbox: {reason}")
