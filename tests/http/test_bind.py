"""Where the server listens: loopback by default; beyond it only on purpose, with auth."""

from __future__ import annotations

import socket

import pytest

from cartograph.config.model import Config, HttpConfig, TokenConfig
from cartograph.errors import ConfigError
from cartograph.server.auth import TokenAuthority
from cartograph.server.http import check_bind, run_http
from cartograph.server.http.serve import bind_socket

pytestmark = pytest.mark.anyio

TOKENS = HttpConfig(tokens=(TokenConfig(principal="p", token_env="T"),))
ENV = {"T": "a-long-enough-token-value-0123456789"}


@pytest.mark.promise("P-HTTP-2")
def test_the_default_bind_is_loopback() -> None:
    assert Config().http.host == "127.0.0.1"
    check_bind("127.0.0.1", allow_remote=False, authority=TokenAuthority(), allowed_hosts=())
    check_bind("::1", allow_remote=False, authority=TokenAuthority(), allowed_hosts=())


@pytest.mark.promise("P-HTTP-2")
def test_a_non_loopback_bind_needs_the_flag_and_then_auth() -> None:
    no_auth = TokenAuthority()
    with_auth = TokenAuthority.from_config(TOKENS, ENV)
    cases = [
        ("10.1.2.3", False, with_auth, "remote_bind_needs_flag"),
        ("10.1.2.3", True, no_auth, "remote_bind_needs_auth"),
        ("0.0.0.0", True, with_auth, "allowed_hosts_required"),
    ]
    for host, flag, authority, code in cases:
        with pytest.raises(ConfigError) as caught:
            check_bind(host, allow_remote=flag, authority=authority, allowed_hosts=())
        assert caught.value.code == code
    check_bind("10.1.2.3", allow_remote=True, authority=with_auth, allowed_hosts=())


@pytest.mark.promise("P-HTTP-2")
async def test_serving_refuses_a_remote_bind_without_auth_before_touching_upstreams() -> None:
    started: list[str] = []

    def never(*_args: object) -> object:
        started.append("surfaces")
        raise AssertionError("no catalog may start")

    with pytest.raises(ConfigError) as caught:
        await run_http(
            Config(), host="0.0.0.0", port=0, allow_remote=True, environ={}, surfaces=never
        )
    assert caught.value.code == "remote_bind_needs_auth"
    assert started == []


def test_the_bound_socket_accepts_connections_before_the_server_runs() -> None:
    """The URL is announced ("serving on URL") right after the bind, before uvicorn starts.

    So the socket must already listen then: a client started on the
    announcement (``cartograph connect --url``, a harness) queues in the
    backlog until the server accepts. A bound socket that did not listen yet
    refused it, which under load failed ``connect`` with "Connection refused".
    """
    sock = bind_socket("127.0.0.1", 0)
    try:
        with socket.create_connection(sock.getsockname()[:2], timeout=5):
            pass
    finally:
        sock.close()
