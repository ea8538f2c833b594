"""Learning from use ships off: on sets nobody tuned on it moved tasks it had never seen.

It stays off until the generalisation protocol shows it leaves new tasks as
zero-shot ranks them (docs/retrieval.md, "Learning from use"); an operator
turns it on with ``[learning] enabled = true``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cartograph.config.model import Config, LearningConfig
from cartograph.learning.sqlite import usage_log_path
from tests.helpers.support import scriptable
from tests.server.support import running


def test_the_default_config_has_learning_off() -> None:
    assert LearningConfig().enabled is False
    assert Config().learning.enabled is False


@pytest.mark.anyio
async def test_a_default_proxy_neither_logs_nor_reranks(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with running(state, scriptable("calc")) as handlers:
        assert handlers.runtime.learning is None
        found: Any = await handlers.call_tool(
            "discover", {"task": "add two integers"}, principal=None
        )
        assert not found.is_error
    assert not usage_log_path(state).exists()
