import json
import os
import time

from mtserve.bench.process import ProcessSampler, find_listening_pid
from mtserve.cli import main
from tests.bench.helpers import FakeTarget


def test_bench_refuses_a_url_off_this_machine(capsys):
    assert main(["bench", "--url", "http://192.168.0.10:8000", "--no-progress"]) == 2
    assert "loopback" in capsys.readouterr().err


def test_bench_needs_a_target(capsys):
    assert main(["bench", "--no-progress"]) == 2
    assert "name a target" in capsys.readouterr().err


def test_bench_compare_on_fake_targets_writes_json_plot_and_ratios(tmp_path, monkeypatch, capsys):
    import mtserve.bench.targets as targets

    monkeypatch.setattr(targets, "make_target", lambda spec, settings, server_pid=None: FakeTarget(spec))
    out = tmp_path / "out"
    rc = main(["bench", "--compare", "A", "B", "--concurrency", "1,2", "--requests", "3", "--rounds", "2",
               "--out", str(out), "--no-progress", "--warmup", "0"])
    assert rc == 0
    body = json.loads((out / "result.json").read_text())
    assert [e.split()[1] for e in body["meta"]["plan"]["order"]] == ["A", "B"] * 2 + ["B", "A"] * 2
    assert {p["target"] for p in body["points"]} == {"A", "B"} and len(body["ratios"]) == 2
    assert (out / "plot.png").stat().st_size > 1000
    printed = capsys.readouterr().out
    assert "B/A with A = A, B = B" in printed


def test_sampler_reads_this_process():
    with ProcessSampler(os.getpid(), interval_s=0.01) as sampler:
        burn_until = time.process_time() + 0.2  # CPU time the sampler must see (ticks are 10 ms)
        while time.process_time() < burn_until:
            sum(i * i for i in range(10_000))
    figures = sampler.figures()
    print(f"\nsampled: {figures.cpu_percent:.0f}% CPU, {figures.peak_rss_mb:.0f} MB, "
          f"{sampler.samples} samples")
    assert figures.peak_rss_mb > 1 and figures.cpu_percent > 0 and sampler.samples >= 2


def test_sampler_without_a_pid_reports_nothing():
    with ProcessSampler(None) as sampler:
        pass
    assert sampler.figures().peak_rss_mb != sampler.figures().peak_rss_mb  # NaN


def test_find_listening_pid_finds_our_socket():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert find_listening_pid(s.getsockname()[1]) == os.getpid()
