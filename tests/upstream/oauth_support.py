"""The OAuth-protected upstream and the config that reaches it: shared by the OAuth tests."""

from __future__ import annotations

import sys
from pathlib import Path

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
