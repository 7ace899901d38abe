import json

from mtserve.bench.report import machine, plot, ratio_table, table, write_json
from mtserve.bench.stats import Outcome, Ratio, summarize


def _points():
    out = []
    for name, scale in (("mtserve", 1.0), ("naive", 2.0)):
        for load in (1, 2, 4):
            outcomes = [Outcome("short", True, 0.0, scale * 0.1 * load, generated_tokens=8)
                        for _ in range(10)]
            out.append(summarize(name, "closed", load, outcomes, wall_s=scale * 2.0))
    return out


def test_json_round_trip(tmp_path):
    points = _points()
    ratio = Ratio("closed", 1, "mtserve", "naive", {"rps": 0.5})
    path = write_json(tmp_path / "r" / "result.json", meta={"machine": machine()}, targets={"mtserve": {}},
                      points=points, per_round=points, ratios=[ratio])
    body = json.loads(path.read_text())
    assert len(body["points"]) == 6 and body["ratios"][0]["b_over_a"]["rps"] == 0.5
    assert body["meta"]["machine"]["logical_cpus"] >= 1


def test_tables_show_every_point():
    text = table(_points())
    assert text.splitlines()[0].split()[:3] == ["target", "scenario", "load"]
    assert len(text.splitlines()) == 7
    md = table(_points(), markdown=True)
    assert md.startswith("| target |") and md.count("\n") == 7
    r = ratio_table([Ratio("closed", 8, "A", "B", {"rps": 0.97}, per_round=[{"rps": 0.95}, {"rps": 0.99}])])
    assert "A = A, B = B" in r and "0.970" in r and "0.950, 0.990" in r


def test_plot_writes_a_png(tmp_path):
    path = plot(tmp_path / "plot.png", _points(), title="fake")
    assert path is not None and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
