"""OAuth without dynamic client registration, against the real local authorization server.

Many hosted servers offer no dynamic client registration (DCR). The MCP authorization
spec's order is followed: a client the operator registered beforehand
(``oauth.client_id``, its secret from a variable or a file), then a client ID metadata
document where the server's metadata says it accepts them
(``oauth.client_metadata_url``), then DCR; with none possible, ``auth login`` refuses
with ``oauth_no_registration``, saying what to set. The authorization server is
``tests/helpers/oauth_upstream.py`` with DCR turned off (``--no-dcr``), told of one
pre-registered client or of one metadata document; the login, the ``call`` through
``cartograph serve`` and the refresh are the same real path as ``test_oauth.py``'s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cartograph.config.loader import load_config
from cartograph.errors import ConfigError
from cartograph.gateway.audit import Redactor
from cartograph.gateway.secret_scan import SecretScan
from cartograph.upstream.oauth import TokenFile
from tests.helpers.serving import free_port, wait_for
from tests.upstream.oauth_support import CLI, UPSTREAM, answers, call_through_serve, login

pytestmark = pytest.mark.integration

CLIENT_ID = "cartograph-preregistered"
SECRET = "s3cr3t-issued-by-the-provider-Xk29"
DOCUMENT_URL = "https://client.example/cartograph/oauth-client.json"


@contextmanager
def authorization_server(tmp_path: Path, *flags: str) -> Iterator[str]:
    """The OAuth-protected MCP server with ``flags``; yields its MCP URL."""
    port = free_port()
    command = [sys.executable, str(UPSTREAM), "--port", str(port), "--log", str(log(tmp_path))]
    process = subprocess.Popen(
        [*command, *flags], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    try:
        assert wait_for(lambda: answers(f"{base}/.well-known/oauth-authorization-server"), 30)
        yield f"{base}/mcp"
    finally:
        process.kill()
        process.wait(timeout=10)


def log(tmp_path: Path) -> Path:
    return tmp_path / "grants.jsonl"


def events(tmp_path: Path) -> list[tuple[str, str | None]]:
    lines = log(tmp_path).read_text().splitlines() if log(tmp_path).exists() else []
    return [(e["event"], e.get("client_id")) for e in map(json.loads, lines)]


def write_config(tmp_path: Path, url: str, port: int, oauth: str = "") -> Path:
    path = tmp_path / "cartograph.toml"
    path.write_text(
        f'state_dir = "{tmp_path / "state"}"\n\n[index]\nembedder = "fake"\n\n'
        f'[servers.saas]\nurl = "{url}"\nauth = "oauth"\nprotocol = "legacy"\n\n'
        f'[servers.saas.oauth]\nredirect_port = {port}\nscopes = ["mcp"]\n{oauth}'
    )
    return path


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, env=dict(os.environ), timeout=120
    )


def registration(config: Path) -> str | None:
    done = cli("auth", "status", "--json", "--config", str(config))
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)
    return str(row["registration"]) if row["registration"] else None


def expire(tmp_path: Path) -> TokenFile:
    store = TokenFile(tmp_path / "state" / "oauth" / "saas.json")
    data = store.read()
    data["expires_at"] = time.time() - 60
    store.path.write_text(json.dumps(data))
    return store


@pytest.mark.anyio
@pytest.mark.promise("P-AUTH-6")
@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
async def test_a_preregistered_client_logs_in_and_refreshes_with_dcr_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    port = free_port()
    secret_file = tmp_path / "issued-secret"
    secret_file.write_text(SECRET + "\n")
    flags = ("--no-dcr", "--client", CLIENT_ID, "--redirect-uri")
    redirect = f"http://127.0.0.1:{port}/callback"
    secret_flags = ("--client-secret-file", str(secret_file), "--client-auth", method)
    with authorization_server(tmp_path, *flags, redirect, *secret_flags) as url:
        monkeypatch.setenv("SAAS_CLIENT_SECRET", SECRET)
        oauth = (
            f'client_id = "{CLIENT_ID}"\nclient_secret_env = "SAAS_CLIENT_SECRET"\n'
            f'token_endpoint_auth_method = "{method}"\n'
        )
        config = write_config(tmp_path, url, port, oauth)
        printed, err = login(config)
        assert events(tmp_path) == [("authorization_code", CLIENT_ID)]  # nothing registered
        assert registration(config) == "pre-registered"
        store_text = (tmp_path / "state" / "oauth" / "saas.json").read_text()
        assert SECRET not in store_text + printed + err  # the secret is never written

        expire(tmp_path)
        assert await call_through_serve(config) == "authorized"
        assert events(tmp_path)[-1] == ("refresh_token", CLIENT_ID)

        # An upstream that echoes the token it got: that serve's own refresh made it, and
        # the secret scan knows it by exact value (the redactor re-reads the token store).
        expire(tmp_path)
        leaked = await call_through_serve(config, "leak")
        assert events(tmp_path)[-1] == ("refresh_token", CLIENT_ID)
        current = await TokenFile(tmp_path / "state" / "oauth" / "saas.json").get_tokens()
        assert current is not None and current.access_token not in leaked
        assert leaked == "debug: called with [redacted secret: Operator Credential]"


def test_without_dcr_or_a_client_login_is_refused_saying_what_to_set(tmp_path: Path) -> None:
    port = free_port()
    with authorization_server(tmp_path, "--no-dcr") as url:
        config = write_config(tmp_path, url, port)
        done = cli("auth", "login", "saas", "--no-browser", "--config", str(config))
    assert done.returncode != 0
    assert "error (oauth_no_registration)" in done.stderr, done.stderr
    assert "oauth.client_id" in done.stderr and f"127.0.0.1:{port}/callback" in done.stderr
    assert "Traceback" not in done.stderr and "ExceptionGroup" not in done.stderr
    assert "no registration_endpoint" in done.stderr  # read from its metadata: never sent
    assert events(tmp_path) == []
    assert done.stdout == ""  # no authorization URL for a client that does not exist


def test_a_metadata_document_is_used_where_the_server_accepts_them(tmp_path: Path) -> None:
    port = free_port()
    config = write_config(
        tmp_path, "http://127.0.0.1:9/mcp", port, f'client_metadata_url = "{DOCUMENT_URL}"\n'
    )
    document = cli("auth", "client-metadata", "saas", "--config", str(config))
    assert document.returncode == 0, document.stderr
    served = json.loads(document.stdout)
    assert served["client_id"] == DOCUMENT_URL
    assert served["redirect_uris"] == [f"http://127.0.0.1:{port}/callback"]
    assert served["token_endpoint_auth_method"] == "none"
    (tmp_path / "document.json").write_text(document.stdout)

    flags = ("--no-dcr", "--cimd-document", str(tmp_path / "document.json"))
    with authorization_server(tmp_path, *flags) as url:
        config = write_config(tmp_path, url, port, f'client_metadata_url = "{DOCUMENT_URL}"\n')
        login(config)
        assert registration(config) == "client-id-metadata-document"
        assert events(tmp_path) == [
            ("metadata_document", DOCUMENT_URL),
            ("authorization_code", DOCUMENT_URL),
        ]
        expire(tmp_path)
        done = cli("servers", "--json", "--config", str(config))
        assert done.returncode == 0, done.stderr
        assert events(tmp_path)[-1] == ("refresh_token", DOCUMENT_URL)


def test_dcr_is_the_fallback_when_the_server_does_not_accept_documents(tmp_path: Path) -> None:
    port = free_port()
    with authorization_server(tmp_path) as url:
        config = write_config(tmp_path, url, port, f'client_metadata_url = "{DOCUMENT_URL}"\n')
        login(config)
    assert [event for event, _client in events(tmp_path)] == ["register", "authorization_code"]
    assert registration(config) == "dynamic"


def test_a_preregistered_client_comes_before_a_metadata_document(tmp_path: Path) -> None:
    port = free_port()
    (tmp_path / "document.json").write_text(json.dumps({"client_id": DOCUMENT_URL}))
    flags = ("--client", CLIENT_ID, "--redirect-uri", f"http://127.0.0.1:{port}/callback")
    with authorization_server(
        tmp_path, *flags, "--cimd-document", str(tmp_path / "document.json")
    ) as url:
        oauth = f'client_id = "{CLIENT_ID}"\nclient_metadata_url = "{DOCUMENT_URL}"\n'
        login(write_config(tmp_path, url, port, oauth))
    assert events(tmp_path) == [("authorization_code", CLIENT_ID)]


@pytest.mark.promise("P-AUTH-6")
def test_a_client_secret_written_in_the_config_is_refused(tmp_path: Path) -> None:
    config = write_config(
        tmp_path, "http://127.0.0.1:9/mcp", 9, f'client_id = "x"\nclient_secret = "{SECRET}"\n'
    )
    with pytest.raises(ConfigError) as refused:
        load_config(config)
    assert refused.value.code == "oauth_bad_client"
    assert "client_secret_env" in str(refused.value)
    assert SECRET not in str(refused.value)


@pytest.mark.parametrize(
    "oauth",
    [
        'client_secret_env = "X"\n',  # a secret without its client
        'client_id = "x"\nclient_secret_env = "X"\nclient_secret_file = "f"\n',
        'client_id = "x"\ntoken_endpoint_auth_method = "client_secret_post"\n',
        'client_metadata_url = "http://client.example/doc.json"\n',  # not https
        'client_metadata_url = "https://client.example/"\n',  # no path
    ],
)
def test_client_settings_that_do_not_fit_together_are_refused_at_load(
    tmp_path: Path, oauth: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(write_config(tmp_path, "http://127.0.0.1:9/mcp", 9, oauth))
    assert refused.value.code == "oauth_bad_client"


def test_a_missing_client_secret_is_refused_before_the_login_starts(tmp_path: Path) -> None:
    oauth = f'client_id = "{CLIENT_ID}"\nclient_secret_file = "absent-secret"\n'
    config = write_config(tmp_path, "http://127.0.0.1:9/mcp", free_port(), oauth)
    done = cli("auth", "login", "saas", "--no-browser", "--config", str(config))
    assert done.returncode != 0 and done.stdout == ""
    assert "error (oauth_client_secret_missing)" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.promise("P-AUTH-6")
def test_a_client_secret_is_one_of_the_operator_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redacted from logs and audit records, and found by the secret scan by exact value."""
    monkeypatch.setenv("SAAS_CLIENT_SECRET", SECRET)
    oauth = f'client_id = "{CLIENT_ID}"\nclient_secret_env = "SAAS_CLIENT_SECRET"\n'
    config = load_config(write_config(tmp_path, "http://127.0.0.1:9/mcp", 9, oauth))
    scan = SecretScan.of(Redactor.from_config(config))
    assert scan.kinds({"note": f"the secret is {SECRET}"}) == ("Operator Credential",)


