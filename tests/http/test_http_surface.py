"""The HTTP surface under attack: Host/Origin, body size, sessions, routing refusals."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from cartograph.config.model import DEFAULT_MAX_BODY_BYTES
from cartograph.server.http import HttpSettings
from tests.http.support import (
    INIT_BODY,
    MCP_HEADERS,
    assemble,
    http_client,
    modern_call,
    serving,
)


def _error_code(response: object) -> str:
    body = response.json()  # type: ignore[attr-defined]
    error = body["error"]
    return str(error.get("data", {}).get("code") or error.get("code"))


@pytest.mark.promise("P-HTTP-1")
def test_a_foreign_origin_gets_403_before_any_json_rpc_processing() -> None:
    built = assemble(("solo",))
    headers, body = modern_call("status", {})
    with serving(built.app) as base, http_client(base) as http:
        response = http.post(
            "/mcp", json=body, headers={**headers, "Origin": "http://evil.example"}
        )
    assert response.status_code == 403
    assert _error_code(response) == "origin_forbidden"
    assert built.per_catalog["solo"].calls == 0


@pytest.mark.promise("P-HTTP-1")
def test_a_foreign_host_gets_421_and_a_missing_origin_is_accepted() -> None:
    built = assemble(("solo",))
    headers, body = modern_call("status", {})
    with serving(built.app) as base, http_client(base) as http:
        rebound = http.post("/mcp", json=body, headers={**headers, "Host": "attacker.example"})
        plain = http.post("/mcp", json=body, headers=headers)
    assert rebound.status_code == 421
    assert plain.status_code == 200, plain.text
    assert built.per_catalog["solo"].calls == 1


@pytest.mark.promise("P-HTTP-1")
def test_an_allow_listed_origin_is_accepted() -> None:
    settings = HttpSettings(allowed_origins=("http://localhost:*",))
    built = assemble(("solo",), settings=settings)
    headers, body = modern_call("status", {})
    with serving(built.app) as base, http_client(base) as http:
        ok = http.post("/mcp", json=body, headers={**headers, "Origin": "http://localhost:6274"})
        other = http.post("/mcp", json=body, headers={**headers, "Origin": "http://localhost.evil"})
    assert ok.status_code == 200
    assert other.status_code == 403


def _padded_call(size: int) -> tuple[dict[str, str], bytes]:
    headers, body = modern_call("status", {"pad": ""})
    bare = len(json.dumps(body).encode())
    body["params"]["arguments"]["pad"] = "x" * (size - bare)
    data = json.dumps(body).encode()
    assert len(data) == size
    return headers, data


@pytest.mark.promise("P-HTTP-3")
def test_a_body_over_the_default_limit_gets_413_with_content_length_and_no_handler_runs() -> None:
    built = assemble(("solo",))
    with serving(built.app) as base, http_client(base) as http:
        headers, over = _padded_call(DEFAULT_MAX_BODY_BYTES + 1)
        refused = http.post("/mcp", content=over, headers=headers)
        headers, under = _padded_call(DEFAULT_MAX_BODY_BYTES)
        accepted = http.post("/mcp", content=under, headers=headers)
    assert refused.status_code == 413
    assert accepted.status_code == 200, accepted.text
    assert built.per_catalog["solo"].calls == 1  # only the request at the limit reached it


@pytest.mark.promise("P-HTTP-3")
def test_a_chunked_body_over_the_limit_gets_413_without_content_length() -> None:
    built = assemble(("solo",))
    headers, over = _padded_call(DEFAULT_MAX_BODY_BYTES + 1)
    _, under = _padded_call(DEFAULT_MAX_BODY_BYTES)

    def chunks(data: bytes) -> Iterator[bytes]:
        for start in range(0, len(data), 64 * 1024):
            yield data[start : start + 64 * 1024]

    with serving(built.app) as base, http_client(base) as http:
        request = http.build_request("POST", "/mcp", content=chunks(over), headers=headers)
        assert "content-length" not in request.headers
        response = http.send(request)
        assert built.per_catalog["solo"].calls == 0
        at_limit = http.build_request("POST", "/mcp", content=chunks(under), headers=headers)
        assert "content-length" not in at_limit.headers
        accepted = http.send(at_limit)
    assert response.status_code == 413
    assert accepted.status_code == 200, accepted.text  # chunked bodies are judged, not refused
    assert built.per_catalog["solo"].calls == 1


def _open_session(http: object, path: str) -> str:
    response = http.post(path, json=INIT_BODY, headers=MCP_HEADERS)  # type: ignore[attr-defined]
    assert response.status_code == 200, response.text
    return str(response.headers["mcp-session-id"])


@pytest.mark.promise("P-HTTP-4")
def test_session_ids_are_256_bit_random_visible_ascii() -> None:
    built = assemble(("solo",))
    with serving(built.app) as base, http_client(base) as http:
        ids = {_open_session(http, "/mcp") for _ in range(4)}
    assert len(ids) == 4
    for sid in ids:
        assert re.fullmatch(r"[0-9a-f]{64}", sid), sid  # 32 random bytes from secrets
        assert all(0x21 <= ord(c) <= 0x7E for c in sid)


@pytest.mark.promise("P-HTTP-4")
def test_unknown_and_terminated_sessions_get_404() -> None:
    built = assemble(("solo",))
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    with serving(built.app) as base, http_client(base) as http:
        sid = _open_session(http, "/mcp")
        live = http.post("/mcp", json=ping, headers={**MCP_HEADERS, "mcp-session-id": sid})
        unknown = http.post("/mcp", json=ping, headers={**MCP_HEADERS, "mcp-session-id": "f" * 64})
        closed = http.delete("/mcp", headers={**MCP_HEADERS, "mcp-session-id": sid})
        after = http.post("/mcp", json=ping, headers={**MCP_HEADERS, "mcp-session-id": sid})
    assert live.status_code == 200
    assert unknown.status_code == 404
    assert closed.status_code in (200, 204)
    assert after.status_code == 404
    # Cartograph's code and advice, not the SDK's bare "Session not found".
    for response in (unknown, after):
        error = response.json()["error"]
        assert error["data"] == {"code": "unknown_session"}
        assert "open a new session (initialize)" in error["message"]


@pytest.mark.promise("P-HTTP-4")
def test_a_session_of_one_catalog_is_unknown_on_another_catalog() -> None:
    built = assemble(("alpha", "beta"))
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    with serving(built.app) as base, http_client(base) as http:
        sid = _open_session(http, "/mcp/alpha")
        elsewhere = http.post(
            "/mcp/beta", json=ping, headers={**MCP_HEADERS, "mcp-session-id": sid}
        )
    assert elsewhere.status_code == 404


@pytest.mark.promise("P-HTTP-5")
def test_a_catalog_query_on_the_routed_mount_is_400() -> None:
    built = assemble(("alpha", "beta"), routed=True)
    with serving(built.app) as base, http_client(base) as http:
        response = http.post("/mcp/routed?catalog=alpha", json=INIT_BODY, headers=MCP_HEADERS)
    assert response.status_code == 400
    assert _error_code(response) == "catalog_on_routed_mount"


def test_a_catalog_path_with_a_conflicting_query_is_400_and_an_agreeing_one_is_served() -> None:
    built = assemble(("alpha", "beta"))
    with serving(built.app) as base, http_client(base) as http:
        conflict = http.post("/mcp/alpha?catalog=beta", json=INIT_BODY, headers=MCP_HEADERS)
        agree = http.post("/mcp/alpha?catalog=alpha", json=INIT_BODY, headers=MCP_HEADERS)
    assert conflict.status_code == 400
    assert _error_code(conflict) == "conflicting_catalog"
    assert agree.status_code == 200


def test_catalog_selection_by_path_by_query_and_bare_mcp() -> None:
    several = assemble(("alpha", "beta"))
    single = assemble(("solo",))
    with serving(several.app) as base, http_client(base) as http:
        by_query = http.post("/mcp?catalog=beta", json=INIT_BODY, headers=MCP_HEADERS)
        bare = http.post("/mcp", json=INIT_BODY, headers=MCP_HEADERS)
        unknown = http.post("/mcp/nope", json=INIT_BODY, headers=MCP_HEADERS)
    with serving(single.app) as base, http_client(base) as http:
        only = http.post("/mcp", json=INIT_BODY, headers=MCP_HEADERS)
    assert by_query.status_code == 200
    assert "cartograph:beta" in by_query.text
    assert bare.status_code == 400
    assert _error_code(bare) == "catalog_required"
    assert unknown.status_code == 404
    assert only.status_code == 200
