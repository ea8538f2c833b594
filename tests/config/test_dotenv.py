"""A client entry's envFile: the dotenv subset VS Code users write, and refusals by code."""

from __future__ import annotations

from pathlib import Path

import pytest

from cartograph.config.dotenv import read_env_file
from cartograph.errors import ConfigError


def test_the_dotenv_subset_reads_as_written(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text(
        "# comment\n\nexport A=1\nB = two words  # note\nC='lit #$x'\n"
        'D="a\\nb \\"q\\""\nE=\nF=x=y\n'
    )
    assert read_env_file(path, where="w") == {
        "A": "1",
        "B": "two words",
        "C": "lit #$x",
        "D": 'a\nb "q"',
        "E": "",
        "F": "x=y",
    }


@pytest.mark.parametrize("line", ["NOT A LINE", "1X=2", "A='open", 'A="open'])
def test_a_line_that_is_not_key_value_is_refused_naming_its_line_not_its_value(
    tmp_path: Path, line: str
) -> None:
    path = tmp_path / ".env"
    path.write_text(f"OK=1\n{line}\n")
    with pytest.raises(ConfigError) as refused:
        read_env_file(path, where="f: server 'calc'")
    assert refused.value.code == "config_env_file"
    assert "line 2" in refused.value.message and "server 'calc'" in refused.value.message
    assert "open" not in refused.value.message.split("line 2")[1]
