"""Who may read: without a token every request is served (loopback only: ``pareis serve`` refuses to bind
elsewhere without one); with a token, every page, ``/api`` route and stream needs it as ``Authorization: Bearer
TOKEN``, or once as ``?token=TOKEN``, which sets an HttpOnly cookie for the rest of the visit. The probes
(``/healthz``, ``/readyz``) and ``/metrics`` stay open: Kubernetes and Prometheus call them, and they show no
metadata. Behind a reverse proxy that authenticates, bind to loopback and leave the token out.
"""

from __future__ import annotations

import hmac

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp

OPEN = ("/healthz", "/readyz", "/metrics", "/static/favicon.svg")
COOKIE = "pareis_token"


class TokenGuard(BaseHTTPMiddleware):
    def __init__(self, app: ASGIApp, token: str) -> None:
        super().__init__(app)
        self._token = token

    def _ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self._token.encode())

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.url.path in OPEN:
            return await call_next(request)
        header = request.headers.get("authorization", "")
        bearer = header[7:] if header.lower().startswith("bearer ") else None
        if self._ok(bearer) or self._ok(request.cookies.get(COOKIE)):
            return await call_next(request)
        if self._ok(request.query_params.get("token")):
            response = RedirectResponse(request.url.remove_query_params("token"), status_code=303)
            response.set_cookie(COOKIE, self._token, httponly=True, samesite="strict")
            return response
        return PlainTextResponse("a token is required (Authorization: Bearer TOKEN, or ?token=TOKEN once)\n", 401)
