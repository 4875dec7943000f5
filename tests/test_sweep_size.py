"""A sweep says before it starts how much it will write, and refuses what its disk cannot hold."""

from __future__ import annotations

import collections
from pathlib import Path

from markovgames.cli import main
from markovgames.experiments.sweeps._config import load_sweep_config
from markovgames.experiments.sweeps._plan import plan_sweep

CONFIG = 'T = 200\ngames = ["paper"]\nalgorithms = ["smooth_ce", "stage_cce"]\ncheckpoints = [10, 20, 50, 100, 200]\n'


def test_the_estimate_is_what_a_sweep_writes(tmp_path, monkeypatch):
    (tmp_path / "s.toml").write_text(CONFIG)
    config, _ = load_sweep_config(tmp_path / "s.toml")
    estimate = plan_sweep(config, tmp_path).output_bytes()
    assert estimate == 24 * 1024 + 2 * 2048 + 2 * 5 * (200 + 105 * 2)  # two runs, five checkpoints, two players
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "s.toml", "--out", "sw", "--quiet", "--workers", "1"]) == 0
    written = sum(p.stat().st_size for p in Path(tmp_path / "sw").rglob("*") if p.is_file())
    assert 0.8 * estimate <= written <= 1.25 * estimate  # "about" (32,772 estimated, 31,197 measured)


def test_a_large_sweep_is_announced_and_one_too_large_for_the_disk_refused(tmp_path, monkeypatch, capsys):
    from markovgames.cli import _run as cli_run
    from markovgames.experiments.sweeps import _sweep

    (tmp_path / "s.toml").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(_sweep.shutil, "disk_usage", lambda path: usage(10**6, 10**6 - 1000, 1000))
    assert main(["sweep", "s.toml", "--out", "sw", "--quiet", "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert "--out sw: the sweep writes about 32.0 KiB (2 runs, their checkpoints' rows), more than the 1,000 bytes free" in err
    assert not (tmp_path / "sw").exists()
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli_run, "LARGE_WRITE_BYTES", 10_000)
    assert main(["sweep", "s.toml", "--out", "sw", "--quiet", "--workers", "1"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("markovgames: note: this sweep writes about 32.0 KiB into sw (2 runs, 10 checkpoint rows)")


def test_a_small_sweep_says_nothing(tmp_path, monkeypatch, capsys):
    (tmp_path / "s.toml").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "s.toml", "--out", "sw", "--quiet", "--workers", "1"]) == 0
    assert capsys.readouterr().err == ""  # 24 KiB: below the 1 GB threshold


def test_a_resumed_sweep_needs_room_only_for_its_pending_runs(tmp_path, monkeypatch, capsys):
    from markovgames.experiments.sweeps import _sweep

    (tmp_path / "s.toml").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "s.toml", "--out", "sw", "--quiet", "--workers", "1"]) == 0
    config, _ = load_sweep_config(tmp_path / "s.toml")
    plan = plan_sweep(config, tmp_path)
    done, pending = plan.run_ids
    (tmp_path / "sw" / "runs" / f"{pending}.json").unlink()  # as if interrupted before its second run
    one_run = plan.output_bytes([pending])
    assert one_run == 24 * 1024 + 2048 + 5 * (200 + 105 * 2)
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(_sweep.shutil, "disk_usage", lambda path: usage(10**6, 0, one_run + 1))  # not room for both
    assert plan.output_bytes() > one_run + 1
    assert main(["sweep", "s.toml", "--out", "sw", "--quiet", "--workers", "1"]) == 0, capsys.readouterr().err
    assert (tmp_path / "sw" / "runs" / f"{pending}.json").exists() and (tmp_path / "sw" / "runs" / f"{done}.json").exists()
