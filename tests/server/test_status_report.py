"""What `status` shows: real values where nothing is secret, and why a card is missing.

Issue 13 finding 10: every env value was treated as a secret, so with ``stdio``
and ``error`` among the demo's env values, ``status`` printed
``"transport": "[redacted]"``; and a card refused at load showed as
``"card": null`` with no reason (it was ``bad_signature``; with the signed
manifest it is now ``card_not_in_manifest``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from cartograph.cards.drift import DriftReport
from cartograph.cards.store import CardStore
from cartograph.cli.main import build_app
from cartograph.config.loader import load_config
from cartograph.config.model import Config
from cartograph.gateway.gateway import Gateway
from cartograph.index.serving import serving_cards
from cartograph.server.runtime.catalog import CatalogRuntime
from cartograph.server.runtime.catalog_status import CatalogFacts, catalog_status
from cartograph.server.status_view import compact_status
from tests.helpers.support import scriptable, toml_for
from tests.server.support import call, running, text

TOKEN = "tok-canary-91ab27"
DECLARED = "declared-secret-5521"


@pytest.mark.anyio
@pytest.mark.promise("P-LOG-1")
async def test_status_shows_stdio_although_stdio_and_error_are_env_values(tmp_path: Path) -> None:
    server = scriptable(
        "calc",
        env={"MODE": "stdio", "LOG_LEVEL": "error", "SECRET_TOKEN": TOKEN, "PLAIN": DECLARED},
        secret_env=("PLAIN",),
    )
    async with running(tmp_path, server) as h:
        leaked = await call(h, "calc", "secret")  # the upstream puts SECRET_TOKEN in its error
        report = h.runtime.status()
    rendered = json.dumps(report)
    assert report["servers"][0]["transport"] == "stdio"
    assert "[redacted]" not in rendered
    assert TOKEN not in text(leaked) and "[redacted secret: Operator Credential]" in text(leaked)
    assert TOKEN not in rendered and DECLARED not in rendered


def test_redaction_follows_the_names_of_secrets_not_every_value() -> None:
    from cartograph.config.model import Config, ServerConfig
    from cartograph.gateway.audit import Redactor

    server = ServerConfig(
        name="s",
        transport="streamable-http",
        url="http://127.0.0.1:1/mcp",
        env={
            "MODE": "stdio",
            "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp-aaaa",
            "DB_URL": "postgres://app:hunter22@db/x",
            "OPENAI_API_KEY": "sk-bbbb",
            "OTHER": "cccc-declared",
        },
        secret_env=("OTHER",),
        headers={"Authorization": "Bearer hdr-dddd", "X-Trace": "trace-eeee"},
    )
    redact = Redactor.from_config(Config(servers=(server,)))
    kept = "stdio mode"
    gone = "ghp-aaaa postgres://app:hunter22@db/x sk-bbbb cccc-declared hdr-dddd trace-eeee"
    assert redact(kept) == kept
    assert redact(gone) == " ".join(["[redacted]"] * 6)


async def _status_of(config: Config) -> dict[str, Any]:
    runtime = await CatalogRuntime.start(config, config.servers)
    try:
        return runtime.status()
    finally:
        await runtime.aclose()


@pytest.mark.promise("P-SIG-3")
def test_status_names_why_a_tampered_card_was_not_loaded(tmp_path: Path) -> None:
    state = tmp_path / "state"
    path = tmp_path / "cartograph.toml"
    path.write_text(toml_for(state, scriptable("calc"), scriptable("spare")), encoding="utf-8")
    runner = CliRunner()
    for args in (("keys", "init", "--config", str(path)), ("bootstrap", "--config", str(path))):
        done = runner.invoke(build_app(), list(args))
        assert done.exit_code == 0, done.output
    [card_file] = (state / "cards").glob("spare*")
    card = json.loads(card_file.read_text("utf-8"))
    card["body"]["tools"][0]["description"] += " (edited)"
    card_file.write_text(json.dumps(card), encoding="utf-8")
    report = anyio.run(_status_of, load_config(path))
    server = next(s for s in report["servers"] if s["name"] == "spare")
    [problem] = compact_status(report)["problems"]  # what the agent's `status` shows
    # the tamper is caught by the signed manifest (or, without one, the signature)
    why = server["card_error"]["code"]
    assert why in {"card_not_in_manifest", "bad_signature"}
    assert problem["card"] == why
    assert "cartograph bootstrap --server spare" in problem["fix"]
    assert server["card"] is None
    assert "cartograph cards verify" in server["card_error"]["fix"]


def test_status_of_manifest_pinned_cards_reads_no_card_file(tmp_path: Path) -> None:
    state = tmp_path / "state"
    path = tmp_path / "cartograph.toml"
    path.write_text(toml_for(state, scriptable("calc"), scriptable("spare")), encoding="utf-8")
    for args in (("keys", "init", "--config", str(path)), ("bootstrap", "--config", str(path))):
        done = CliRunner().invoke(build_app(), list(args))
        assert done.exit_code == 0, done.output
    config = load_config(path)
    store = CardStore(state)
    expected = {s: store.read(s) for s in ("calc", "spare")}
    cards = serving_cards(config, expected)  # pinned by the manifest, parsed on first use
    for server in expected:  # a status that parsed a card would now fail on it
        store.path_for(server).write_bytes(b"{}")
    facts = CatalogFacts(
        name="default",
        servers={s.name: s for s in config.servers},
        cards=cards,
        card_errors={},
        drift=DriftReport(),
        listed=(),
        unchecked=(),
        gateway=Gateway(config.gateway, config.servers).snapshot(),
        started_at=0.0,
    )

    report = catalog_status(facts)

    for server in report["servers"]:
        card = expected[server["name"]]
        assert server["tools"]["attested"] == len(card.body.tools)
        assert server["card"] == {
            "version": card.version,
            "signer": card.signature.key_id,
            "generator": card.body.provenance.generator,
            "created_at": card.body.provenance.created_at,
        }
