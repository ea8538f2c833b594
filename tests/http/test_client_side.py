"""connect / doctor / client-status against a real running server, through the CLI in-process."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cartograph.cli.app import EXIT_CONFIG
from cartograph.cli.connect import DEFAULT_TOKEN_ENV, PROJECT_FILE
from cartograph.cli.main import build_app
from cartograph.config.model import HttpConfig, TokenConfig
from cartograph.server.auth import TokenAuthority
from tests.cli.support import error_code
from tests.http.support import INIT_BODY, MCP_HEADERS, assemble, http_client, serving

THREE = ("alpha", "beta", "gamma")
OTHER = {"command": sys.executable, "args": ["-V"]}  # a server doctor finds startable
runner = CliRunner()


def _cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(build_app(), list(args))
    return result.exit_code, result.output


def _connect(base: str, client_file: Path) -> tuple[str, ...]:
    return ("connect", "--url", base, "--client", "claude-code", "--target", str(client_file))


def _entries(path: Path) -> dict[str, dict[str, Any]]:
    return dict(json.loads(path.read_text())["mcpServers"])


def test_connect_doctor_and_a_mode_switch_reported_not_healed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    client_file = tmp_path / ".mcp.json"
    client_file.write_text(json.dumps({"mcpServers": {"other": OTHER}}))

    with serving(assemble(THREE).app) as base:
        port = int(base.rsplit(":", 1)[1])
        code, out = _cli(
            "connect", "--url", base, "--client", "claude-code", "--target", str(client_file)
        )
        assert code == 0, out
        per_catalog = _entries(client_file)
        assert per_catalog["cartograph-beta"] == {"type": "http", "url": f"{base}/mcp/beta"}
        assert set(per_catalog) == {
            "other",
            "cartograph-alpha",
            "cartograph-beta",
            "cartograph-gamma",
        }
        recorded = json.loads((tmp_path / PROJECT_FILE).read_text())["connections"][0]
        assert recorded["server_mount_mode"] == "per-catalog"
        assert recorded["server_routed_path"] is None

        code, out = _cli("doctor", "--json")
        assert code == 0, out
        assert {f["problem"] for f in json.loads(out)} == {"ok"}

        broken = {k: v for k, v in per_catalog.items() if k != "cartograph-alpha"}
        broken["cartograph-beta"] = {"type": "http", "url": f"{base}/mcp/old"}
        client_file.write_text(json.dumps({"mcpServers": broken}))
        code, out = _cli("doctor", "--json")
        problems = {f["entry"]: f["problem"] for f in json.loads(out)}
        assert code == 1
        assert problems["cartograph-alpha"] == "missing"
        assert problems["cartograph-beta"] == "stale"
        code, out = _cli("client-status")
        assert code == 0 and "still per-catalog" in out

    # the operator switches the same server to routed mode
    with serving(assemble(THREE, routed=True).app, port=port) as base:
        before = client_file.read_text()
        code, out = _cli("client-status")
        assert code == 1
        assert "mount mode changed: per-catalog -> routed" in out
        assert f"cartograph connect --url {base} --client claude-code" in out
        assert client_file.read_text() == before  # reported, not healed

        code, out = _cli(
            "connect", "--url", base, "--client", "claude-code", "--target", str(client_file)
        )
        assert code == 0, out
        assert _entries(client_file) == {
            "other": OTHER,
            "cartograph": {"type": "http", "url": f"{base}/mcp/routed"},
        }
        recorded = json.loads((tmp_path / PROJECT_FILE).read_text())["connections"][0]
        assert (recorded["server_mount_mode"], recorded["server_routed_path"]) == (
            "routed",
            "/mcp/routed",
        )
        assert _cli("doctor")[0] == 0
        assert _cli("client-status")[0] == 0


def test_doctor_without_a_project_file_says_to_connect_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(build_app(), ["doctor"])
    assert result.exit_code == EXIT_CONFIG
    assert error_code(result) == "no_client_project"


ALICE = "token-for-alice-0123456789abcdef"


def _auth_server(*, routed: bool) -> Any:
    http = HttpConfig(tokens=(TokenConfig(principal="alice", token_env="ALICE_TOKEN"),))
    authority = TokenAuthority.from_config(http, {"ALICE_TOKEN": ALICE})
    return assemble(THREE, routed=routed, authority=authority).app


@pytest.mark.parametrize("routed", [False, True], ids=["per-catalog", "routed"])
def test_connect_to_a_server_that_requires_auth_writes_a_bearer_placeholder_never_the_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, routed: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ALICE_TOKEN", ALICE)
    client_file = tmp_path / ".mcp.json"
    with serving(_auth_server(routed=routed)) as base:
        code, out = _cli(*_connect(base, client_file), "--token-env", "ALICE_TOKEN")
        assert code == 0, out
        assert "ALICE_TOKEN" in out
        entries = _entries(client_file)
        assert entries  # one routed entry, or one per catalog
        for entry in entries.values():
            assert entry["headers"] == {"Authorization": "Bearer ${ALICE_TOKEN}"}
        for written in (client_file, tmp_path / PROJECT_FILE):
            assert ALICE not in written.read_text()
        assert _cli("doctor")[0] == 0

        # the entry, expanded the way the client expands it, is accepted; without it, 401
        name, entry = sorted(entries.items())[0]
        header = entry["headers"]["Authorization"].replace("${ALICE_TOKEN}", ALICE)
        with http_client(base) as http:
            path = entry["url"].removeprefix(base)
            refused = http.post(path, json=INIT_BODY, headers=MCP_HEADERS)
            accepted = http.post(
                path, json=INIT_BODY, headers={**MCP_HEADERS, "Authorization": header}
            )
        assert refused.status_code == 401
        assert accepted.status_code == 200, accepted.text

        # an entry that lost its header is stale: doctor says so
        entries[name] = {k: v for k, v in entry.items() if k != "headers"}
        client_file.write_text(json.dumps({"mcpServers": entries}))
        code, out = _cli("doctor", "--json")
        assert code == 1
        assert {f["entry"]: f["problem"] for f in json.loads(out)}[name] == "stale"


def test_connect_without_a_token_env_names_the_default_variable_in_the_client_dialect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    client_file = tmp_path / ".vscode" / "mcp.json"
    with serving(_auth_server(routed=True)) as base:
        code, out = _cli(
            "connect", "--url", base, "--client", "vscode", "--target", str(client_file)
        )
        assert code == 0, out
    entry = json.loads(client_file.read_text())["servers"]["cartograph"]
    assert entry == {
        "type": "http",
        "url": f"{base}/mcp/routed",
        "headers": {"Authorization": f"Bearer ${{env:{DEFAULT_TOKEN_ENV}}}"},
    }


def test_connect_to_a_server_without_auth_writes_no_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    client_file = tmp_path / ".mcp.json"
    with serving(assemble(THREE, routed=True).app) as base:
        assert _cli(*_connect(base, client_file), "--token-env", "ANY")[0] == 0
    assert "headers" not in _entries(client_file)["cartograph"]
