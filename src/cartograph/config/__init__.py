"""Configuration: the TOML file, the standard ``mcpServers`` JSON, typed models."""

from cartograph.config.model import (
    CatalogConfig,
    CatalogPolicy,
    Config,
    ServerConfig,
)

__all__ = ["CatalogConfig", "CatalogPolicy", "Config", "ServerConfig"]