def test_a_login_after_switching_to_a_preregistered_client_gets_its_own_tokens(
    tmp_path: Path,
) -> None:
    """Tokens another client obtained cannot be refreshed by this one: the login drops them."""
    port = free_port()
    flags = ("--client", CLIENT_ID, "--redirect-uri", f"http://127.0.0.1:{port}/callback")
    with authorization_server(tmp_path, *flags) as url:
        login(write_config(tmp_path, url, port))
        assert registration(tmp_path / "cartograph.toml") == "dynamic"
        config = write_config(tmp_path, url, port, f'client_id = "{CLIENT_ID}"\n')
        login(config)
        assert registration(config) == "pre-registered"
    assert events(tmp_path)[-1] == ("authorization_code", CLIENT_ID)


def test_a_client_secret_gone_at_connect_fails_that_server_with_its_code(tmp_path: Path) -> None:
    oauth = f'client_id = "{CLIENT_ID}"\nclient_secret_env = "SAAS_SECRET_NOT_SET_HERE"\n'
    config = write_config(tmp_path, "http://127.0.0.1:9/mcp", free_port(), oauth)
    done = cli("servers", "--json", "--config", str(config))
    (server,) = json.loads(done.stdout)["servers"]
    assert server["error"]["code"] == "oauth_client_secret_missing"
    assert "SAAS_SECRET_NOT_SET_HERE" in server["error"]["message"]
