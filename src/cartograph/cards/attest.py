"""Attestation: generator text + drift pins + provenance → signed, verified cards.

``build_body`` is the one place a card body is assembled, so the offline
path (:func:`attest_with_unsafe_throwaway_key`) and ``cartograph bootstrap`` produce the same
shape. :func:`attest_with_unsafe_throwaway_key` signs with an ephemeral key and then runs
the *normal* verification path, so offline flows (eval, ``rift --catalog``,
``stubs --catalog``, tests) only ever see verified cards too.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from urllib.parse import urlsplit

from cartograph import error_codes as codes
from cartograph.cards.digest import server_digest, tool_digest, tool_pins
from cartograph.cards.generators.base import CardGenerator, GeneratorInfo, ServerText
from cartograph.cards.generators.template import TemplateGenerator
from cartograph.cards.keys import SigningKey
from cartograph.cards.model import CardBody, Identity, Provenance, ToolCard
from cartograph.cards.signing import sign_card, verify_card
from cartograph.cards.transforms import Reshaped
from cartograph.cards.trust import TrustSet
from cartograph.cards.verified import VerifiedCards
from cartograph.catalog.model import Catalog, ServerDef, ToolDef
from cartograph.config.model import ServerConfig
from cartograph.errors import GeneratorError


def now_utc() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def identity_for(server: ServerDef, config: ServerConfig | None = None) -> Identity:
    """Who the card speaks for. Endpoints never carry secrets (no env, headers or query)."""
    if config is not None:
        endpoint = (
            _safe_url(config.url) if config.url else " ".join((config.command or "", *config.args))
        )
        return Identity(
            server=server.name,
            transport=config.transport,
            endpoint=endpoint.strip(),
            publisher=config.publisher or server.publisher,
        )
    return Identity(
        server=server.name,
        transport=server.transport or "stdio",
        endpoint=_safe_url(server.endpoint) if server.endpoint else "",
        publisher=server.publisher,
    )


def _safe_url(url: str) -> str:
    parts = urlsplit(url)
    if not parts.scheme:
        return url
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def build_body(
    server: ServerDef,
    text: ServerText,
    info: GeneratorInfo,
    *,
    version: int,
    identity: Identity | None = None,
    created_at: str | None = None,
    overrides_digest: str | None = None,
    reshaped: Mapping[str, Reshaped] | None = None,
) -> CardBody:
    """Assemble one server's card body from generator text and the served definitions.

    ``reshaped`` (by upstream tool name, from ``cards/transforms.py``) gives a
    tool's served definition and transform; ``text`` is then keyed by served
    names. The pins are always the upstream definition's.
    """
    shapes = {t.name: _shape(t, reshaped) for t in server.tools}
    missing = [
        shape.served.name for shape in shapes.values() if shape.served.name not in text.tools
    ]
    if missing:
        raise GeneratorError(
            f"generator {info.name} wrote no text for {server.name!r} tools {missing[:5]}",
            code=codes.GENERATOR_INCOMPLETE,
        )
    tools = tuple(_tool_card(tool, shapes[tool.name], text) for tool in server.tools)
    return CardBody(
        identity=identity or identity_for(server),
        capability=text.capability,
        tools=tools,
        provenance=Provenance(
            generator=info.name,
            generator_version=info.version,
            model=info.model,
            created_at=created_at or now_utc(),
            server_digest=server_digest(server),
            overrides_digest=overrides_digest,
            card_version=version,
        ),
    )


def _shape(tool: ToolDef, reshaped: Mapping[str, Reshaped] | None) -> Reshaped:
    found = reshaped.get(tool.name) if reshaped is not None else None
    return found if found is not None else Reshaped(tool)


def _tool_card(tool: ToolDef, shape: Reshaped, text: ServerText) -> ToolCard:
    served = shape.served
    written = text.tools[served.name]
    return ToolCard(
        name=served.name,
        description=written.description,
        arguments=written.arguments,
        when_to_use=written.when_to_use,
        synonyms=written.synonyms,
        examples=written.examples,
        example=written.example,
        vouched_name=written.vouched_name,
        input_schema=written.input_schema or served.input_schema,
        output_schema=tool.output_schema,
        digest=tool_digest(tool),
        pins=tool_pins(tool),
        transform=shape.transform,
    )


def attest_with_unsafe_throwaway_key(
    catalog: Catalog,
    generator: CardGenerator | None = None,
    *,
    texts: Mapping[str, ServerText] | None = None,
) -> VerifiedCards:
    """Generate, sign with a fresh ephemeral key, and verify cards for every server.

    For offline flows only: the key never leaves this function, so these
    cards cannot be confused with an operator's persisted cards.
    """
    generator = generator or TemplateGenerator()
    written = dict(texts) if texts is not None else generator.describe_all(catalog.servers)
    key = SigningKey.generate()
    trust = TrustSet.of(key.public)
    created = now_utc()
    verified = []
    for server in catalog.servers:
        body = build_body(
            server, written[server.name], generator.info, version=1, created_at=created
        )
        card = sign_card(body, key)
        verified.append((card, verify_card(card, trust, expected_server=server.name)))
    return VerifiedCards(verified)
