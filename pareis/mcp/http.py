"""The streamable HTTP transport of the Pareis MCP server: stateless, JSON responses, ``/mcp`` and ``/healthz``.

Stateless: no session outlives a request, so any replica answers any request, for clients on the current protocol
revision (sessionless) and for those on the older initialize-handshake one alike. Requests to ``/mcp`` are checked
in this order: the bearer token (when one is configured: ``Authorization: Bearer …`` only, never a query string;
401 otherwise, with the SDK's ``WWW-Authenticate`` answer), then the SDK's DNS-rebinding protection (a ``Host``
outside the allowed hosts → 421, an ``Origin`` outside them → 403). ``/healthz`` (``{"status": "ok"}``, for probes)
needs no token.

Binding beyond loopback is refused unless both a token and an explicit list of allowed hosts are given
(:func:`check_exposure`).
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Sequence

from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

MCP_PATH = "/mcp"
HEALTH_PATH = "/healthz"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


class ExposureError(ValueError):
    """The HTTP server would be reachable beyond loopback without a token or an allowed-hosts list."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, token: str | None, allowed_hosts: Sequence[str]) -> None:
    """Refuse (ExposureError) to bind ``host`` beyond loopback without a bearer token and allowed hosts."""
    if is_loopback(host):
        return
    missing = [
        what
        for what, given in (("a bearer token (--token-file)", token), ("--allowed-host", allowed_hosts))
        if not given
    ]
    if missing:
        raise ExposureError(f"binding {host} (beyond loopback) needs {' and '.join(missing)}")


def security_settings(allowed_hosts: Sequence[str]) -> TransportSecuritySettings:
    """DNS-rebinding protection: loopback (any port) plus each of ``allowed_hosts`` (``name`` allows any port,
    ``name:port`` that port only); Origins of the same hosts over http and https."""
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    for host in allowed_hosts:
        hosts += [host] if ":" in host.lstrip("[").split("]")[-1] else [host, f"{host}:*"]
    origins = [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


class StaticToken:
    """The SDK's ``TokenVerifier`` for one shared bearer token (compared in constant time)."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), self._token):
            return AccessToken(token=token, client_id="pareis-mcp-client", scopes=[])
        return None


class BearerGate:
    """Every HTTP request but ``/healthz`` needs the bearer token (the SDK's bearer backend and 401 response)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._protected = AuthenticationMiddleware(
            RequireAuthMiddleware(app, required_scopes=[]), backend=BearerAuthBackend(StaticToken(token))
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] != HEALTH_PATH:
            await self._protected(scope, receive, send)
        else:
            await self._app(scope, receive, send)


def http_app(
    server: MCPServer, *, host: str = "127.0.0.1", allowed_hosts: Sequence[str] = (), token: str | None = None
) -> ASGIApp:
    """The ASGI app serving ``server`` (ExposureError when ``host`` is beyond loopback without protection)."""
    check_exposure(host, token, allowed_hosts)

    @server.custom_route(HEALTH_PATH, methods=["GET"])
    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        stateless_http=True,
        transport_security=security_settings(allowed_hosts),
        host=host,
    )
    return BearerGate(app, token) if token else app
