"""The secret scan's rules and redaction, in memory (served: tests/server/test_secret_scan.py).

The rules are detect-secrets' own expressions; what this file holds to is what
Cartograph adds: the literal prefilter and the screen never skip an ASCII text their
expression matches (checked against strings hypothesis generates from each
expression), so that the screened scan finds exactly what the expressions run as
detect-secrets runs them find (over a corpus: this repository's docs and sources, with
a secret of each format put in), the excluded plugins stay out, and redaction replaces
the secret part only.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)

from cartograph.gateway.detectors import EXCLUDED_PLUGINS, Rule, detectors, prefilter, screen
from cartograph.gateway.secret_scan import MARKER, OPERATOR_CREDENTIAL, SecretScan

RULES = detectors().rules
ASCII = st.characters(min_codepoint=32, max_codepoint=126)
ROOT = Path(__file__).resolve().parents[2]
FAKE_SECRETS = (  # one of each format, all fake (documentation examples and made-up values)
    "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_key = 'wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEYab'",
    "AKCp8jQ2v9b3kXyZ1aB2cD3eF4gH5iJ6kL7mN8oP",
    "AP6xq2Zc9Lw3Rt7Yb1",
    "AccountKey=" + "a1B2" * 22,
    "https://bob:hunter2pass@example.com/path",
    "M" + "a" * 23 + "." + "b" * 6 + "." + "c" * 27,
    "ghp_" + "x1Y2z3" * 6,
    "glpat-" + "abcdEFGH1234" * 2,
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
    "0123456789abcdef0123456789abcdef-us12",
    "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnop",
    "sk-proj" + "a" * 20 + "T3BlbkFJ" + "b" * 20,
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    "SG." + "a" * 22 + "." + "b" * 43,
    "xoxb-1234567890-0987654321-abcdefghijkl",
    "sq0csp-" + "a" * 43,
    "sk_live_" + "a1B2c3D4" * 3,
    "123456789:" + "AAbbCCddEEffGGhhIIjjKKllMMnnOOppQQr",
    "AC" + "0123456789abcdef" * 2,
    "SK" + "0123456789abcdef" * 2,
    "https://admin:" + "0123456789abcdef" * 4 + "@acct.cloudant.com",
    "https://api.softlayer.com/soap/v3/" + "a1b2c3d4" * 8,
    "pypi-AgEIcHlwaS5vcmc" + "AbC-_dEf90" * 7,
    "akiaiosfodnn7example sk" + "0123456789ABCDEF" * 2,  # case matters to these formats
)


def unscreened(text: str) -> list[tuple[str, int, int]]:
    """What the rules find run as detect-secrets runs them: each expression over the whole
    text, no prefilter, no screen."""
    plain = [dataclasses.replace(rule, needs=(), screen=None) for rule in RULES]
    return sorted((rule.kind, start, end) for rule in plain for start, end in rule.spans(text))


def corpus() -> dict[str, str]:
    """This repository's docs and the scan's own sources, and prose with every format in it."""
    files = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    files += sorted((ROOT / "src" / "cartograph" / "gateway").glob("*.py"))
    texts = {str(f.relative_to(ROOT)): f.read_text(encoding="utf-8") for f in files}
    prose = texts["docs/gateway.md"][:4000]
    for separator in (" ", "\n", '"', "=", ":"):
        texts[f"secrets joined by {separator!r}"] = prose + separator.join(FAKE_SECRETS)
    texts["a JSON listing"] = json.dumps(
        [{"id": i, "title": f"issue {i}", "url": f"https://x.test/{i}"} for i in range(300)]
    )
    return texts


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.kind}:{r.pattern.pattern[:24]}")
def test_the_screens_never_skip_an_ascii_text_the_expression_matches(rule: Rule) -> None:
    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        st.from_regex(rule.pattern, alphabet=ASCII),
        st.text(alphabet=ASCII, max_size=20),
        st.text(alphabet=ASCII, max_size=20),
    )
    def check(found: str, before: str, after: str) -> None:
        text = before + found + after
        if rule.pattern.search(text):
            assert rule.admits(text)
            assert rule.screen is None or rule.screen.search(text) is not None
            assert sorted(detectors().find(text)) == unscreened(text)

    check()


def test_the_screened_scan_finds_what_the_plain_expressions_find_over_a_corpus() -> None:
    found_kinds: set[str] = set()
    for name, text in corpus().items():
        expected = unscreened(text)
        assert sorted(detectors().find(text)) == expected, name
        found_kinds.update(kind for kind, _start, _end in expected)
    assert found_kinds == set(detectors().kinds)  # every format is in it, not only clean text


def test_case_minding_formats_are_screened_by_their_literals_as_written() -> None:
    by_source = {rule.pattern.pattern: rule for rule in RULES}
    twilio = by_source["SK[a-z0-9]{32}"]
    assert twilio.needs == (frozenset({"SK"}),) and not twilio.folded
    assert not twilio.admits("a task list, skipped")  # "sk" in lower case is not "SK"
    telegram = next(r for r in RULES if r.kind == "Telegram Bot Token")
    assert telegram.screen is not None and telegram.screen.pattern is None  # a compiled tail
    assert telegram.screen.search("time: 10:30, id: 42") is None


def test_every_format_plugin_is_used_and_the_excluded_ones_are_not() -> None:
    kinds = set(detectors().kinds)
    for kind in ("AWS Access Key", "Private Key", "GitHub Token", "Slack Token", "JSON Web Token"):
        assert kind in kinds
    for kind in ("Secret Keyword", "Base64 High Entropy String", "Public IP (ipv4)"):
        assert kind not in kinds
    assert "IPPublicDetector" in EXCLUDED_PLUGINS
    assert not any(r.pattern.pattern.startswith("(?:(?<=\\W)|(?<=^))") for r in RULES)


def test_a_prefilter_asks_for_the_literals_a_format_must_hold() -> None:
    assert prefilter(re.compile(r"(?:\s|=|:|^)AKC[a-zA-Z0-9]{10,}")) == (frozenset({"AKC"}),)
    assert prefilter(re.compile(r"AWS.{0,3}Key", re.I)) == (
        frozenset({"aws"}),
        frozenset({"key"}),
    )
    assert prefilter(re.compile(r"X(?i:abc)")) == (frozenset({"X"}),)  # case-blind part: none
    assert prefilter(re.compile(r"[a-z]+")) == ()  # nothing to ask: the rule always runs


def test_a_screen_is_the_expression_from_its_first_literal_on() -> None:
    tail = screen(re.compile(r"\d{8,10}:[0-9A-Za-z_-]{35}"))
    assert tail is not None and tail.search("12:" + "a" * 35) and not tail.search("12:34")
    assert screen(re.compile(r"AKC[a-z]+")) is None  # it starts with its literal already
    assert screen(re.compile(r"(a+)x\1")) is None  # the tail refers back to a group


def test_redaction_replaces_only_the_secret_part_and_names_its_class() -> None:
    scan = SecretScan(["operator-canary-42"])
    text, kinds = scan.redact("see https://bob:hunter2pass@example.com, and operator-canary-42")
    assert text == (
        "see https://bob:[redacted secret: Basic Auth Credentials]@example.com, and "
        "[redacted secret: Operator Credential]"
    )
    assert list(kinds) == ["Basic Auth Credentials", OPERATOR_CREDENTIAL]


def test_a_private_key_header_takes_the_whole_string_with_it() -> None:
    block = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH"
    text, kinds = SecretScan().redact(f"here it is:\n{block}")
    assert text == MARKER.format(kind="Private Key")
    assert list(kinds) == ["Private Key"]


def test_a_jwt_must_decode_to_be_reported() -> None:
    valid = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"
    assert SecretScan().kinds({"token": valid}) == ("JSON Web Token",)
    assert SecretScan().kinds({"token": "eyJnot.eyJjson.at-all"}) == ()


def test_a_clean_result_comes_back_as_the_same_object() -> None:
    result = CallToolResult(
        content=[TextContent(text="plain words")], structured_content={"a": ["b"]}
    )
    assert SecretScan(["canary-value"]).call_result(result, redact=True) == (result, ())
    assert SecretScan().call_result(result, redact=True)[0] is result


def test_text_blocks_embedded_text_and_structured_content_are_redacted_binary_is_not() -> None:
    key = "AKIAIOSFODNN7EXAMPLE"
    image = ImageContent(data="QUtJQUlPU0ZPRE5ON0VYQU1QTEU=", mime_type="image/png")
    embedded = EmbeddedResource(resource=TextResourceContents(uri="mem://x", text=f"k {key}"))
    result = CallToolResult(
        content=[TextContent(text=key), embedded, image], structured_content={key: [key]}
    )
    redacted, kinds = SecretScan().call_result(result, redact=True)
    marker = MARKER.format(kind="AWS Access Key")
    assert kinds == ("AWS Access Key",)
    assert redacted.structured_content == {marker: [marker]}
    text_block, embedded_block, image_block = redacted.content
    assert isinstance(text_block, TextContent) and text_block.text == marker
    assert isinstance(embedded_block, EmbeddedResource)
    assert isinstance(embedded_block.resource, TextResourceContents)
    assert embedded_block.resource.text == f"k {marker}"
    assert image_block is image
    audited, seen = SecretScan().call_result(result, redact=False)
    assert audited is result and seen == ("AWS Access Key",)
