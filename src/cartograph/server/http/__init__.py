"""Cartograph over streamable HTTP: several catalogs on one server, the routed mount, auth.

See ``docs/http.md``. The ``serve --http`` command calls :func:`serve_http`;
tests and embedders assemble an app with :func:`build_http_app`.
"""

from cartograph.server.http.app import (
    HEALTH_PATH,
    MCP_PATH,
    ROUTED_PATH,
    CatalogMount,
    HttpSettings,
    build_http_app,
)
from cartograph.server.http.serve import ServedApp, check_bind, http_app, run_http, serve_http

__all__ = [
    "HEALTH_PATH",
    "MCP_PATH",
    "ROUTED_PATH",
    "CatalogMount",
    "HttpSettings",
    "ServedApp",
    "build_http_app",
    "check_bind",
    "http_app",
    "run_http",
    "serve_http",
]
