"""A real MCP server behind its own OAuth 2.1 authorization server (the SDK's mcp.server.auth).

Like the SDK's simple-auth example: one process is both the authorization
server (metadata, dynamic client registration, ``/authorize``, ``/token`` with
PKCE, refresh) and the resource server (``/mcp``, bearer tokens required). The
only difference is consent: ``/authorize`` approves at once and redirects with
the code, so a test follows the redirect with an HTTP client instead of a
browser. Each grant it makes is appended to ``--log`` as one JSON line
(``register``, ``authorization_code``, ``refresh_token``, ``revoke``) — never a token.

``--issuer URL`` makes the resource server name another authorization server in its
protected-resource metadata (one that is down, or answers garbage), while it keeps
verifying its own tokens: the attack tests' way to break only the authorization server.

Run: ``python tests/helpers/oauth_upstream.py --port P --log F [--token-ttl S] [--issuer URL]``.
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
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    ProviderTokenVerifier,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

SCOPE = "mcp"


class AutoApproveProvider(
    OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]
):
    """An in-memory ``OAuthAuthorizationServerProvider`` that consents on the user's behalf."""

    def __init__(self, ttl: int, log: Path) -> None:
        self.ttl = ttl
        self.log = log
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    def _note(self, event: str, **extra: Any) -> None:
        with self.log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"event": event, "at": time.time(), **extra}) + "\n")

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

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


def build_app(port: int, ttl: int, log: Path, issuer: str | None = None) -> Any:
    base = f"http://127.0.0.1:{port}"
    provider = AutoApproveProvider(ttl, log)

    async def list_tools(
        _ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        schema = {"type": "object", "properties": {}}
        return types.ListToolsResult(
            tools=[types.Tool(name="whoami", description="Say who called.", input_schema=schema)]
        )

    async def call_tool(
        _ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text="authorized")])

    server: Server[Any] = Server("oauth-upstream", on_list_tools=list_tools, on_call_tool=call_tool)
    settings = AuthSettings(
        issuer_url=issuer or base,
        resource_server_url=f"{base}/mcp",
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]
        ),
        revocation_options=RevocationOptions(enabled=True),
        required_scopes=[SCOPE],
        validate_token_resource=False,
    )
    return server.streamable_http_app(
        host="127.0.0.1",
        auth=settings,
        auth_server_provider=provider,
        token_verifier=ProviderTokenVerifier(provider),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--token-ttl", type=int, default=3600)
    parser.add_argument("--issuer", default=None)
    args = parser.parse_args()
    app = build_app(args.port, args.token_ttl, args.log, args.issuer)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
