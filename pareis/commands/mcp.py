"""``pareis mcp``: the read-only Pareis MCP server (issue 14; DESIGN §4, §6).

``pareis mcp (--metadata FILE… | --redis URL | --datahub URL) [--http] [--host 127.0.0.1] [--port 9410]
[--token-file F] [--allowed-host H…]`` opens the sources once and serves the tools of :mod:`pareis.mcp.tools`
over stdio (default: stdout carries only protocol messages) or, with ``--http``, stateless streamable HTTP with
JSON responses on ``http://HOST:PORT/mcp`` beside ``/healthz`` (:mod:`pareis.mcp.http`). Binding beyond loopback
needs ``--token-file`` (the bearer token clients send as ``Authorization: Bearer …``) and at least one
``--allowed-host`` (the Host names clients reach it by). Logs go to stderr.

Exit 2 with a one-line reason when the options are wrong or the sources can't be read; 1 when GMS is down at start
(Redis is read per call: while it is down, the tools answer "source unavailable"); 130 when interrupted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pareis.commands.common import (
    DatahubOption,
    MetadataOption,
    RedisOption,
    TokenOption,
    evaluating,
    gms_token,
    read_token,
)

if TYPE_CHECKING:
    from pareis.answers.sources import Sources

# A command imports what it runs with inside its function: `pareis --help` imports every command module, and
# stays fast only while they load no more than their options need (pareis/cli.py).

DEFAULT_PORT = 9410


def mcp(
    metadata: MetadataOption = None,
    redis_url: RedisOption = None,
    datahub_url: DatahubOption = None,
    token: TokenOption = None,
    http: Annotated[bool, typer.Option("--http", help="serve streamable HTTP instead of stdio")] = False,
    host: Annotated[str, typer.Option("--host", help="address to bind (with --http)")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="port to bind (with --http)")] = DEFAULT_PORT,
    token_file: Annotated[
        Path | None, typer.Option("--token-file", help="file holding the bearer token HTTP clients must send")
    ] = None,
    allowed_hosts: Annotated[
        list[str] | None,
        typer.Option("--allowed-host", help="a Host header clients may use, e.g. pareis.example.com (repeat)"),
    ] = None,
) -> None:
    """Serve Pareis's answers as read-only MCP tools (stdio, or streamable HTTP with --http)."""
    from pareis.compose.heap import settle
    from pareis.compose.sources import open_sources
    from pareis.config import load_settings
    from pareis.mcp.http import check_exposure
    from pareis.telemetry.logging import configure_logging

    with evaluating("mcp"):
        settings = load_settings()
        bearer = read_token(token_file) if token_file is not None else None
        if http:
            check_exposure(host, bearer, allowed_hosts or ())
        gms = gms_token(token) if datahub_url is not None else None
        sources = open_sources(metadata=metadata or (), redis_url=redis_url, datahub_url=datahub_url, token=gms)
    settle()  # what the server keeps is built: out of the collector's way (pareis.compose.heap)
    try:
        # Only once serving (not for a refusal): before the SDK configures logging, so that every log line, the
        # SDK's and uvicorn's included, goes to stderr.
        configure_logging(settings.log_level, settings.log_json)
        _serve(sources, http=http, host=host, port=port, token=bearer, allowed_hosts=allowed_hosts or ())
    finally:
        sources.close()


def _serve(
    sources: Sources, *, http: bool, host: str, port: int, token: str | None, allowed_hosts: Sequence[str]
) -> None:
    from pareis.mcp.server import build_server

    server = build_server(sources)
    if not http:
        server.run("stdio")
        return
    import uvicorn

    from pareis.mcp.http import http_app

    app = http_app(server, host=host, allowed_hosts=allowed_hosts, token=token)
    # log_config=None: uvicorn's loggers propagate to the root handler configure_logging set (stderr); its
    # default config would print access logs to stdout.
    uvicorn.run(app, host=host, port=port, log_config=None, lifespan="on")
