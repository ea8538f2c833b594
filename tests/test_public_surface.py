"""Each package's public surface is drawn in its ``__init__`` and pinned here (as httpx does).

Changing what a package exports is a decision: it changes this list, and
docs/architecture.md names the same contract.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import cartograph

EXPORTS: dict[str, list[str]] = {
    "cartograph.calls": ["STEPS", "Call", "CallRequest", "run_call", "validate_arguments"],
    "cartograph.cards": [
        "Capability",
        "Card",
        "CardBody",
        "Identity",
        "Pins",
        "Provenance",
        "Signature",
        "ToolCard",
        "VerifiedCards",
    ],
    "cartograph.catalog": ["Catalog", "ServerDef", "ToolDef", "load_catalog", "save_catalog"],
    "cartograph.cli": ["app"],
    "cartograph.codemode": [
        "Federation",
        "RunId",
        "RunReport",
        "Sandbox",
        "SandboxTool",
        "check_request",
        "run_program",
    ],
    "cartograph.config": [
        "CatalogConfig",
        "CatalogPolicy",
        "Config",
        "ServerConfig",
        "load_config",
    ],
    "cartograph.demo": ["FederationView", "run_demo"],
    "cartograph.eval": ["EvalReport", "evaluate"],
    "cartograph.gateway": ["AuditLog", "Gateway", "Redactor"],
    "cartograph.index": ["DiscoverResult", "Embedder", "ToolIndex", "discover", "get_embedder"],
    "cartograph.learning": [
        "CatalogLearning",
        "SqliteUsageStore",
        "open_learning",
        "usage_log_path",
    ],
    "cartograph.rift": ["RiftSettings", "RiftTool", "analyse", "run_rift", "tools_from_cards"],
    "cartograph.server": ["CatalogRuntime", "build_proxy_server"],
    "cartograph.storage": ["open_audit", "open_usage_store", "uses_database"],
    "cartograph.stubs": [
        "DEFAULT_PACKAGE",
        "Skipped",
        "StubPackage",
        "generate_stubs",
        "write_stubs",
    ],
    "cartograph.telemetry": [
        "JsonFormatter",
        "Tracing",
        "annotate",
        "finish",
        "inject",
        "parent_from",
        "request_fields",
        "span",
        "start_tracing",
    ],
    "cartograph.upstream": [
        "FederationResult",
        "ServerReport",
        "UpstreamSession",
        "connect_federation",
        "load_catalog_for",
        "load_snapshot",
    ],
}

PINNED_ELSEWHERE: dict[str, str] = {
    "cartograph.error_codes": (
        "its face is REGISTRY and every code's constant, a name per registered code; "
        "tests/test_error_codes.py pins those names to the registry and the docs"
    ),
}
"""Packages whose face is pinned by a test of its own instead of a list here."""


def test_every_package_is_pinned() -> None:
    root = Path(cartograph.__file__).parent
    packages = {f"cartograph.{m.name}" for m in pkgutil.iter_modules([str(root)]) if m.ispkg}
    assert packages == set(EXPORTS) | set(PINNED_ELSEWHERE)
    assert not set(EXPORTS) & set(PINNED_ELSEWHERE)


@pytest.mark.parametrize("package", sorted(PINNED_ELSEWHERE))
def test_a_package_pinned_elsewhere_declares_no_all_that_would_hide_its_names(
    package: str,
) -> None:
    """Its names come from star imports of private area modules: public as long as no
    ``__all__`` narrows them, as type checkers read a library's face."""
    assert not hasattr(importlib.import_module(package), "__all__")


@pytest.mark.parametrize("package", sorted(EXPORTS))
def test_the_package_exports_exactly_its_contract(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == EXPORTS[package]


@pytest.mark.parametrize("package", sorted(EXPORTS))
def test_every_exported_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"


def _architecture_rows() -> dict[str, list[str]]:
    """``{module: names}`` from the package table of docs/architecture.md."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text("utf-8")
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and re.fullmatch(r"`\w+(/|\.py)`", cells[0]):
            unit = cells[0].strip("`").removesuffix("/").removesuffix(".py")
            rows[f"cartograph.{unit}"] = re.findall(r"`(\w+)`", cells[2])
    return rows


def test_the_architecture_table_names_each_package_s_exports() -> None:
    rows = _architecture_rows()
    assert {name: rows.get(name) for name in EXPORTS} == EXPORTS


def test_the_architecture_table_names_only_real_root_module_names() -> None:
    for module, names in _architecture_rows().items():
        found = importlib.import_module(module)
        assert [n for n in names if not hasattr(found, n)] == [], module
