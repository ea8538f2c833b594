"""Secrets that never leave (P-SEC-1): both directions of call, resources/read and prompts/get.

Through a real runtime over real upstreams: the scriptable stdio server for
``call`` (its ``count`` tool says how many calls reached it), the Python-SDK
content server for resources and prompts. The fake secrets are the documented
examples of their formats (AWS's own ``AKIAIOSFODNN7EXAMPLE``), never real ones.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp.types import TextContent, TextResourceContents

from cartograph.config.model import CatalogPolicy, ServerConfig
from cartograph.config.secret_policy import SecretPolicy
from cartograph.errors import PolicyError
from cartograph.gateway.audit import kept_records
from cartograph.server.handlers import ProxyHandlers
from tests.helpers.support import scriptable
from tests.server.support import call, code, running, text

pytestmark = pytest.mark.anyio

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n"
    "-----END RSA PRIVATE KEY-----\n"
)
OPERATOR_TOKEN = "op-canary-token-9c4e1f27b3"
CONTENT = Path(__file__).resolve().parents[1] / "helpers" / "content.py"
ECHO_URI = "cartograph://default/content/mem://echo/"


def _audited(handlers: ProxyHandlers, policy: SecretPolicy) -> ProxyHandlers:
    """The same runtime's catalog, served under another secret policy."""
    return ProxyHandlers(handlers.runtime, catalog="default", policy=CatalogPolicy(secrets=policy))


async def _count(handlers: ProxyHandlers, server: str) -> str:
    return text(await call(handlers, server, "count"))


@pytest.mark.promise("P-SEC-1")
@pytest.mark.parametrize(
    ("attack", "secret", "kind"),
    [
        ("aws_key_in_arguments", AWS_KEY, "AWS Access Key"),
        ("private_key_block", PRIVATE_KEY, "Private Key"),
    ],
)
async def test_a_secret_in_call_arguments_is_refused_before_any_upstream_io(
    tmp_path: Path, attack: str, secret: str, kind: str
) -> None:
    async with running(tmp_path, scriptable("up")) as h:
        refused = await call(h, "up", "echo", text=f"please store {secret} for later")
        assert code(refused) == "secret_in_arguments", attack
        assert secret.splitlines()[1 if "\n" in secret else 0] not in json.dumps(
            refused.model_dump(mode="json")
        )
        assert refused.structured_content is not None
        assert refused.structured_content["error"]["secrets"] == [kind]
        assert await _count(h, "up") == "1"  # the refused call never reached the upstream
        (record, _count_record) = kept_records(h.audit)
        assert record.outcome == "secret_in_arguments"
        assert record.secrets == {"arguments": (kind,)}
        assert secret not in repr(record)


@pytest.mark.promise("P-SEC-1")
async def test_an_operator_credential_in_arguments_is_refused_by_its_exact_value(
    tmp_path: Path,
) -> None:
    server = scriptable("up", env={"SECRET_TOKEN": OPERATOR_TOKEN})
    async with running(tmp_path, server) as h:
        refused = await call(h, "up", "echo", text=f"the token is {OPERATOR_TOKEN}")
        assert code(refused) == "secret_in_arguments"
        assert OPERATOR_TOKEN not in json.dumps(refused.model_dump(mode="json"))
        assert await _count(h, "up") == "1"


@pytest.mark.promise("P-SEC-1")
async def test_an_operator_env_secret_echoed_back_by_the_upstream_is_redacted(
    tmp_path: Path,
) -> None:
    server = scriptable("leaky", env={"SECRET_TOKEN": OPERATOR_TOKEN})
    async with running(tmp_path, server) as h:
        answered = await call(h, "leaky", "secret", succeed=True)  # a success, not an error
        assert not answered.is_error
        assert text(answered) == "your token is [redacted secret: Operator Credential]"
        assert answered.structured_content == {"token": "[redacted secret: Operator Credential]"}
        (record,) = kept_records(h.audit)
        assert record.outcome == "ok"
        assert record.secrets == {"result": ("Operator Credential",)}


