"""Config objects cannot be built invalid, and never show a secret in their repr.

The loader checks files; these check the models themselves, so a ``ServerConfig`` built in
code (a test, a stub runtime, the demo) holds the same invariants as one read from TOML.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from cartograph.config.model import Config, ServerConfig
from cartograph.errors import CartographError, ConfigError, NameCollisionError


def refused(**fields: Any) -> str:
    with pytest.raises(ConfigError) as caught:
        ServerConfig(**fields)
    return caught.value.code


def test_a_server_with_neither_command_nor_url_is_refused() -> None:
    assert refused(name="x") == "config_missing_command"


def test_a_server_with_both_command_and_url_is_refused() -> None:
    assert refused(name="x", command="srv", url="http://h/mcp") == "config_conflicting_transport"


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"transport": "stdio", "url": "http://h/mcp"}, "config_missing_command"),
        ({"transport": "stdio", "command": "  "}, "config_missing_command"),
        ({"transport": "sse", "command": "srv"}, "config_bad_url"),
        ({"transport": "streamable-http", "url": "ftp://h/mcp"}, "config_bad_url"),
        ({"url": "/relative/mcp"}, "config_bad_url"),
    ],
)
def test_a_transport_that_does_not_match_its_endpoint_is_refused(
    fields: dict[str, Any], code: str
) -> None:
    assert refused(name="x", **fields) == code


def test_the_transport_follows_the_endpoint_when_not_given() -> None:
    assert ServerConfig(name="a", command="srv").transport == "stdio"
    assert ServerConfig(name="b", url="http://h/mcp").transport == "streamable-http"
    assert ServerConfig(name="c", url="http://h/sse").transport == "sse"


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("", "config_bad_name"),
        ("-x", "config_bad_name"),
        ("a/b", "config_bad_name"),
        ("x" * 65, "config_bad_name"),
        ("Discover", "config_reserved_name"),
        ("call", "config_reserved_name"),
    ],
)
def test_a_bad_or_reserved_server_name_is_refused(name: str, code: str) -> None:
    assert refused(name=name, command="srv") == code


def test_a_config_with_one_server_name_twice_is_refused() -> None:
    twice = (ServerConfig(name="a", command="x"), ServerConfig(name="a", command="y"))
    with pytest.raises(ConfigError) as caught:
        Config(servers=twice)
    assert caught.value.code == "config_duplicate_server"


def test_a_config_with_two_names_equal_after_normalisation_is_refused() -> None:
    pair = (
        ServerConfig(name="my-server", command="x"),
        ServerConfig(name="my_server", command="y"),
    )
    with pytest.raises(NameCollisionError) as caught:
        Config(servers=pair)
    assert caught.value.code == "name_collision"


def test_the_model_error_names_the_server_and_the_key() -> None:
    with pytest.raises(CartographError) as caught:
        ServerConfig(name="git", transport="sse", url="nope")
    assert "'git'" in caught.value.message and "'url'" in caught.value.message
    assert caught.value.details == {"server": "git", "key": "url"}


SECRETS = ("ghp-aaaa", "hunter22", "sk-bbbb", "tok-123456", "s3cr3t-header", "pw-in-url")


def leaky_server() -> ServerConfig:
    return ServerConfig(
        name="s",
        url="https://bot:pw-in-url@example.com/mcp",
        env={
            "MODE": "stdio",
            "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp-aaaa",
            "DB_URL": "postgres://app:hunter22@db/x",
            "PLAIN_NAME": "sk-bbbb",
        },
        secret_env=("PLAIN_NAME",),
        headers={"Authorization": "Bearer tok-123456", "X-Api": "s3cr3t-header"},
    )


def test_server_repr_masks_secret_env_values_every_header_and_url_passwords() -> None:
    server = leaky_server()
    for text in (repr(server), str(server), repr(Config(servers=(server,)))):
        assert not [s for s in SECRETS if s in text], text
        assert "'MODE': 'stdio'" in text  # harmless values stay readable
        assert "Authorization" in text and "https://bot:***@example.com/mcp" in text


def test_masking_is_only_in_the_repr() -> None:
    server = leaky_server()
    assert server.env["GITHUB_PERSONAL_ACCESS_TOKEN"] == "ghp-aaaa"
    assert server.model_dump()["headers"]["Authorization"] == "Bearer tok-123456"


def test_a_validation_error_never_echoes_the_input() -> None:
    with pytest.raises(ValidationError) as caught:
        ServerConfig(name="s", command="x", headers={"Authorization": ["tok-123456"]})
    assert "tok-123456" not in str(caught.value)
