"""Rift: which tools an agent can confuse, and what would tell them apart.

The contract: :func:`analyse` turns verified cards (as :class:`RiftTool`
values) into clusters of confusable tools with risks and suggestions;
:func:`run_rift` is the whole command (cards, analysis, report).
"""

from cartograph.rift.analysis import RiftTool, analyse, tools_from_cards
from cartograph.rift.model import RiftSettings
from cartograph.rift.runner import run_rift

__all__ = ["RiftSettings", "RiftTool", "analyse", "run_rift", "tools_from_cards"]
