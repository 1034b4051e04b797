"""``pareis mcp`` over stdio as a real subprocess on the demo recording: the initialize handshake, ``tools/list``
and tool calls answered, and nothing but JSON-RPC messages on stdout (logs, the SDK's included, go to stderr); the
offline entry of ``.mcp.json.example`` started as a client starts it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

from pareis.contracts.agent import TOOL_NAMES
from tests.support.recorded import RAW, RECORDED


def send(stdin: IO[str], message: dict[str, Any]) -> None:
    stdin.write(json.dumps(message) + "\n")
    stdin.flush()


def test_stdout_carries_only_protocol_messages(tmp_path: Path) -> None:
    env = {**os.environ, "PAREIS_LOG_LEVEL": "INFO", "PAREIS_LOG_JSON": "true"}
    stderr = tmp_path / "stderr"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pareis.cli", "mcp", "--metadata", str(RECORDED)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr.open("w"),  # a file: a full pipe must not stall the server
        text=True,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines: list[str] = []
    answers: dict[int, dict[str, Any]] = {}

    def answer(ident: int) -> dict[str, Any]:
        """The response to request ``ident`` (responses may come in any order: requests run concurrently)."""
        while ident not in answers:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            assert line, f"stdout closed before the answer to {ident}; stderr: {stderr.read_text()[-2000:]}"
            lines.append(line)
            message = json.loads(line)
            if "id" in message:
                answers[message["id"]] = message
        return answers[ident]

    try:
        send(
            proc.stdin,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"},
                },
            },
        )
        init = answer(1)
        assert init["result"]["serverInfo"]["name"] == "pareis"
        send(proc.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(proc.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        send(
            proc.stdin,
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "get_incident", "arguments": {"urn": RAW}},
            },
        )
        send(
            proc.stdin,
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {"name": "get_blast_radius", "arguments": {"urn": "urn:li:assertion:nope"}},
            },
        )
        tools = answer(2)["result"]["tools"]
        incident = answer(3)["result"]
        failed = answer(4)["result"]
    finally:
        proc.stdin.close()
        rest = proc.stdout.read()
        proc.wait(timeout=120)
    lines += rest.splitlines(keepends=True)
    errors = stderr.read_text()
    assert proc.returncode == 0, errors[-2000:]
    assert [t["name"] for t in tools] == list(TOOL_NAMES)
    assert incident["isError"] is False and incident["structuredContent"]["incident"]["dataset"] == RAW
    assert failed["isError"] is True and "urn:li:assertion:nope" in failed["content"][0]["text"]
    for line in lines:
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0" and ("id" in message or "method" in message), line
    assert "get_blast_radius" in errors, "the failed call is logged, on stderr"


def test_the_offline_entry_starts_and_answers_on_the_demo_recording() -> None:
    """``pareis-demo`` (no Kafka, Redis or DataHub: the recording in the checkout) launched as a client launches it,
    through the MCP SDK's stdio client from the repository's root: it lists the tools and answers with the
    decision."""
    import anyio
    from mcp import Client, StdioServerParameters

    root = Path(__file__).resolve().parents[2]
    entry = json.loads((root / ".mcp.json.example").read_text(encoding="utf-8"))["mcpServers"]["pareis-demo"]
    assert entry["command"] == "pareis" and "--metadata" in entry["args"]
    command = str(Path(sys.executable).parent / entry["command"])  # the installed console script
    params = StdioServerParameters(command=command, args=entry["args"], cwd=root)

    async def ask() -> tuple[list[str], dict[str, Any]]:
        async with Client(params) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            found = await client.call_tool("list_incidents", {"state": "ALL"})
            return tools, dict(found.structured_content or {})

    tools, listed = anyio.run(ask)
    assert tools == list(TOOL_NAMES)
    (incident,) = listed["incidents"]
    assert [d["action"] for d in incident["decisions"]] == ["NONE", "NONE"]
