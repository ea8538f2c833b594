"""The self-contained HTML report: one file, no CDN, no network.

The page (``report.html``) carries its CSS and JavaScript inline and the
report as a JSON data block; the script draws the PCA map as inline SVG and
fills the tables with ``textContent`` only, so a tool name or card text can
never become markup. A Content-Security-Policy with ``default-src 'none'``
and sha256 hashes of the one style and one script block makes the browser
itself refuse any network request or any other script.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any, Final

from cartograph.fsutil import atomic_write_text
from cartograph.rift.model import RiftReport
from cartograph.rift.render import comparison_table, headline

_TEMPLATE: Final = "report.html"
_STYLE: Final = re.compile(r"<style>(.*?)</style>", re.S)
_SCRIPT: Final = re.compile(r"<script>(.*?)</script>", re.S)


def _template() -> str:
    return resources.files("cartograph.rift").joinpath(_TEMPLATE).read_text(encoding="utf-8")


def _sha256(block: str) -> str:
    digest = hashlib.sha256(block.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def _csp(template: str) -> str:
    style = _STYLE.search(template)
    script = _SCRIPT.search(template)
    if style is None or script is None:  # the shipped template always has both
        raise ValueError("report template lacks its <style> or <script> block")
    return (
        "default-src 'none'; "
        f"style-src {_sha256(style.group(1))}; "
        f"script-src {_sha256(script.group(1))}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def _data(report: RiftReport) -> dict[str, Any]:
    body = report.model_dump(
        mode="json", include={"points", "clusters", "names", "settings", "duplicates"}
    )
    body["headline"] = headline(report)
    body["comparison_columns"], body["comparison_rows"] = comparison_table(report)
    return body


def _json_for_script(value: Any) -> str:
    """JSON that cannot close its <script> element or open a comment."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def render_html(report: RiftReport) -> str:
    """The whole report page as one string."""
    template = _template()
    page = template.replace("__CSP__", _csp(template), 1)
    return page.replace("__DATA__", _json_for_script(_data(report)), 1)


def write_html(report: RiftReport, path: Path) -> None:
    """Write the page atomically (P-REL-9)."""
    atomic_write_text(path, render_html(report))


__all__ = ["render_html", "write_html"]
