"""Audit records hold shapes not values; secrets are redacted; big results are cut."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp.types import CallToolResult, TextContent

from cartograph.gateway.audit import AuditLog, AuditRecord, Redactor, argument_shape, utc_now
from cartograph.gateway.results import TRUNCATION_META_KEY, limit_result


@pytest.mark.promise("P-LOG-2")
def test_argument_shape_keeps_keys_and_types_and_drops_every_value() -> None:
    shape = argument_shape(
        {"path": "/etc/passwd", "n": 3, "deep": {"token": "hunter2", "list": [1.5]}, "f": None}
    )
    assert shape == {
        "deep": {"list": ["number"], "token": "string"},
        "f": "null",
        "n": "integer",
        "path": "string",
    }
    assert "hunter2" not in json.dumps(shape)


@pytest.mark.promise("P-LOG-2")
def test_audit_log_writes_one_json_line_per_record(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    for outcome in ("ok", "upstream_timeout"):
        log.write(
            AuditRecord(
                time=utc_now(),
                catalog="c",
                principal="alice",
                proxy_tool="call",
                server="s",
                tool="t",
                duration_ms=1.0,
                outcome=outcome,
                arguments={"q": "string"},
            )
        )
    lines = (tmp_path / "audit.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["outcome"] for r in records] == ["ok", "upstream_timeout"]
    assert set(records[0]) >= {"time", "catalog", "principal", "server", "tool", "duration_ms"}


@pytest.mark.promise("P-LOG-1")
def test_redactor_removes_configured_secrets_and_bearer_credentials() -> None:
    redact = Redactor(["s3cr3t-value", "Bearer tok-123456"])
    assert redact("env s3cr3t-value and tok-123456") == "env [redacted] and tok-123456"
    from cartograph.config.model import Config, ServerConfig

    config = Config(
        servers=(
            ServerConfig(
                name="x",
                transport="streamable-http",
                url="http://127.0.0.1:1/mcp",
                headers={"Authorization": "Bearer tok-123456"},
            ),
        )
    )
    assert "tok-123456" not in Redactor.from_config(config)("got tok-123456")


@pytest.mark.promise("P-REL-5")
def test_oversized_result_is_truncated_with_an_explicit_marker() -> None:
    result = CallToolResult(content=[TextContent(text="x" * 50_000)], structured_content={"a": 1})
    limited = limit_result(result, 4096)
    assert limited.meta is not None and TRUNCATION_META_KEY in limited.meta
    assert "truncated" in limited.content[-1].text  # type: ignore[union-attr]
    assert len(limited.model_dump_json()) < 4096 + 1024


def test_result_within_the_limit_is_returned_unchanged() -> None:
    result = CallToolResult(content=[TextContent(text="hi")], structured_content={"a": 1})
    assert limit_result(result, 4096) is result
