"""benchmarks/software_own_tm.py keeps a group's own strings that the set does not hold, each source once."""

from __future__ import annotations

from mtserve.eval.build_software import Catalog, Project
from tests.bench.helpers import benchmark_script


def test_the_sets_sources_are_left_out_and_a_source_comes_once_per_group():
    own_memories = benchmark_script("software_own_tm").own_memories
    catalogs = [
        Catalog(Project("memory", "1", "tm"), pairs=[("删除", "Delete")]),  # the other projects' TM: not here
        Catalog(Project("app", "1", "dev"), pairs=[("删除", "Remove"), ("保存", "Save"), ("确定，取消", "OK, Cancel")]),
        Catalog(Project("other", "1", "dev"), pairs=[("保存", "Store"), ("新建", "New")]),
        Catalog(Project("tested", "1", "test"), pairs=[("保存", "Save it"), ("打开", "Open")]),
    ]
    held = {"确定,取消", "打开"}  # match keys of the set's own sources: 确定，取消 is one by the TM's exact rule
    assert own_memories(catalogs, held) == {
        "dev": [("app", [("删除", "Remove"), ("保存", "Save")]), ("other", [("新建", "New")])],
        "test": [("tested", [("保存", "Save it")])],
    }


def test_the_committed_sets_sources_are_read_by_their_column(tmp_path):
    path = tmp_path / "software.tsv"
    path.write_text("# comment\nid\tsplit\tproject\tzh\ten\nx-1\tdev\tx\t确定，取消\tOK, Cancel\n", encoding="utf-8")
    assert benchmark_script("software_own_tm").set_sources(path) == {"确定,取消"}
