"""Driving the Pareis MCP server from tests with the SDK's own client: in-process (the current protocol's direct
dispatch, or the legacy initialize handshake over in-memory streams) and over HTTP through the ASGI app."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ListToolsResult
from starlette.types import ASGIApp

MODES = ("auto", "legacy")
"""``auto``: the current (sessionless) protocol revision; ``legacy``: the initialize handshake (2025-11-25)."""
BASE = "http://127.0.0.1:9410"


@asynccontextmanager
async def over_http(
    server: MCPServer, app: ASGIApp, *, mode: str, headers: Mapping[str, str] | None = None
) -> AsyncIterator[Client]:
    """A client talking streamable HTTP to ``app`` (built over ``server``) in-process, lifespan running."""
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE, headers=dict(headers or {}))
    transport = streamable_http_client(f"{BASE}/mcp", http_client=http)
    async with server.session_manager.run(), http, Client(transport, mode=mode) as client:
        yield client


def calls(server: MCPServer, requests: list[tuple[str, dict[str, Any]]], *, mode: str) -> list[CallToolResult]:
    """Call each ``(tool, arguments)`` in-process, in order, on one connection."""

    async def go() -> list[CallToolResult]:
        async with Client(server, mode=mode) as client:
            return [await client.call_tool(name, args) for name, args in requests]

    return anyio.run(go)


def call(server: MCPServer, tool: str, args: dict[str, Any] | None = None, *, mode: str = "auto") -> CallToolResult:
    return calls(server, [(tool, args or {})], mode=mode)[0]


def list_tools(server: MCPServer, *, mode: str = "auto") -> ListToolsResult:
    async def go() -> ListToolsResult:
        async with Client(server, mode=mode) as client:
            return await client.list_tools()

    return anyio.run(go)


def structured(result: CallToolResult) -> dict[str, Any]:
    """The structured content of a successful call (fails the test with the error text otherwise)."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


def error_text(result: CallToolResult) -> str:
    assert result.is_error, result.structured_content
    (block,) = result.content
    text = getattr(block, "text", "")
    assert isinstance(text, str)
    return text
