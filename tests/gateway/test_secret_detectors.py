"""The secret scan's rules and redaction, in memory (served: tests/server/test_secret_scan.py).

The rules are detect-secrets' own expressions; what this file holds to is what
Cartograph adds: the literal prefilter never skips an ASCII text its expression
matches (checked against strings hypothesis generates from each expression), the
excluded plugins stay out, and redaction replaces the secret part only.
"""

from __future__ import annotations

import re

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

from cartograph.gateway.detectors import EXCLUDED_PLUGINS, Rule, detectors, prefilter
from cartograph.gateway.secret_scan import MARKER, OPERATOR_CREDENTIAL, SecretScan

RULES = detectors().rules
ASCII = st.characters(min_codepoint=32, max_codepoint=126)


def _admitted(rule: Rule, text: str) -> bool:
    lowered = text.lower()
    return all(any(literal in lowered for literal in group) for group in rule.needs)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.kind}:{r.pattern.pattern[:24]}")
def test_the_prefilter_never_skips_an_ascii_text_its_expression_matches(rule: Rule) -> None:
    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        st.from_regex(rule.pattern, alphabet=ASCII),
        st.text(alphabet=ASCII, max_size=20),
        st.text(alphabet=ASCII, max_size=20),
    )
    def check(found: str, before: str, after: str) -> None:
        text = before + found + after
        if rule.pattern.search(text):
            assert _admitted(rule, text)

    check()


def test_every_format_plugin_is_used_and_the_excluded_ones_are_not() -> None:
    kinds = set(detectors().kinds)
    for kind in ("AWS Access Key", "Private Key", "GitHub Token", "Slack Token", "JSON Web Token"):
        assert kind in kinds
    for kind in ("Secret Keyword", "Base64 High Entropy String", "Public IP (ipv4)"):
        assert kind not in kinds
    assert "IPPublicDetector" in EXCLUDED_PLUGINS
    assert not any(r.pattern.pattern.startswith("(?:(?<=\\W)|(?<=^))") for r in RULES)


def test_a_prefilter_asks_for_the_literals_a_format_must_hold() -> None:
    assert prefilter(re.compile(r"(?:\s|=|:|^)AKC[a-zA-Z0-9]{10,}")) == (frozenset({"akc"}),)
    assert prefilter(re.compile(r"[a-z]+")) == ()  # nothing to ask: the rule always runs


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
