"""A real MCP server behind its own OAuth 2.1 authorization server (the SDK's mcp.server.auth).

Like the SDK's simple-auth example: one process is both the authorization
server (metadata, dynamic client registration, ``/authorize``, ``/token`` with
PKCE, refresh) and the resource server (``/mcp``, bearer tokens required; its
``leak`` tool echoes the caller's token, as a careless upstream might). The
only difference is consent: ``/authorize`` approves at once and redirects with
the code, so a test follows the redirect with an HTTP client instead of a
browser. Each grant it makes is appended to ``--log`` as one JSON line
(``register``, ``authorization_code``, ``refresh_token``, ``revoke``) — never a token.

``--issuer URL`` makes the resource server name another authorization server in its
protected-resource metadata (one that is down, or answers garbage), while it keeps
verifying its own tokens: the attack tests' way to break only the authorization server.

Registration is switchable, for the clients that do not register dynamically:
``--no-dcr`` turns dynamic client registration off (no ``registration_endpoint`` in the
metadata, no ``/register``); ``--client ID`` with ``--redirect-uri URI`` accepts one
client registered beforehand, confidential with ``--client-secret-file F`` (read from a
file, so no secret is on a command line) and ``--client-auth`` (basic or post), public
without; ``--cimd-document F`` advertises ``client_id_metadata_document_supported`` and
resolves the document's ``client_id`` (an https URL) to the document in ``F`` — in place
of fetching it over HTTPS, which a loopback test cannot serve — refusing it when the
document does not name that URL as its ``client_id``. Each grant logs its ``client_id``.

Run: ``python tests/helpers/oauth_upstream.py --port P --log F [--token-ttl S] [--issuer URL]
[--no-dcr] [--client ID --redirect-uri URI [--client-secret-file F --client-auth M]]
[--cimd-document F]``.
"""

from __future__ import annotations

import argparse
import json
import secrets
import time
from pathlib import Path
from typing import Any

import mcp.types as types
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    ProviderTokenVerifier,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

SCOPE = "mcp"
METADATA_PATH = "/.well-known/oauth-authorization-server"


class AutoApproveProvider(
    OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]
):
    """An in-memory ``OAuthAuthorizationServerProvider`` that consents on the user's behalf."""

    def __init__(self, ttl: int, log: Path, document: Path | None = None) -> None:
        self.ttl = ttl
        self.log = log
        self.document = document
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    def _note(self, event: str, **extra: Any) -> None:
        with self.log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"event": event, "at": time.time(), **extra}) + "\n")

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        found = self.clients.get(client_id)
        if found is None and client_id.startswith("https://"):
            found = self._metadata_document(client_id)
        return found

    def _metadata_document(self, client_id: str) -> OAuthClientInformationFull | None:
        """A client ID metadata document's client: its ``client_id`` must be its own URL."""
        if self.document is None:
            return None
        document = json.loads(self.document.read_text(encoding="utf-8"))
        if document.get("client_id") != client_id:
            return None
        self._note("metadata_document", client_id=client_id)
        self.clients[client_id] = OAuthClientInformationFull.model_validate(document)
        return self.clients[client_id]

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self._note("register", redirect_uris=[str(u) for u in client_info.redirect_uris or []])

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = secrets.token_urlsafe(32)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        found = self.codes.get(authorization_code)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        return self._issue(client, authorization_code.scopes, "authorization_code")

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        del self.refresh[refresh_token.token]  # rotated: a refresh token is good once
        return self._issue(client, scopes or refresh_token.scopes, "refresh_token")

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self._note("revoke")
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(
        self, client: OAuthClientInformationFull, scopes: list[str], grant: str
    ) -> OAuthToken:
        assert client.client_id is not None
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        expires = int(time.time()) + self.ttl
        self.access[access] = AccessToken(
            token=access, client_id=client.client_id, scopes=scopes, expires_at=expires
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client.client_id, scopes=scopes
        )
        self._note(grant, client_id=client.client_id)
        return OAuthToken(
            access_token=access, expires_in=self.ttl, refresh_token=refresh, scope=" ".join(scopes)
        )


def build_app(
    port: int,
    ttl: int,
    log: Path,
    issuer: str | None = None,
    *,
    dcr: bool = True,
    client: OAuthClientInformationFull | None = None,
    document: Path | None = None,
) -> Any:
    base = f"http://127.0.0.1:{port}"
    provider = AutoApproveProvider(ttl, log, document)
    if client is not None:
        assert client.client_id is not None
        provider.clients[client.client_id] = client

    async def list_tools(
        _ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        schema = {"type": "object", "properties": {}}
        return types.ListToolsResult(
            tools=[
                types.Tool(name="whoami", description="Say who called.", input_schema=schema),
                types.Tool(
                    name="leak",
                    description="Echo the caller's bearer token back (a leaking upstream).",
                    input_schema=schema,
                ),
            ]
        )

    async def call_tool(
        _ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name == "leak":
            token = get_access_token()
            text = f"debug: called with {token.token if token else None}"
            return types.CallToolResult(content=[types.TextContent(text=text)])
        return types.CallToolResult(content=[types.TextContent(text="authorized")])

    server: Server[Any] = Server("oauth-upstream", on_list_tools=list_tools, on_call_tool=call_tool)
    settings = AuthSettings(
        issuer_url=issuer or base,
        resource_server_url=f"{base}/mcp",
        client_registration_options=ClientRegistrationOptions(
            enabled=dcr, valid_scopes=[SCOPE], default_scopes=[SCOPE]
        ),
        revocation_options=RevocationOptions(enabled=True),
        required_scopes=[SCOPE],
        validate_token_resource=False,
    )
    app = server.streamable_http_app(
        host="127.0.0.1",
        auth=settings,
        auth_server_provider=provider,
        token_verifier=ProviderTokenVerifier(provider),
    )
    if document is not None:
        metadata = build_metadata(
            settings.issuer_url,
            None,
            settings.client_registration_options or ClientRegistrationOptions(),
            settings.revocation_options or RevocationOptions(),
        )
        metadata.client_id_metadata_document_supported = True
        advertised = metadata.model_dump(mode="json", exclude_none=True)

        async def with_cimd(_request: Request) -> JSONResponse:
            return JSONResponse(advertised)

        # Ahead of the SDK's own metadata route, which cannot advertise documents.
        app.router.routes.insert(0, Route(METADATA_PATH, with_cimd, methods=["GET"]))
    return app


def preregistered(args: argparse.Namespace) -> OAuthClientInformationFull | None:
    """The client registered beforehand, as the command line describes it."""
    if args.client is None:
        return None
    secret = args.client_secret_file.read_text().strip() if args.client_secret_file else None
    return OAuthClientInformationFull(
        client_id=args.client,
        client_secret=secret,
        token_endpoint_auth_method=args.client_auth if secret else "none",
        redirect_uris=[args.redirect_uri],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=SCOPE,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--token-ttl", type=int, default=3600)
    parser.add_argument("--issuer", default=None)
    parser.add_argument("--no-dcr", action="store_true")
    parser.add_argument("--client", default=None)
    parser.add_argument("--redirect-uri", default=None)
    parser.add_argument("--client-secret-file", type=Path, default=None)
    parser.add_argument("--client-auth", default="client_secret_basic")
    parser.add_argument("--cimd-document", type=Path, default=None)
    args = parser.parse_args()
    app = build_app(
        args.port,
        args.token_ttl,
        args.log,
        args.issuer,
        dcr=not args.no_dcr,
        client=preregistered(args),
        document=args.cimd_document,
    )
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
