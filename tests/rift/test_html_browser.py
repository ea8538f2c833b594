"""The HTML report driven in headless Chromium: clicks, search, filters, colour toggle.

Playwright drives Debian's ``/usr/bin/chromium`` (no browser download). Every
test checks the page made no request but its own file and logged no console
error. Screenshots land in ``$RIFT_SCREENSHOTS`` when set (else the test's
temporary folder) so a person can look at them: ``RIFT_SCREENSHOTS=/tmp/shots
pytest tests/rift/test_html_browser.py``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

from cartograph.rift.analysis import EmbedFn, RiftTool, analyse
from cartograph.rift.html import write_html
from cartograph.rift.model import RiftReport, RiftSettings
from cartograph.rift.queries import Probe

ARCHIVE = "Looks up records in the archive and returns matching entries."
WEATHER = "Weather forecast for a city, hour by hour."


def _report(fake_embed: EmbedFn) -> RiftReport:
    tools = [
        RiftTool("archive", "fetch_alpha", ARCHIVE, Probe("alpha id", "arguments")),
        RiftTool("archive", "fetch_beta", ARCHIVE, Probe("beta id", "arguments")),
        RiftTool("weather", "get_forecast", WEATHER, Probe("city", "arguments")),
        RiftTool("meteo", "set_forecast", WEATHER, Probe("city", "arguments")),
        RiftTool("git", "commit", "Records staged repository changes", Probe("message", "name")),
    ]
    return analyse(tools, fake_embed, RiftSettings(), model_id="fake")


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("chromium is not installed (scripts/setup.d/50-chromium.sh installs it)")
    return found


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("RIFT_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def page(tmp_path: Path, fake_embed: EmbedFn) -> Iterator[tuple[Page, RiftReport, list[str]]]:
    report = _report(fake_embed)
    path = tmp_path / "rift.html"
    write_html(report, path)
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        try:
            tab = browser.new_page(viewport={"width": 1300, "height": 900})
            tab.on("console", lambda m: problems.append(f"console {m.type}: {m.text}"))
            tab.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            tab.on("request", lambda r: None if r.url == path.as_uri() else problems.append(r.url))
            tab.goto(path.as_uri())
            assert tab.get_attribute("body", "data-rendered") == "ok"
            yield tab, report, problems
        finally:
            browser.close()


def _visible_clusters(tab: Page) -> list[str]:
    ids: list[str] = tab.eval_on_selector_all(
        "tbody.cluster", "bs => bs.filter(b => !b.hidden).map(b => b.dataset.cluster)"
    )
    return ids


def test_page_loads_without_console_errors_or_requests_and_rows_start_collapsed(
    page: tuple[Page, RiftReport, list[str]], shots: Path
) -> None:
    tab, report, problems = page
    assert tab.locator("circle.pt").count() == report.tools == 5
    assert tab.locator("text.label").count() == len(report.clusters) == 2
    assert tab.locator("tr.detail:visible").count() == 0
    assert tab.locator("#glossary dt").count() >= 6
    tab.screenshot(path=shots / "rift-loaded.png")
    assert (shots / "rift-loaded.png").read_bytes()[:4] == b"\x89PNG"
    assert problems == []


def test_clicking_a_point_opens_and_selects_its_cluster_row(
    page: tuple[Page, RiftReport, list[str]], shots: Path
) -> None:
    tab, report, problems = page
    medium = next(c for c in report.clusters if c.risk == "MEDIUM")
    tab.click(f"circle.pt[data-key='{medium.members[0].key}']")
    row = tab.locator(f"#cluster-{medium.id}")
    assert row.locator("tr.detail").is_visible()
    assert "selected" in (row.get_attribute("class") or "")
    assert tab.get_attribute("body", "data-selected") == str(medium.id)
    assert row.locator("pre.fix").count() >= 1  # the override text to paste
    tab.screenshot(path=shots / "rift-clicked.png")
    tab.click(f"text.label[data-cluster='{report.clusters[0].id}']")
    assert tab.locator(f"#cluster-{report.clusters[0].id} tr.detail").is_visible()
    assert problems == []


def test_search_and_filters_narrow_the_table(page: tuple[Page, RiftReport, list[str]]) -> None:
    tab, report, problems = page
    everything = [str(c.id) for c in report.clusters]
    archive = next(str(c.id) for c in report.clusters if "archive" in c.servers)
    weather = next(str(c.id) for c in report.clusters if "weather" in c.servers)
    assert _visible_clusters(tab) == everything

    tab.fill("#search", "fetch_beta")
    assert _visible_clusters(tab) == [archive]
    tab.fill("#search", "")
    tab.uncheck("input.f-risk[value='HIGH']")
    assert _visible_clusters(tab) == [weather]
    tab.check("input.f-risk[value='HIGH']")
    tab.select_option("#f-scope", "cross-server")
    assert _visible_clusters(tab) == [weather]
    tab.select_option("#f-scope", "")
    tab.select_option("#f-server", "archive")
    assert _visible_clusters(tab) == [archive]
    assert tab.locator("#shown").inner_text() == "showing 1 of 2 clusters"
    assert problems == []


def test_colour_toggle_switches_points_from_risk_to_server(
    page: tuple[Page, RiftReport, list[str]], shots: Path
) -> None:
    tab, _, problems = page
    point = "circle.pt[data-key='weather/get_forecast']"
    by_risk = tab.get_attribute(point, "fill")
    tab.check("#colour-server")
    by_server = tab.get_attribute(point, "fill")
    assert by_risk == "#ef6c00" and by_server is not None and by_server.startswith("hsl(")
    assert "meteo" in tab.locator("#legend").inner_text()
    tab.screenshot(path=shots / "rift-by-server.png")
    assert problems == []
