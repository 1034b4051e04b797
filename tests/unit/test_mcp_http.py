"""The Pareis MCP server over streamable HTTP through its ASGI app, on the demo recording: both protocol modes,
stateless JSON responses (any replica answers any request), the bearer token (401 without it, never from a query
string), DNS-rebinding protection (a wrong Host → 421), ``/healthz``, and the refusal to bind beyond loopback
unprotected."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest
from mcp.server.mcpserver import MCPServer
from typer.testing import CliRunner

from pareis.answers.sources import Sources
from pareis.contracts.agent import TOOL_NAMES
from pareis.mcp.http import ExposureError, check_exposure, http_app
from pareis.mcp.server import build_server
from tests.support.mcp_client import BASE, MODES, call, over_http, structured
from tests.support.recorded import RAW, RECORDED, recorded_sources

TOKEN = "t0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
JSONRPC = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LEGACY = "2025-11-25"


@pytest.fixture(scope="module")
def sources() -> Sources:
    return recorded_sources()


def fresh(sources: Sources, **kwargs: Any) -> tuple[MCPServer, Any]:
    """A server and its HTTP app (an app mounts its server's session manager once, so one app per server)."""
    server = build_server(sources)
    return server, http_app(server, **kwargs)


@pytest.mark.parametrize("mode", MODES)
def test_both_protocol_modes_get_the_in_process_answers_over_http(sources: Sources, mode: str) -> None:
    server, app = fresh(sources, token=TOKEN)
    expected = structured(call(build_server(sources), "get_incident", {"urn": RAW}))

    async def go() -> tuple[str, list[str], dict[str, Any]]:
        async with over_http(server, app, mode=mode, headers=AUTH) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            answer = structured(await client.call_tool("get_incident", {"urn": RAW}))
            return client.protocol_version, names, answer

    version, names, answer = anyio.run(go)
    assert version == (LEGACY if mode == "legacy" else "2026-07-28")
    assert names == list(TOOL_NAMES)
    assert answer == expected


def raw_many(app: Any, requests: list[tuple[str, str, dict[str, Any]]]) -> list[httpx2.Response]:
    """Send ``(method, path, httpx keywords)`` requests to ``app`` in order, inside one run of its lifespan (an
    app's session manager runs once)."""

    async def go() -> list[httpx2.Response]:
        inner = getattr(app, "_app", app)  # under the bearer gate
        async with inner.router.lifespan_context(inner):
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport, base_url=BASE) as client:
                return [await client.request(method, path, **kwargs) for method, path, kwargs in requests]

    return anyio.run(go)


def raw(app: Any, method: str, path: str, **kwargs: Any) -> httpx2.Response:
    return raw_many(app, [(method, path, kwargs)])[0]


def rpc(method: str, params: dict[str, Any] | None = None, ident: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": method, "params": params or {}}


INITIALIZE = rpc(
    "initialize", {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}
)


def test_stateless_json_any_replica_answers_a_legacy_client_without_a_session(sources: Sources) -> None:
    _, first = fresh(sources, token=TOKEN)
    init = raw(first, "POST", "/mcp", json=INITIALIZE, headers={**AUTH, **JSONRPC})
    assert init.status_code == 200 and init.headers["content-type"].startswith("application/json")
    assert "mcp-session-id" not in init.headers, "stateless: no session to pin a client to one replica"
    assert init.json()["result"]["protocolVersion"] == LEGACY
    _, other = fresh(sources, token=TOKEN)  # another replica, which never saw the initialize
    headers = {**AUTH, **JSONRPC, "MCP-Protocol-Version": LEGACY}
    answer = raw(
        other,
        "POST",
        "/mcp",
        json=rpc("tools/call", {"name": "get_incident", "arguments": {"urn": RAW}}, 2),
        headers=headers,
    )
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/json")
    body = answer.json()["result"]
    assert body["isError"] is False and body["structuredContent"]["incident"]["dataset"] == RAW


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}, {"Authorization": TOKEN}],
    ids=["none", "wrong", "basic", "bare"],
)
def test_a_missing_or_wrong_token_is_401(sources: Sources, headers: dict[str, str]) -> None:
    _, app = fresh(sources, token=TOKEN)
    response = raw(app, "POST", "/mcp", json=INITIALIZE, headers={**JSONRPC, **headers})
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer ")


