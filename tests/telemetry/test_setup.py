"""Turning traces on: the optional extra, the config section, the standard OTEL_* variables.

Cartograph imports and serves without ``cartograph[otel]``; asking for traces
without it is ``otel_not_installed`` naming the install command. "Without the
extra" is reproduced the way Python sees a missing distribution: its modules
cannot be imported (``sys.modules[name] = None`` makes every import of them
fail), in a fresh interpreter so nothing was imported before.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from cartograph import error_codes as codes
from cartograph.config.loader import load_config
from cartograph.errors import ConfigError
from cartograph.telemetry import start_tracing
from cartograph.telemetry.logs import JsonFormatter, request_fields
from cartograph.telemetry.tracing import INSTALL_HINT, disabled, traces_endpoint
from tests.helpers.support import SCRIPTABLE

WITHOUT_EXTRA = (
    "import sys\n"
    "for name in ('opentelemetry.sdk', 'opentelemetry.exporter'):\n"
    "    sys.modules[name] = None\n"
)


def run_without_extra(body: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRA + body, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "CARTOGRAPH_CONFIG": ""},
        check=False,
    )


def write_config(tmp_path: Path, telemetry: str) -> Path:
    path = tmp_path / "cartograph.toml"
    path.write_text(
        "\n".join(
            [
                f'state_dir = "{tmp_path / "state"}"',
                "[index]",
                'embedder = "fake"',
                "[servers.faults]",
                f'command = "{sys.executable}"',
                f'args = ["{SCRIPTABLE}"]',
                'protocol = "legacy"',
                telemetry,
                "",
            ]
        ),
        encoding="utf-8",
    )
    return path


CLI = "from cartograph.cli.main import main\nsys.argv = ['cartograph', *sys.argv[1:]]\nmain()\n"


def test_asking_for_traces_without_the_extra_is_otel_not_installed_naming_the_install(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, "[telemetry]\ntraces = true")
    done = run_without_extra(CLI, "serve", "--config", str(config), cwd=tmp_path)
    assert done.returncode == 3  # a configuration the install cannot honour
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error ({codes.OTEL_NOT_INSTALLED}):")
    assert INSTALL_HINT in last


def test_without_the_extra_a_call_runs_through_the_gateway_as_before(tmp_path: Path) -> None:
    config = write_config(tmp_path, "")
    arguments = json.dumps({"text": "hello"})
    done = run_without_extra(
        CLI,
        "call", "faults", "echo", arguments, "--config", str(config), "--unsafe-throwaway-key",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hello"


def test_start_tracing_without_the_sdk_raises_a_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk", None)
    with pytest.raises(ConfigError) as caught:
        start_tracing(endpoint=None, service_name=None, sample_ratio=1.0, timeout=1.0, environ={})
    assert caught.value.code == codes.OTEL_NOT_INSTALLED


@pytest.mark.parametrize(
    ("configured", "environ", "expected"),
    [
        (None, {}, "http://localhost:4318/v1/traces"),
        (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "http://collector:4318/v1/traces"),
        (None, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:9/x"}, "http://c:9/x"),
        ("http://file:4318/", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:1"}, "http://file:4318/v1/traces"),
        ("http://file:4318/v1/traces", {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://env:1/t"}, "http://file:4318/v1/traces"),
    ],
)  # fmt: skip
def test_the_file_wins_and_the_standard_variables_fill_in_the_endpoint(
    configured: str | None, environ: Mapping[str, str], expected: str
) -> None:
    assert traces_endpoint(configured, environ) == expected


def test_an_otel_endpoint_variable_that_is_not_an_http_url_is_telemetry_endpoint() -> None:
    with pytest.raises(ConfigError) as caught:
        traces_endpoint(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "grpc://collector:4317"})
    assert caught.value.code == codes.TELEMETRY_ENDPOINT
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in caught.value.message


def test_otel_sdk_disabled_turns_tracing_off() -> None:
    assert disabled({"OTEL_SDK_DISABLED": "true"})
    assert not disabled({"OTEL_SDK_DISABLED": "false"})
    assert not disabled({})


@pytest.mark.parametrize(
    "section",
    [
        '[telemetry]\nendpoint = "collector:4318"',
        "[telemetry]\nsample_ratio = 1.5",
        "[telemetry]\ntraces = true\nbogus = 1",
        '[logging]\nformat = "yaml"',
    ],
)
def test_a_bad_telemetry_or_logging_section_is_refused_at_load(
    tmp_path: Path, section: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write_config(tmp_path, section))
    assert caught.value.code in (codes.CONFIG_INVALID, codes.CONFIG_UNKNOWN_KEY)


def test_the_telemetry_and_logging_sections_load(tmp_path: Path) -> None:
    section = (
        '[telemetry]\ntraces = true\nendpoint = "http://127.0.0.1:4318"\nsample_ratio = 0.25\n'
        '[logging]\nformat = "json"'
    )
    config = load_config(write_config(tmp_path, section))
    assert config.telemetry.traces and config.telemetry.sample_ratio == 0.25
    assert config.logging.format == "json"


def record(message: str, **extra: object) -> logging.LogRecord:
    made = logging.getLogger("cartograph.test").makeRecord(
        "cartograph.test", logging.WARNING, __file__, 1, message, (), None
    )
    made.__dict__.update(extra)
    return made


def test_a_json_log_line_holds_the_request_fields_and_the_error_code() -> None:
    with request_fields(request_id="7", method="tools/call"):
        from cartograph.telemetry import annotate

        annotate(catalog="alpha", server="files", tool="read", outcome="upstream_timeout")
        line = json.loads(JsonFormatter().format(record("slow upstream")))
    assert line["message"] == "slow upstream"
    assert (line["level"], line["logger"]) == ("WARNING", "cartograph.test")
    assert {k: line[k] for k in ("request_id", "method", "catalog", "server", "tool")} == {
        "request_id": "7",
        "method": "tools/call",
        "catalog": "alpha",
        "server": "files",
        "tool": "read",
    }
    assert line["code"] == "upstream_timeout"
    assert "trace_id" not in line  # tracing is off in this process


def test_a_json_log_line_outside_a_request_has_only_the_base_fields_and_an_explicit_code() -> None:
    line = json.loads(JsonFormatter().format(record("line\nbreak", code="storage")))
    assert set(line) == {"time", "level", "logger", "message", "code"}
    assert line["code"] == "storage"
