"""The OAuth-protected upstream and the config that reaches it: shared by the OAuth tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.helpers.serving import free_port

UPSTREAM = Path(__file__).resolve().parents[1] / "helpers" / "oauth_upstream.py"

CLI = (sys.executable, "-m", "cartograph.cli.main")


def write_config(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "cartograph.toml"
    path.write_text(
        f'state_dir = "{tmp_path / "state"}"\n\n[index]\nembedder = "fake"\n\n'
        f'[servers.saas]\nurl = "{url}"\nauth = "oauth"\nprotocol = "legacy"\n'
        f'oauth = {{ redirect_port = {free_port()}, client_name = "Cartograph test" }}\n'
    )
    return path


def answers(url: str) -> bool:
    """Whether ``url`` answers 200 now (the upstream's metadata, while it starts)."""
    try:
        return httpx2.get(url, timeout=1.0).status_code == 200
    except httpx2.TransportError:
        return False


def login(config: Path) -> tuple[str, str]:
    """`auth login --no-browser`, with an HTTP client in the browser's place."""
    process = subprocess.Popen(
        [*CLI, "auth", "login", "saas", "--no-browser", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
        text=True,
        preexec_fn=lambda: os.umask(0),  # private whatever the umask (P-FS-1)
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:") and "code_challenge_method=S256" in url
    consent = httpx2.get(url, follow_redirects=False, timeout=10)
    assert consent.status_code in {302, 303, 307}
    back = httpx2.get(consent.headers["location"], timeout=10)  # the browser lands on loopback
    assert back.status_code == 200
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "Traceback" not in err and "not holding this lock" not in err
    return url + out, err


async def call_through_serve(config: Path, tool: str = "whoami") -> str:
    """``tool`` through a fresh `cartograph serve` (stdio), driven by the SDK client."""
    params = StdioServerParameters(
        command=sys.executable,
        args=[*CLI[1:], "serve", "--unsafe-throwaway-key", "--config", str(config)],
        env=dict(os.environ),
    )
    with anyio.fail_after(90):
        async with Client(params) as client:
            result = await client.call_tool(
                "call", {"server": "saas", "tool": tool, "arguments": {}}
            )
    assert not result.is_error, result
    return "".join(getattr(b, "text", "") for b in result.content)