def test_a_token_in_the_query_string_is_not_accepted(sources: Sources) -> None:
    _, app = fresh(sources, token=TOKEN)
    response = raw(app, "POST", f"/mcp?access_token={TOKEN}&token={TOKEN}", json=INITIALIZE, headers=JSONRPC)
    assert response.status_code == 401


def test_a_host_outside_the_allowed_hosts_is_421_and_a_foreign_origin_403(sources: Sources) -> None:
    _, app = fresh(sources, host="0.0.0.0", token=TOKEN, allowed_hosts=["pareis.example.com"])
    ok = {**AUTH, **JSONRPC}
    hosts = ("pareis.example.com", "pareis.example.com:443", "127.0.0.1:9410", "evil.example")
    requests = [("POST", "/mcp", {"json": INITIALIZE, "headers": {**ok, "Host": host}}) for host in hosts]
    requests.append(("POST", "/mcp", {"json": INITIALIZE, "headers": {**ok, "Origin": "https://evil.example"}}))
    codes = [r.status_code for r in raw_many(app, requests)]
    assert codes == [200, 200, 200, 421, 403]
    _, loopback = fresh(sources)
    assert (
        raw(loopback, "POST", "/mcp", json=INITIALIZE, headers={**JSONRPC, "Host": "evil.example"}).status_code == 421
    )


def test_healthz_answers_without_a_token(sources: Sources) -> None:
    _, app = fresh(sources, token=TOKEN)
    response = raw(app, "GET", "/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


@pytest.mark.parametrize(
    ("host", "token", "allowed", "refused"),
    [
        ("127.0.0.1", None, [], None),
        ("::1", None, [], None),
        ("localhost", None, [], None),
        ("0.0.0.0", None, ["h"], "bearer token"),
        ("0.0.0.0", "t", [], "--allowed-host"),
        ("10.1.2.3", None, [], "bearer token (--token-file) and --allowed-host"),
        ("10.1.2.3", "t", ["pareis.internal"], None),
    ],
)
def test_binding_beyond_loopback_needs_a_token_and_allowed_hosts(
    host: str, token: str | None, allowed: list[str], refused: str | None
) -> None:
    if refused is None:
        check_exposure(host, token, allowed)
        return
    with pytest.raises(ExposureError, match=refused.replace("(", r"\(").replace(")", r"\)")):
        check_exposure(host, token, allowed)


def cli(*args: str) -> Any:
    from pareis import cli as pareis_cli

    return CliRunner().invoke(pareis_cli.app, ["mcp", *args])


def test_the_command_refuses_an_unprotected_public_bind_before_opening_anything(tmp_path: Any) -> None:
    result = cli("--metadata", str(RECORDED), "--http", "--host", "0.0.0.0")
    assert result.exit_code == 2
    assert (
        result.stderr.startswith("pareis mcp: binding 0.0.0.0 (beyond loopback) needs")
        and result.stderr.count("\n") == 1
    )
    empty = tmp_path / "token"
    empty.write_text("\n", encoding="utf-8")
    result = cli("--metadata", str(RECORDED), "--http", "--token-file", str(empty))
    assert result.exit_code == 2 and "must hold one token" in result.stderr
    result = cli("--http", "--token-file", str(tmp_path / "missing"))
    assert result.exit_code == 2 and "can't read --token-file" in result.stderr
    short = tmp_path / "short"
    short.write_text("abc\n", encoding="utf-8")  # the same rule as pareis serve's: a guessable token is refused
    result = cli("--metadata", str(RECORDED), "--http", "--token-file", str(short))
    assert result.exit_code == 2 and "at least 16 characters" in result.stderr
    result = cli("--redis", "redis://x", "--metadata", str(RECORDED))
    assert result.exit_code == 2 and "one of them" in result.stderr
