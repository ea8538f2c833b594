"""The promise check itself: run it over a small sample suite and watch it fail.

Each case runs pytest in a subprocess over a two-promise sample tree that uses
the real ``tests/promise_check.py``, so a deselected, skipped or mis-named
promised test is shown to fail the run, not merely to be noticed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.promise_check import read_manifest

TESTS = Path(__file__).parent
MANIFEST = TESTS / "promises.txt"

SAMPLE_TESTS = """
import pytest

@pytest.mark.promise("P-A-1")
def test_one():
    pass

@pytest.mark.promise("P-B-2")
def test_two():
    {body}

def test_unpromised():
    pass
"""


def test_manifest_lists_each_promise_once() -> None:
    ids = read_manifest(MANIFEST)
    assert len(ids) >= 30
    assert len(ids) == len(set(ids))


@pytest.fixture
def sample(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A rootdir with the plugin, ``tests/promises.txt`` and one test module."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeini(
        "[pytest]\ntestpaths = tests\npromise_manifest = tests/promises.txt\n"
        "addopts = --strict-markers -p no:cacheprovider\n"
    )
    pytester.makeconftest('pytest_plugins = ["promise_check"]')
    plugin = (TESTS / "promise_check.py").read_text(encoding="utf-8")
    pytester.makepyfile(promise_check=plugin)
    pytester.mkdir("tests")
    # A conftest in a sibling folder makes pytest build hook subsets, which hash every plugin.
    pytester.mkdir("tests/other")
    (pytester.path / "tests" / "other" / "conftest.py").write_text("", "utf-8")
    (pytester.path / "tests" / "promises.txt").write_text("P-A-1 one\nP-B-2 two\n", "utf-8")
    _write_tests(pytester, "pass")
    return pytester


def _write_tests(pytester: pytest.Pytester, body: str, marks: str = "") -> None:
    source = marks + SAMPLE_TESTS.format(body=body)
    (pytester.path / "tests" / "test_sample.py").write_text(source, "utf-8")


def test_a_full_run_with_every_promise_passing_succeeds(sample: pytest.Pytester) -> None:
    result = sample.runpytest()
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["promise check: all 2 promises proved by passing tests"])


def test_a_partial_run_is_not_enforced_and_says_so(sample: pytest.Pytester) -> None:
    result = sample.runpytest("-k", "not test_two")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["promise check not enforced (partial run: 1 tests deselected)"])


@pytest.mark.parametrize(
    "selection",
    [
        ["-k", "not test_two"],
        ["-m", "not promise"],
        ["--deselect", "tests/test_sample.py::test_two"],
    ],
    ids=["-k", "-m", "--deselect"],
)
def test_the_check_fails_when_a_promised_test_is_deselected(
    sample: pytest.Pytester, selection: list[str]
) -> None:
    result = sample.runpytest("--check-promises", *selection)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*promise check failed*", "tests/test_sample.py::test_two (P-B-2) deselected"]
    )
    result.stdout.fnmatch_lines(["P-B-2: no marked test ran and passed"])


def test_the_check_fails_on_a_path_narrower_than_the_tests_root(sample: pytest.Pytester) -> None:
    result = sample.runpytest("--check-promises", "tests/test_sample.py::test_one")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["run was partial: arguments *test_sample.py::test_one* select*"])


def test_a_skipped_promised_test_fails_a_full_run(sample: pytest.Pytester) -> None:
    _write_tests(sample, 'pytest.skip("no upstream here")')
    result = sample.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["tests/test_sample.py::test_two (P-B-2) skipped"])


def test_an_xfailed_promised_test_proves_nothing(sample: pytest.Pytester) -> None:
    _write_tests(sample, 'pytest.xfail("known broken")')
    result = sample.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["tests/test_sample.py::test_two (P-B-2) xfailed"])


def test_a_promise_without_any_test_fails_a_full_run(sample: pytest.Pytester) -> None:
    manifest = sample.path / "tests" / "promises.txt"
    manifest.write_text("P-A-1 one\nP-B-2 two\nP-C-3 three, untested\n", "utf-8")
    result = sample.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["P-C-3: no marked test ran and passed"])


def test_an_unknown_promise_id_fails_even_a_partial_run(sample: pytest.Pytester) -> None:
    _write_tests(sample, "pass", marks='import pytest\npytestmark = pytest.mark.promise("P-Z-9")\n')
    result = sample.runpytest("-k", "test_unpromised")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*promise marks name ids missing from promises.txt*", "*P-Z-9*"])