@pytest.mark.promise("P-SEC-1")
async def test_a_result_carrying_a_secret_is_redacted_and_the_record_names_only_its_class(
    tmp_path: Path,
) -> None:
    audit_file = tmp_path / "audit.jsonl"
    async with running(tmp_path, scriptable("up"), audit_log=audit_file) as h:
        passing = _audited(h, SecretPolicy(arguments="audit"))  # let the key go up, to come back
        answered = await call(passing, "up", "echo", text=f"key={AWS_KEY} ok")
        assert text(answered) == "key=[redacted secret: AWS Access Key] ok"
        assert answered.structured_content == {"echo": "key=[redacted secret: AWS Access Key] ok"}
    (line,) = audit_file.read_text("utf-8").splitlines()
    record = json.loads(line)
    assert record["outcome"] == "ok"
    assert record["secrets"] == {"arguments": ["AWS Access Key"], "result": ["AWS Access Key"]}
    assert AWS_KEY not in line


@pytest.mark.promise("P-SEC-1")
async def test_audit_mode_passes_the_secret_and_records_its_class_not_its_value(
    tmp_path: Path,
) -> None:
    audit_file = tmp_path / "audit.jsonl"
    async with running(tmp_path, scriptable("up"), audit_log=audit_file) as h:
        audited = _audited(h, SecretPolicy(arguments="audit", results="audit"))
        answered = await call(audited, "up", "echo", text=AWS_KEY)
        assert text(answered) == AWS_KEY  # audit: the operator chose to let it through
    (line,) = audit_file.read_text("utf-8").splitlines()
    assert json.loads(line)["secrets"] == {
        "arguments": ["AWS Access Key"],
        "result": ["AWS Access Key"],
    }
    assert AWS_KEY not in line


async def test_a_call_without_secrets_is_answered_unchanged_and_recorded_as_before(
    tmp_path: Path,
) -> None:
    audit_file = tmp_path / "audit.jsonl"
    async with running(tmp_path, scriptable("up"), audit_log=audit_file) as h:
        answered = await call(h, "up", "echo", text="nothing to see")
        assert text(answered) == "nothing to see"
    (line,) = audit_file.read_text("utf-8").splitlines()
    assert "secrets" not in json.loads(line)


# -- resources/read and prompts/get ------------------------------------------------------


def _content_server() -> ServerConfig:
    return ServerConfig(
        name="content", command=sys.executable, args=(str(CONTENT),), connect_timeout=30.0
    )


@pytest.mark.promise("P-SEC-1")
async def test_a_secret_in_a_resource_uri_or_prompt_argument_is_refused_before_it_is_read(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, _content_server()) as h:
        with pytest.raises(PolicyError) as read:
            await h.read_resource(f"{ECHO_URI}{AWS_KEY}", principal=None)
        assert read.value.code == "secret_in_arguments"
        with pytest.raises(PolicyError) as rendered:
            await h.get_prompt("content/greet", {"name": AWS_KEY}, principal=None)
        assert rendered.value.code == "secret_in_arguments"
        assert AWS_KEY not in read.value.message + rendered.value.message
        records = kept_records(h.audit)
        assert [r.secrets for r in records] == [{"arguments": ("AWS Access Key",)}] * 2
        assert [r.outcome for r in records] == ["secret_in_arguments"] * 2
        assert AWS_KEY not in repr(records)  # the record names the URI redacted


@pytest.mark.promise("P-SEC-1")
async def test_a_secret_in_a_resource_or_prompt_result_is_redacted(tmp_path: Path) -> None:
    async with running(tmp_path, _content_server()) as h:
        passing = _audited(h, SecretPolicy(arguments="audit"))
        read = await passing.read_resource(f"{ECHO_URI}{AWS_KEY}", principal=None)
        (contents,) = read.contents
        assert isinstance(contents, TextResourceContents)
        assert contents.text == "echo: [redacted secret: AWS Access Key]"
        prompt = await passing.get_prompt("content/greet", {"name": AWS_KEY}, principal=None)
        (message,) = prompt.messages
        assert isinstance(message.content, TextContent)
        assert AWS_KEY not in message.content.text
        assert "[redacted secret: AWS Access Key]" in message.content.text
        records = kept_records(h.audit)
        assert [r.secrets for r in records] == [
            {"arguments": ("AWS Access Key",), "result": ("AWS Access Key",)}
        ] * 2
