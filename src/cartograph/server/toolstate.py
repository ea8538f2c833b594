"""Each served tool's standing against its signed card: ok, drifted, unattested, missing.

Computed from a live ``tools/list`` and the verified card's pins whenever a
session opens or an upstream says ``tools/list_changed``. Only ``ok`` tools
are discoverable or callable (P-CARD-2, P-CARD-4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from cartograph.cards.digest import tool_digest, tool_pins
from cartograph.cards.model import Card
from cartograph.catalog.model import ServerDef
from cartograph.errors import CartographError, DriftError

ToolStatus = Literal["ok", "drifted", "unattested", "missing"]
PIN_PARTS: Final = ("description", "input_schema", "output_schema", "annotations", "title")


@dataclass(frozen=True)
class ToolState:
    status: ToolStatus
    what: tuple[str, ...] = ()


def reattest_command(server: str) -> str:
    return f"cartograph bootstrap --server {server}"


def evaluate(card: Card | None, live: ServerDef) -> dict[str, ToolState]:
    """Compare every live tool (and every carded tool) of one server with its card."""
    states: dict[str, ToolState] = {}
    carded = {t.name: t for t in card.body.tools} if card is not None else {}
    for tool in live.tools:
        pinned = carded.get(tool.name)
        if pinned is None:
            states[tool.name] = ToolState("unattested")
        elif tool_digest(tool) == pinned.digest:
            states[tool.name] = ToolState("ok")
        else:
            live_pins = tool_pins(tool)
            what = tuple(p for p in PIN_PARTS if getattr(live_pins, p) != getattr(pinned.pins, p))
            states[tool.name] = ToolState("drifted", what or ("definition",))
    for name in carded:
        states.setdefault(name, ToolState("missing"))
    return states


def refusal(server: str, tool: str, state: ToolState) -> CartographError:
    """The error a `call` to a tool in ``state`` gets; names the re-attest command."""
    command = reattest_command(server)
    if state.status == "drifted":
        return DriftError(
            f"{server}/{tool} changed upstream since it was attested ({', '.join(state.what)} "
            f"differ from the signed card); it is withheld until an operator runs `{command}`",
            code="drifted",
            server=server,
            tool=tool,
            changed=list(state.what),
            reattest=command,
        )
    if state.status == "unattested":
        return DriftError(
            f"{server}/{tool} is not covered by a signed card, so it is not exposed; "
            f"an operator can attest it with `{command}`",
            code="unattested",
            server=server,
            tool=tool,
            reattest=command,
        )
    return DriftError(
        f"{server}/{tool} is in the signed card but the upstream no longer lists it; "
        f"re-attest with `{command}` once the server is fixed",
        code="tool_missing",
        server=server,
        tool=tool,
        reattest=command,
    )
