"""D187's configuration rules: prefixes, the reserved name, the mount-mode channels."""

from __future__ import annotations

import pytest

from cartograph.config.catalogs import (
    MOUNT_MODE_ENV,
    resolve_catalogs,
    resolve_mount_mode,
)
from cartograph.config.model import CatalogConfig, Config, HttpConfig, ServerConfig
from cartograph.errors import ConfigError

SERVERS = (ServerConfig(name="s1", command="x"), ServerConfig(name="s2", command="y"))


def _config(*catalogs: CatalogConfig, mode: str = "per-catalog") -> Config:
    return Config(servers=SERVERS, catalogs=catalogs, http=HttpConfig(mount_mode=mode))


def test_an_explicit_prefix_with_routing_on_in_config_is_fatal_naming_catalog_and_key() -> None:
    with pytest.raises(ConfigError) as caught:
        _config(
            CatalogConfig(name="ops", tool_prefix="ops_"),
            CatalogConfig(name="dev"),
            mode="routed",
        )
    assert caught.value.code == "prefix_with_routing"
    assert "'ops'" in caught.value.message
    assert 'catalogs[name="ops"].tool_prefix' in caught.value.message


def test_an_explicit_prefix_is_fatal_when_routing_comes_from_the_env_or_the_flag() -> None:
    config = _config(CatalogConfig(name="ops", tool_prefix="o_"), CatalogConfig(name="dev"))
    for mode in (
        resolve_mount_mode(None, config, {MOUNT_MODE_ENV: "routed"}),
        resolve_mount_mode("routed", config, {}),
    ):
        with pytest.raises(ConfigError) as caught:
            resolve_catalogs(config, mode)
        assert caught.value.code == "prefix_with_routing"


def test_the_derived_prefix_applies_with_two_catalogs_and_routing_does_not_fail_over_it() -> None:
    config = _config(CatalogConfig(name="ops-a"), CatalogConfig(name="dev"))
    for mode in ("per-catalog", "routed"):
        resolved = resolve_catalogs(config, mode)
        assert [(c.tool_prefix, c.prefix_source) for c in resolved] == [
            ("ops_a_", "derived"),
            ("dev_", "derived"),
        ]


def test_one_catalog_has_no_prefix_and_no_catalogs_means_one_default_with_every_server() -> None:
    [only] = resolve_catalogs(_config(CatalogConfig(name="solo")), "per-catalog")
    [default] = resolve_catalogs(_config(), "routed")
    assert only.tool_prefix is None
    assert default.name == "default"
    assert [s.name for s in default.servers] == ["s1", "s2"]


@pytest.mark.promise("P-HTTP-5")
def test_a_catalog_named_routed_is_refused_while_routing_is_on() -> None:
    with pytest.raises(ConfigError) as caught:
        _config(CatalogConfig(name="routed"), mode="routed")
    assert caught.value.code == "catalog_name_reserved"
    config = _config(CatalogConfig(name="routed"), CatalogConfig(name="dev"))
    with pytest.raises(ConfigError) as raised:
        resolve_catalogs(config, resolve_mount_mode(None, config, {MOUNT_MODE_ENV: "routed"}))
    assert raised.value.code == "catalog_name_reserved"
    assert [c.name for c in resolve_catalogs(config, "per-catalog")] == ["routed", "dev"]


def test_mount_mode_precedence_is_flag_then_env_then_config_and_junk_is_refused() -> None:
    config = _config(mode="routed")
    assert resolve_mount_mode(None, config, {}) == "routed"
    assert resolve_mount_mode(None, config, {MOUNT_MODE_ENV: "per-catalog"}) == "per-catalog"
    assert resolve_mount_mode("routed", config, {MOUNT_MODE_ENV: "per-catalog"}) == "routed"
    with pytest.raises(ConfigError) as caught:
        resolve_mount_mode(None, config, {MOUNT_MODE_ENV: "route"})
    assert caught.value.code == "bad_mount_mode"


def test_catalog_names_must_be_url_safe_unique_and_name_real_servers() -> None:
    cases = [
        ((CatalogConfig(name="Has Space"),), "bad_catalog_name"),
        ((CatalogConfig(name="a"), CatalogConfig(name="a")), "duplicate_catalog"),
        ((CatalogConfig(name="a", servers=("ghost",)),), "unknown_catalog_server"),
        ((CatalogConfig(name="a", tool_prefix="bad prefix"),), "bad_tool_prefix"),
    ]
    for catalogs, code in cases:
        with pytest.raises(ConfigError) as caught:
            _config(*catalogs)
        assert caught.value.code == code
