"""P-NAME-1 on the serve path.

``serve`` reads its config once, at start (there is no config reload), and
refuses colliding server names there. ``serve --unsafe-throwaway-key`` signs what
the servers list at start, so it must check tool names as ``bootstrap`` does:
a server whose live tools collide gets no card and is not served.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cartograph.cli.main import main
from tests.helpers.support import scriptable
from tests.server.support import call, code, running, text


@pytest.mark.promise("P-NAME-1")
def test_serve_refuses_to_start_on_server_names_that_collide_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "cartograph.toml"
    config.write_text('[servers.my-server]\ncommand = "x"\n[servers.my_server]\ncommand = "y"\n')
    monkeypatch.setattr("sys.argv", ["cartograph", "serve", "--config", str(config)])
    with pytest.raises(SystemExit) as exited:
        main()
    [line] = capsys.readouterr().err.strip().splitlines()
    assert exited.value.code != 0
    assert line.startswith("error (name_collision): ")
    assert "'my-server'" in line and "'my_server'" in line


@pytest.mark.anyio
@pytest.mark.promise("P-NAME-1")
async def test_serve_refuses_a_server_whose_live_tools_collide_naming_both(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clash = scriptable("clash", env={"SCRIPTABLE_EXTRA_TOOL": "e-cho"})  # collides with echo
    async with running(tmp_path, clash, scriptable("fine")) as handlers:
        refused = await call(handlers, "clash", "echo", text="hi")
        served = await call(handlers, "fine", "echo", text="hi")
        status = await handlers.call_tool("status", {"detail": True}, principal=None)
    assert text(served) == "hi"
    assert code(refused) == "unknown_tool"
    assert status.structured_content is not None
    [clashing] = [s for s in status.structured_content["servers"] if s["name"] == "clash"]
    assert clashing["card_error"]["code"] == "name_collision"
    assert clashing["tools"]["servable"] == 0
    [logged] = [r.getMessage() for r in caplog.records if "name_collision" in r.getMessage()]
    assert "'echo'" in logged and "'e-cho'" in logged
