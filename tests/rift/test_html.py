"""The HTML report: self-contained, injection-safe, and rendered by a real browser."""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from cartograph.rift.analysis import EmbedFn, RiftTool, analyse
from cartograph.rift.html import render_html, write_html
from cartograph.rift.model import RiftReport, RiftSettings
from cartograph.rift.queries import Probe

SAME = "Looks up records in the archive and returns matching entries."
HOSTILE = "</script><script>document.body.setAttribute('data-pwned','1')</script><!--"


def _report(fake_embed: EmbedFn) -> RiftReport:
    tools = [
        RiftTool("archive", "fetch_alpha", SAME, Probe("alpha id", "arguments")),
        RiftTool("archive", "fetch_beta", SAME, Probe("beta id", "arguments")),
        RiftTool("archive", "fetch_gamma", SAME, Probe("gamma id", "arguments")),
        RiftTool("weather", "forecast", "Predicts rain sunshine tomorrow", Probe("city", "name")),
        RiftTool("git", "commit", "Records staged repository changes", Probe("message", "name")),
        RiftTool("evil", "x<img src=y onerror=alert(1)>", HOSTILE, Probe("q", "name")),
    ]
    return analyse(tools, fake_embed, RiftSettings(), model_id="fake")


class _Dom(HTMLParser):
    """Counts what the test asserts on in a dumped DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.points: list[dict[str, str | None]] = []
        self.cluster_rows: list[str | None] = []
        self.body: dict[str, str | None] = {}
        self.scripts = 0
        self.images = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "circle" and "pt" in (a.get("class") or "").split():
            self.points.append(a)
        elif tag == "tr" and "cluster-row" in (a.get("class") or "").split():
            self.cluster_rows.append(a.get("data-cluster"))
        elif tag == "body":
            self.body = a
        elif tag == "script":
            self.scripts += 1
        elif tag == "img":
            self.images += 1


def test_page_embeds_no_remote_resource_and_escapes_card_text(fake_embed: EmbedFn) -> None:
    page = render_html(_report(fake_embed))
    assert "default-src 'none'" in page
    for marker in ('src="http', "src='http", 'href="http', "@import", "url("):
        assert marker not in page
    assert HOSTILE not in page
    assert page.count("</script>") == 2  # the data block and the one script


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("chromium is not installed (scripts/setup.d/50-chromium.sh installs it)")
    return found


def _dump_dom(browser: str, page: Path, profile: Path) -> str:
    args = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--dump-dom",
        page.as_uri(),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DBUS")}
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_report_renders_in_headless_chromium_with_one_point_per_tool(
    tmp_path: Path, fake_embed: EmbedFn
) -> None:
    browser = _chromium()
    report = _report(fake_embed)
    page = tmp_path / "rift.html"
    write_html(report, page)

    dom = _Dom()
    dom.feed(_dump_dom(browser, page, tmp_path / "profile"))

    assert dom.body.get("data-rendered") == "ok"  # the script ran to its end
    assert len(dom.points) == report.tools == 6
    keys = {p["data-key"] for p in dom.points}
    assert "archive/fetch_alpha" in keys and "git/commit" in keys
    clustered = [p for p in dom.points if p.get("data-cluster") is not None]
    assert {p["data-risk"] for p in clustered} == {"HIGH"}
    assert len(clustered) == 3
    assert dom.cluster_rows == [str(c.id) for c in report.clusters]
    assert dom.cluster_rows  # the identical-description cluster is listed
    assert "data-pwned" not in dom.body
    assert dom.images == 0  # the hostile tool name stayed text
