"""benchmarks/software_tm_agreement.py counts a dev string the TM holds, and whether its English agrees."""

from __future__ import annotations

from mtserve.eval.build_software import Catalog, Project
from tests.bench.helpers import benchmark_script


def test_hits_are_counted_with_their_agreement_and_sources_once():
    agreement = benchmark_script("software_tm_agreement").agreement
    catalogs = [
        Catalog(Project("memory", "1", "tm"), pairs=[("删除", "Delete"), ("行", "Row"), ("配置", "Configuration"),
                                                     ("取消", "Cancel")]),
        Catalog(Project("app", "1", "dev"), pairs=[("删除", "Delete"), ("行", "Line"), ("配置", "configuration."),
                                                  ("新建", "New")]),
        Catalog(Project("other", "1", "dev"), pairs=[("新建", "Create"), ("保存", "Save")]),  # 新建 again: not counted
        Catalog(Project("tested", "1", "test"), pairs=[("删除", "Remove"), ("取消", "cancel.")]),  # 删除: seen in dev
    ]
    assert agreement(catalogs) == {"dev": [5, 3, 1, 2], "test": [1, 1, 0, 1]}
