"""What an upstream offers besides tools, as plain values (light: no transport imports)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import mcp_types as types

ContentKind = Literal["resources", "prompts"]


@dataclass(frozen=True)
class ContentListing:
    """What one upstream offers besides tools: resources, resource templates, prompts.

    Not attested: cards pin tools only (see docs/gateway.md, "Resources and prompts").
    """

    resources: tuple[types.Resource, ...] = ()
    templates: tuple[types.ResourceTemplate, ...] = ()
    prompts: tuple[types.Prompt, ...] = ()
