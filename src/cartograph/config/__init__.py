"""Configuration: the TOML file, the standard ``mcpServers`` JSON, typed models."""

from cartograph.config.loader import load_config
from cartograph.config.model import (
    CatalogConfig,
    CatalogPolicy,
    Config,
    ServerConfig,
)

__all__ = ["CatalogConfig", "CatalogPolicy", "Config", "ServerConfig", "load_config"]
