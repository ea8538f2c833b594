"""The capability card: what an operator attests about one upstream server.

C = (identity, capability, per-tool descriptions, provenance, signature), as in
the paper's §3.2. Everything except ``signature`` is the signed body. Ranking
only ever sees operator text: ``capability`` and each tool's ``description``,
``arguments``, ``when_to_use``, ``synonyms`` and ``examples``, which the
operator's generator wrote. Publisher text reaches a card only as whole
sanitised sentences inside ``description`` (kept only when they describe the
tool its name and arguments say it is); the card pins the publisher's full
definition by digest (the drift pins), so a change to it is noticed.

Format 2 added ``when_to_use``, ``synonyms`` and ``examples``; a card in any
other format is refused at load (``card_format``), and ``cartograph
bootstrap`` rewrites it.

A tool the operator reshaped (``config/transforms.py``) carries a
:class:`Transform`: the card's ``name``, ``input_schema`` and text are then the
tool *as served* (what ranking, ``discover``, stubs and Rift see), and the
transform says how a call maps back to the upstream's own name and arguments.
The pins stay on the upstream's real definition. A tool without one renders
exactly as before (no ``transform`` key), so older cards verify unchanged; a
card with one is refused by a Cartograph that does not read it (``card_shape``).
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field, JsonValue

from cartograph.validation import StrictModel

CARD_FORMAT_VERSION: Final = 2
MAX_EXAMPLES: Final = 8


class Identity(StrictModel):
    """Which upstream this card speaks for; bound into the signature (P-SIG-4)."""

    server: str = Field(min_length=1)
    transport: str = "stdio"
    endpoint: str = ""
    publisher: str | None = None


class Capability(StrictModel):
    """Operator-written server-level text: the Stage-1 ranking target."""

    summary: str
    guidance: str = ""
    tags: tuple[str, ...] = ()


class Pins(StrictModel):
    """SHA-256 of each part of the served tool definition, so drift can say *what* changed.

    ``ToolCard.digest`` covers the whole definition; these split it up. A part
    the upstream did not send is pinned as the digest of JSON ``null``.
    """

    description: str
    input_schema: str
    output_schema: str
    annotations: str
    title: str


class HiddenArgument(StrictModel):
    """An upstream argument the agent never sees; the proxy fills it in on every call.

    ``fixed``: ``value`` is sent. ``env``: the proxy's environment variable
    ``env`` is read at call time (refused with ``config_env_var`` when it is not
    set). ``omitted``: never sent, so the upstream's default applies.
    """

    source: Literal["fixed", "env", "omitted"]
    value: JsonValue = None
    env: str = ""


class Transform(StrictModel):
    """How a served tool maps back to its upstream's (signed with the rest of the card).

    ``upstream`` is the upstream's tool name and ``input_schema`` its input
    schema (prose sanitised), which a mapped call must match. ``renamed`` maps
    a served argument name to the upstream's; ``hidden`` maps an upstream
    argument the agent may not set to how it is filled in.
    """

    upstream: str = Field(min_length=1)
    title: str | None = None
    input_schema: dict[str, Any] = Field(default_factory=dict)
    renamed: dict[str, str] = Field(default_factory=dict)
    hidden: dict[str, HiddenArgument] = Field(default_factory=dict)


_ABSENT: Final[dict[str, Any]] = {"transform": None, "vouched_name": False}
"""Tool fields not rendered at their default, so cards written before them verify unchanged."""


def without_absent(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Dumped tools without ``"transform": null`` or ``"vouched_name": false``.

    Cards render as before those fields existed. Done on the dumped value
    rather than in the model's serializer: a per-field exclusion rule made
    every card dump about half as slow again (callgrind).
    """
    for tool in tools:
        for key, absent in _ABSENT.items():
            if key in tool and tool[key] is absent:
                del tool[key]
    return tools


class ToolCard(StrictModel):
    """One tool as the operator describes it, pinned to the definition it saw.

    ``examples`` are short tasks an agent might be given that this tool
    serves ("get the current time in a time zone"); retrieval indexes them as
    their own field. ``synonyms`` are other words for the tool's action and
    object; ``when_to_use`` is one sentence on when to pick it.
    """

    name: str = Field(min_length=1)
    description: str
    arguments: str = ""
    when_to_use: str = ""
    synonyms: tuple[str, ...] = ()
    examples: tuple[str, ...] = Field(default=(), max_length=MAX_EXAMPLES)
    example: dict[str, Any] = Field(default_factory=dict)
    input_schema: dict[str, Any] = Field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    digest: str
    pins: Pins
    transform: Transform | None = None
    """Set for a reshaped tool; when absent it is not rendered (:func:`without_absent`)."""
    vouched_name: bool = False
    """The operator vouches for this tool's name (``vouch_name`` in its override): a
    name another server's tool also has keeps its weight in ranking
    (:mod:`cartograph.index.name_copies`). Not rendered when false."""

    def json_dict(self) -> dict[str, Any]:
        """This tool's part of the signed JSON value (fields at their absent value left out)."""
        return without_absent([self.model_dump(mode="json")])[0]

    @property
    def upstream_name(self) -> str:
        """The upstream's own name for this tool (the served name, unless renamed)."""
        return self.transform.upstream if self.transform is not None else self.name


class Provenance(StrictModel):
    """Who wrote the text and from which upstream state; ``card_version`` only grows."""

    generator: str
    generator_version: str
    model: str | None = None
    created_at: str
    server_digest: str
    overrides_digest: str | None = None
    card_version: int = Field(ge=1)


class Signature(StrictModel):
    algorithm: str = "ed25519"
    key_id: str
    value: str


class CardBody(StrictModel):
    """The signed part of a card."""

    format: int = CARD_FORMAT_VERSION
    identity: Identity
    capability: Capability
    tools: tuple[ToolCard, ...]
    provenance: Provenance

    def tool(self, name: str) -> ToolCard | None:
        return next((t for t in self.tools if t.name == name), None)

    def by_upstream(self, name: str) -> ToolCard | None:
        """The tool the upstream lists as ``name`` (served under its own or another name)."""
        return next((t for t in self.tools if t.upstream_name == name), None)

    @property
    def server(self) -> str:
        return self.identity.server

    @property
    def version(self) -> int:
        return self.provenance.card_version

    def json_dict(self) -> dict[str, Any]:
        """The exact JSON value that is canonicalised and signed."""
        data = self.model_dump(mode="json")
        without_absent(data["tools"])
        return data


class Card(StrictModel):
    body: CardBody
    signature: Signature

    @property
    def server(self) -> str:
        return self.body.identity.server

    @property
    def version(self) -> int:
        return self.body.provenance.card_version

    def tool(self, name: str) -> ToolCard | None:
        return self.body.tool(name)

    def json_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        without_absent(data["body"]["tools"])
        return data


__all__ = [
    "CARD_FORMAT_VERSION",
    "MAX_EXAMPLES",
    "Capability",
    "Card",
    "CardBody",
    "HiddenArgument",
    "Identity",
    "Pins",
    "Provenance",
    "Signature",
    "ToolCard",
    "Transform",
]
