from __future__ import annotations

import keyword

import pytest

from cartograph.stubs.naming import Namespace, class_name, identifier, module_name


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("get-weather", "get_weather"),
        ("getWeather", "getWeather"),
        ("from", "from_"),
        ("None", "None_"),
        ("9to5mac", "x_9to5mac"),
        ("_private", "private"),
        ("a.b c/d", "a_b_c_d"),
        ("Café", "Cafe"),
    ],
)
def test_identifier_makes_upstream_names_valid_python(raw: str, expected: str) -> None:
    assert identifier(raw) == expected


def test_identifier_of_a_name_without_ascii_is_stable_and_valid() -> None:
    first, second = identifier("名字", prefix="arg"), identifier("名字", prefix="arg")
    assert first == second
    assert first.isidentifier() and first.isascii() and first.startswith("arg_")
    assert identifier("名前", prefix="arg") != first


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        ("MCP Yahoo Finance", "mcp_yahoo_finance"),
        ("Bazi MCP (八字 MCP) by Cantian AI", "bazi_mcp_mcp_by_cantian_ai"),
        ("12306-mcp", "server_12306_mcp"),
        ("import", "import_"),
    ],
)
def test_module_names_are_lower_case_identifiers(server: str, expected: str) -> None:
    assert module_name(server) == expected


def test_module_name_is_never_a_keyword() -> None:
    for word in keyword.kwlist:
        name = module_name(word)
        assert name.isidentifier() and not keyword.iskeyword(name)


def test_class_names_are_camel_case_from_name_pieces() -> None:
    assert class_name("get_weather", "location", "item") == "GetWeatherLocationItem"
    assert class_name("shapes", "9lives") == "Shapes9lives"
    assert class_name("9lives").isidentifier()


def test_namespace_suffixes_taken_and_reserved_names_in_claim_order() -> None:
    names = Namespace({"list"})
    assert [names.claim(n) for n in ("a", "a", "list", "a")] == ["a", "a_2", "list_2", "a_3"]
    assert "a_3" in names
