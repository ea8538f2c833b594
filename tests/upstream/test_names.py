"""P-NAME-1: names that read the same address the same thing, so collisions are refused."""

from __future__ import annotations

import pytest

from cartograph.catalog.model import Catalog, ServerDef, ToolDef
from cartograph.errors import NameCollisionError
from cartograph.names import NamedThing, check_names, find_collision, normalise_name
from cartograph.upstream.names import check_catalog_names

pytestmark = pytest.mark.promise("P-NAME-1")


@pytest.mark.parametrize(
    "variant",
    [
        "get_file",
        "get-file",
        "getFile",
        "GET FILE",
        "Get.File",
        "get/file",
        "get:file",
        "ｇｅｔ＿ｆｉｌｅ",
        "GETFILE",
    ],
)
def test_separators_case_and_width_do_not_make_a_name_different(variant: str) -> None:
    assert normalise_name(variant) == normalise_name("get_file")


def test_different_words_stay_different() -> None:
    assert normalise_name("get_file") != normalise_name("get_files")
    assert normalise_name("git_status") != normalise_name("status")


def test_a_collision_names_both_sources() -> None:
    things = [NamedThing("read-file", "tool A"), NamedThing("readFile", "tool B")]
    with pytest.raises(NameCollisionError) as caught:
        check_names(things)
    assert caught.value.code == "name_collision"
    assert caught.value.details == {"first": "tool A", "second": "tool B"}
    assert "tool A" in caught.value.message and "tool B" in caught.value.message


@pytest.mark.parametrize("name", ["discover", "Status", "CALL", "dis-cover"])
def test_a_name_like_a_proxy_tool_is_reserved(name: str) -> None:
    with pytest.raises(NameCollisionError) as caught:
        check_names([NamedThing(name, "tool X")])
    assert caught.value.code == "name_reserved"
    assert "proxy tool" in caught.value.message


def test_distinct_names_pass() -> None:
    assert find_collision([NamedThing("a", "1"), NamedThing("b", "2")]) is None


def test_a_catalog_with_colliding_server_names_is_rejected() -> None:
    catalog = Catalog(servers=(ServerDef(name="my-server"), ServerDef(name="My_Server")))
    with pytest.raises(NameCollisionError) as caught:
        check_catalog_names(catalog)
    assert caught.value.code == "name_collision"
    assert "'my-server'" in caught.value.message and "'My_Server'" in caught.value.message


def test_the_same_tool_name_on_two_servers_is_fine() -> None:
    tools = (ToolDef(name="echo"),)
    check_catalog_names(
        Catalog(servers=(ServerDef(name="a", tools=tools), ServerDef(name="b", tools=tools)))
    )
