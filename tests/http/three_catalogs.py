"""Three catalogs over one HTTP upstream, two tokens: shared by the gateway and metrics tests."""

from __future__ import annotations

from pathlib import Path

from cartograph.config.model import (
    CatalogConfig,
    CatalogPolicy,
    Config,
    HttpConfig,
    IndexConfig,
    ServerConfig,
    TokenConfig,
)

TOKEN = "cartograph-client-token-0123456789abcdef"
SCOPED = "cartograph-alpha-only-token-0123456789ab"
ENV = {"CARTO_TOKEN": TOKEN, "ALPHA_TOKEN": SCOPED}
UPSTREAM_KEY = "upstream-own-credential-42"


def three_catalogs(state: Path, upstream_url: str, *, tokens: bool = True) -> Config:
    server = ServerConfig(
        name="echo",
        transport="streamable-http",
        url=upstream_url,
        headers={"X-Upstream-Key": UPSTREAM_KEY},
    )
    token_cfg = (
        (
            TokenConfig(principal="carol", token_env="CARTO_TOKEN"),
            TokenConfig(principal="alice", token_env="ALPHA_TOKEN", catalogs=("alpha",)),
        )
        if tokens
        else ()
    )
    return Config(
        state_dir=state,
        servers=(server,),
        index=IndexConfig(embedder="fake"),
        catalogs=(
            CatalogConfig(name="alpha", servers=("echo",)),
            CatalogConfig(
                name="beta",
                servers=("echo",),
                policy=CatalogPolicy(proxy_tools=("discover", "status")),
            ),
            CatalogConfig(
                name="gamma", servers=("echo",), policy=CatalogPolicy(deny=("echo/add",))
            ),
        ),
        http=HttpConfig(tokens=token_cfg),
    )
