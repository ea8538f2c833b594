"""``[servers.X.oauth]``: how Cartograph identifies itself to an upstream's authorization server.

The MCP authorization spec (Client Registration) names three ways, in the order a
client that supports all of them uses them:

1. a client the operator **registered beforehand** with the provider (``client_id``,
   and for a confidential client its secret, from ``client_secret_env`` or
   ``client_secret_file``: never written in the config file itself, which is often
   committed);
2. a **client ID metadata document** (``client_metadata_url``: an HTTPS URL that is
   the client id and serves the client's metadata; ``cartograph auth client-metadata``
   prints the document), used when the authorization server's metadata says
   ``client_id_metadata_document_supported``;
3. **dynamic client registration**, when the server offers a registration endpoint.

With none of them possible, ``auth login`` refuses with ``oauth_no_registration``,
saying what to configure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from cartograph import error_codes as codes
from cartograph.errors import ConfigError, StateFileError
from cartograph.fsutil import read_bounded

DEFAULT_OAUTH_REDIRECT_PORT: Final = 33418
"""The loopback port `cartograph auth login` listens on for the authorization redirect.

Fixed by default: the redirect URI is registered with the authorization server (by
dynamic registration, in a metadata document or by the operator), so it must be the
same at every login."""
MAX_SECRET_FILE_BYTES: Final = 64 * 1024
"""A client secret file holds one secret: far below this."""

ClientAuthMethod = Literal["client_secret_basic", "client_secret_post", "none"]
Registration = Literal["pre-registered", "client-id-metadata-document", "dynamic"]
"""Which of the spec's three ways gave the client id (what ``auth status`` shows)."""


class OAuthConfig(BaseModel):
    """Upstream OAuth 2.1 (authorization code + PKCE, refresh) and the client it acts as.

    ``store`` is where the tokens and any registration live (0600); the loader fills
    in ``<state_dir>/oauth/<server>.json`` when it is not set.
    """

    # Never echo an input in a validation error: it may be a token or a header value.
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    scopes: tuple[str, ...] = ()
    client_name: str = "Cartograph"
    redirect_port: int = Field(default=DEFAULT_OAUTH_REDIRECT_PORT, ge=1, le=65535)
    store: Path | None = None
    client_id: str | None = Field(default=None, min_length=1)
    """A client registered with the provider beforehand: used before any other way."""
    client_secret_env: str | None = Field(default=None, min_length=1)
    client_secret_file: Path | None = None
    token_endpoint_auth_method: ClientAuthMethod | None = None
    """How the client proves itself at the token endpoint; by default ``client_secret_basic``
    with a secret (RFC 7591's default), ``none`` (a public client, PKCE only) without."""
    client_metadata_url: str | None = None
    """A client ID metadata document's HTTPS URL, used as the client id where supported."""

    @property
    def has_secret(self) -> bool:
        return self.client_secret_env is not None or self.client_secret_file is not None

    @property
    def auth_method(self) -> ClientAuthMethod:
        if self.token_endpoint_auth_method is not None:
            return self.token_endpoint_auth_method
        return "client_secret_basic" if self.has_secret else "none"

    def client_secret(self, server: str) -> str | None:
        """The pre-registered client's secret, read now from its variable or file.

        Raises ``oauth_client_secret_missing`` when the variable is unset or the file
        cannot be read: a login without it would fail at the token endpoint instead.
        """
        if self.client_secret_env is not None:
            value = os.environ.get(self.client_secret_env, "").strip()
            if not value:
                raise _missing(
                    server,
                    f"client_secret_env names {self.client_secret_env}, "
                    "which is not set in the environment",
                )
            return value
        if self.client_secret_file is not None:
            try:
                raw = read_bounded(self.client_secret_file, MAX_SECRET_FILE_BYTES)
                value = raw.decode("utf-8").strip()
            except (OSError, UnicodeDecodeError, StateFileError) as exc:
                raise _missing(
                    server,
                    f"client_secret_file {self.client_secret_file} cannot "
                    f"be read ({type(exc).__name__})",
                ) from None
            if not value:
                raise _missing(server, f"client_secret_file {self.client_secret_file} is empty")
            return value
        return None

    def secret_values(self, server: str) -> list[str]:
        """The client secret, for redactors and the secret scan; none when it cannot be read
        (the login or connect that needs it refuses with the reason)."""
        try:
            secret = self.client_secret(server)
        except ConfigError:
            return []
        return [secret] if secret else []


def _missing(server: str, what: str) -> ConfigError:
    return ConfigError(
        f"server {server!r}: oauth.{what}; set it to the secret the provider issued with the "
        "client id, or remove it for a public client",
        code=codes.OAUTH_CLIENT_SECRET_MISSING,
        server=server,
    )


def refuse_inline_secret(server: object, data: Mapping[str, Any]) -> None:
    """A client secret written in the config itself is refused: config files get committed."""
    oauth = data.get("oauth")
    if isinstance(oauth, Mapping) and "client_secret" in oauth:
        raise ConfigError(
            f"server {server!r}: key 'oauth.client_secret': a client secret is never read from "
            "the config file (it is often committed); put it in an environment variable "
            '(oauth.client_secret_env = "NAME") or a private file (oauth.client_secret_file)',
            code=codes.OAUTH_BAD_CLIENT,
            server=str(server),
            key="oauth.client_secret",
        )


def check_oauth(server: str, oauth: OAuthConfig) -> None:
    """The invariants of an OAuth section: a secret needs a client id, and one source."""

    def refuse(key: str, problem: str) -> ConfigError:
        return ConfigError(
            f"server {server!r}: key 'oauth.{key}': {problem}",
            code=codes.OAUTH_BAD_CLIENT,
            server=server,
            key=f"oauth.{key}",
        )

    if oauth.has_secret and oauth.client_id is None:
        raise refuse(
            "client_id",
            "a client secret belongs to a pre-registered client: set "
            "client_id to the id the provider issued with it",
        )
    if oauth.client_secret_env is not None and oauth.client_secret_file is not None:
        raise refuse("client_secret_file", "set client_secret_env or client_secret_file, not both")
    if oauth.auth_method != "none" and not oauth.has_secret:
        raise refuse(
            "token_endpoint_auth_method",
            f"{oauth.auth_method} needs the client's "
            "secret: set client_secret_env or client_secret_file",
        )
    if oauth.token_endpoint_auth_method is not None and oauth.client_id is None:
        raise refuse(
            "token_endpoint_auth_method",
            "only a pre-registered client (client_id) chooses how it authenticates",
        )
    if oauth.client_metadata_url is not None and not is_metadata_url(oauth.client_metadata_url):
        raise refuse(
            "client_metadata_url",
            "a client ID metadata document's URL is an "
            "https:// URL with a path (e.g. https://example.com/cartograph.json)",
        )


def is_metadata_url(url: str) -> bool:
    """An HTTPS URL with a path: what a client ID metadata document's URL must be."""
    parts = urlsplit(url)
    return parts.scheme == "https" and bool(parts.netloc) and parts.path not in ("", "/")
