"""``pareis serve``: Mission Control, the read-only web dashboard (:mod:`pareis.web`), until SIGINT/SIGTERM.

Reads ``--redis URL`` (the live index, run history and incident state the roles keep: pages follow the incidents
role live) or ``--metadata FILE…`` (a static snapshot). The retrain gate and reliability are evaluated at ``--at
TIME`` when given; else, over Redis, at the wall clock, and over files at the newest time they record (the latest
assertion run, dataset change or model training: :func:`pareis.answers.newest.newest_ms`) — old files judged
against today would find every run stale. Every page says which.

Binding beyond loopback needs ``--token-file`` (the file's first line is the token every page and API call must
carry), unless a reverse proxy in front authenticates — then bind to loopback behind it. Exit 2 with a one-line
reason for bad options (an unreadable ``--at`` too), unreadable input or a port that can't be bound. A Redis that
is down is not fatal: the server starts, ``/readyz`` answers 503 and pages 503 until it is back. Stopped, it ends as
its signal says (130 SIGINT, 143 SIGTERM; :mod:`pareis.commands.failure` lists every code).
"""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path
from typing import Annotated

import typer

from pareis.commands.common import MetadataOption, RedisOption, evaluating, fail, read_token
from pareis.commands.times import AtOption, at_ms_of

# A command imports what it runs with inside its function: `pareis --help` imports every command module, and
# stays fast only while they load no more than their options need (pareis/cli.py).

LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def is_loopback(host: str) -> bool:
    """True when ``host`` only listens on this machine (127.0.0.0/8, ::1, localhost)."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_port(host: str, port: int) -> None:
    """ValueError when ``host:port`` can't be bound (in use, or not an address of this machine)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ValueError(f"can't listen on {host}:{port}: {exc.strerror}") from exc


def serve(
    metadata: MetadataOption = None,
    redis_url: RedisOption = None,
    host: Annotated[str, typer.Option("--host", help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="port to listen on")] = 9420,
    token_file: Annotated[
        Path | None, typer.Option("--token-file", help="file whose first line is the access token")
    ] = None,
    at: AtOption = None,
) -> None:
    """Serve Mission Control: incidents, blast graphs, timelines, verdicts, models, protect — live from Redis."""
    from pareis.compose.heap import settle
    from pareis.compose.sources import open_sources, reading
    from pareis.web.app import fixed_clock, wall_clock_ms
    from pareis.web.server import run_app

    token = None
    with evaluating("serve"):
        if token_file is not None:
            token = read_token(token_file)
        if token is None and not is_loopback(host):
            raise fail("serve", f"binding {host} (beyond loopback) needs --token-file, or a reverse proxy's auth", 2)
        if not 0 < port < 65536:
            raise ValueError(f"--port {port} is not a TCP port")
        given = at_ms_of(at) if at is not None else None
        check_port(host, port)
        sources = open_sources(metadata=metadata or (), redis_url=redis_url)
        if given is None and sources.incidents is None:  # files: judged at the newest time they record
            from pareis.answers.newest import newest_ms

            with reading():
                given = newest_ms(sources)
    settle()  # what the server keeps is built: out of the collector's way (pareis.compose.heap)
    clock = wall_clock_ms if given is None else fixed_clock(given)
    try:
        run_app(sources, host=host, port=port, token=token, clock=clock, clock_fixed=given is not None)
    finally:
        sources.close()
