"""A pytest plugin that holds the suite to the promises manifest.

Every test that proves a promise carries ``@pytest.mark.promise("P-...")``. The
plugin reads those marks from the collected test modules themselves and:

* always fails the run (usage error, before any test runs) when a mark names an
  id that is not in the manifest, or carries no id at all;
* in an *enforced* run, fails the session unless every promise id has at least
  one marked test that ran and passed, and every marked test ran and passed
  (a deselected, skipped, failed or never-run marked test proves nothing).

A run is enforced when it is a **full run** or when ``--check-promises`` is
given. A full run is one where

1. every collection argument is the manifest's directory (the tests root) or
   an ancestor of it, with no ``::`` node selection — running ``pytest`` with no
   arguments collects ``testpaths``, which counts;
2. no ``--ignore``, ``--ignore-glob`` or ``--deselect`` option is set;
3. no collected item was deselected (``-k``, ``-m``, ``--lf`` and any other
   plugin deselect through the ``pytest_deselected`` hook);
4. it is not ``--collect-only``.

Any other run is partial and only the unknown-id check applies, so a targeted
``pytest tests/cards -k drift`` stays quick. ``--check-promises`` on a partial
run fails it and names what was left out, which is how CI proves the promise
check cannot pass with a promised test deselected.

The manifest path comes from the ``promise_manifest`` ini option (relative to
the rootdir): one promise per line, the id first (``P-SIG-1 Canonical ...``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

MARK = "promise"
ID_LINE = re.compile(r"^(P-[A-Z]+-\d+)\b", re.M)
PASSED = "passed"


def read_manifest(path: Path) -> list[str]:
    """The promise ids a manifest file lists, in file order."""
    return ID_LINE.findall(path.read_text(encoding="utf-8"))


@dataclass(eq=False)  # pluggy keeps plugins in sets: identity hashing
class PromiseCheck:
    """Records which promised tests ran and passed, and judges the session."""

    manifest: Path
    tests_root: Path
    forced: bool
    known: frozenset[str]
    promised: dict[str, tuple[str, ...]] = field(default_factory=dict)
    outcomes: dict[str, str] = field(default_factory=dict)
    deselected: list[str] = field(default_factory=list)
    partial_because: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Read every mark before ``-k``/``-m`` deselect anything."""
        bad: list[str] = []
        for item in items:
            ids = _ids_of(item)
            unknown = [i for i in ids or () if i not in self.known]
            if ids is None or unknown:
                bad.append(f"{item.nodeid}: {unknown or 'a promise mark needs string ids'}")
            elif ids:
                self.promised[item.nodeid] = ids
        if bad:
            raise pytest.UsageError(
                f"promise marks name ids missing from {self.manifest.name} "
                "(add the promise there first, or fix the id):\n  " + "\n  ".join(bad)
            )

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected.extend(i.nodeid for i in items)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep the worst outcome per test: a teardown error spoils a passed call."""
        if report.nodeid not in self.promised:
            return
        spoiled = self.outcomes.get(report.nodeid, PASSED) != PASSED
        if spoiled or not (report.when == "call" or report.outcome != PASSED):
            return
        self.outcomes[report.nodeid] = "xfailed" if hasattr(report, "wasxfail") else report.outcome

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = session.config
        self.partial_because = _partial_reasons(config, self.tests_root, self.deselected)
        if not (self.forced or not self.partial_because):
            return
        self.problems = self._judge()
        if self.problems and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        tr = terminalreporter
        if not (self.forced or not self.partial_because):
            why = "; ".join(self.partial_because)
            tr.write_line(f"promise check not enforced (partial run: {why})")
            return
        if not self.problems:
            tr.write_line(f"promise check: all {len(self.known)} promises proved by passing tests")
            return
        tr.section("promise check failed", sep="=", red=True, bold=True)
        for line in self.problems:
            tr.write_line(line)

    def _judge(self) -> list[str]:
        problems = [f"run was partial: {why}" for why in self.partial_because]
        deselected = set(self.deselected)
        proved: set[str] = set()
        for nodeid, ids in sorted(self.promised.items()):
            outcome = "deselected" if nodeid in deselected else self.outcomes.get(nodeid, "not run")
            if outcome == PASSED:
                proved.update(ids)
            else:
                problems.append(f"{nodeid} ({', '.join(ids)}) {outcome}")
        for missing in sorted(self.known - proved):
            problems.append(f"{missing}: no marked test ran and passed")
        return problems


def _ids_of(item: pytest.Item) -> tuple[str, ...] | None:
    """All ids on an item's promise marks; ``None`` when a mark is malformed."""
    ids: list[str] = []
    for mark in item.iter_markers(MARK):
        if not mark.args or mark.kwargs or not all(isinstance(a, str) for a in mark.args):
            return None
        ids.extend(mark.args)
    return tuple(ids)


def _partial_reasons(config: pytest.Config, tests_root: Path, deselected: list[str]) -> list[str]:
    """Why this run is not a full run (empty when it is one); see the module docstring."""
    reasons: list[str] = []
    narrow = [arg for arg in config.args if not _covers(config, arg, tests_root)]
    if narrow:
        shown = ", ".join(repr(a) for a in narrow[:3]) + (", ..." if len(narrow) > 3 else "")
        reasons.append(f"arguments {shown} select less than {tests_root.name}/")
    for option in ("ignore", "ignore_glob", "deselect"):
        if config.getoption(option, None):
            reasons.append(f"--{option.replace('_', '-')} is set")
    if deselected:
        reasons.append(f"{len(deselected)} tests deselected")
    if config.getoption("collectonly", False):
        reasons.append("--collect-only")
    return reasons


def _covers(config: pytest.Config, arg: str, tests_root: Path) -> bool:
    """Whether a collection argument is the tests root or an ancestor, with no node part."""
    path_part, _, node_part = arg.partition("::")
    target = Path(config.invocation_params.dir, path_part).resolve()
    return not node_part and (target == tests_root or target in tests_root.parents)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("promise_manifest", "file listing the promise ids, one per line", type="paths")
    parser.addoption(
        "--check-promises",
        action="store_true",
        help="fail unless every promised test ran and passed, even on a partial run",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARK}(id): the promise id (from the manifest) it proves")
    paths: list[Path] = config.getini("promise_manifest")
    if not paths:
        raise pytest.UsageError("promise_check needs the promise_manifest ini option")
    manifest = Path(paths[0]).resolve()
    check = PromiseCheck(
        manifest=manifest,
        tests_root=manifest.parent,
        forced=bool(config.getoption("check_promises")),
        known=frozenset(read_manifest(manifest)),
    )
    config.pluginmanager.register(check, "promise-check")
