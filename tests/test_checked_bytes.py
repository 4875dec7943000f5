"""A file checked against a recorded SHA-256 is parsed from the very bytes that were hashed.

A run directory records the SHA-256 of its game, curve and (V-learning) policy files. Reading a
file twice, once to hash it and once by its path to parse it, would let a file replaced in between
be read in place of the checked one. Here the file is replaced at exactly that moment, right after
its bytes were read and hashed: the reader must still give the numbers of the checked bytes.
"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from markovgames.cli import main
from markovgames.games import load_game, paper_game, save_game


def _replacing_after_the_read(monkeypatch, module, target, replacement: bytes) -> list[int]:
    """Make ``module.read_hashed`` replace ``target`` on disk right after it has read and hashed it."""
    real = module.read_hashed
    calls: list[int] = []

    def read_then_replace(fh, limit):
        out = real(fh, limit)
        if os.path.samestat(os.fstat(fh.fileno()), os.stat(target)):
            target.write_bytes(replacement)
            calls.append(1)
        return out

    monkeypatch.setattr(module, "read_hashed", read_then_replace)
    return calls


def test_a_game_replaced_after_its_hash_is_not_read(tmp_path, monkeypatch):
    import hashlib

    import markovgames.games._io._read as io_module

    path = tmp_path / "g.json"
    save_game(paper_game(), path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    other = paper_game()
    forged = json.loads(path.read_text())
    forged["rewards"][0][0][0] = [[0.0, 0.0], [0.0, 0.0]]
    calls = _replacing_after_the_read(monkeypatch, io_module, path, json.dumps(forged).encode())
    game = load_game(path, sha256=digest)
    assert calls == [1]
    np.testing.assert_array_equal(game.rewards, other.rewards)
    from markovgames.games._io import GameDigestError

    with pytest.raises(GameDigestError, match="SHA-256 differs"):  # the file now on disk is refused
        load_game(path, sha256=digest)


@pytest.fixture(scope="module")
def vlearn_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("vl") / "vl"
    assert main(["vlearn", "paper", "--algorithm", "cce-v", "--episodes", "20", "--quiet", "--out", str(out)]) == 0
    return out


def test_a_policy_replaced_after_its_hash_is_not_read(tmp_path, monkeypatch, vlearn_run, capsys):
    import markovgames.experiments.rundirs._vlearn as vlearn_module
    from markovgames.policies import VisitChainPolicy

    directory = tmp_path / "vl"
    shutil.copytree(vlearn_run, directory)
    assert main(["evaluate", str(directory), "--out", str(tmp_path / "before.json")]) == 0
    policy = VisitChainPolicy.load(directory / "policy.npz")
    forged_path = tmp_path / "forged.npz"
    uniform = tuple(np.full_like(p, 1.0 / p.shape[-1]) for p in policy.policies)
    VisitChainPolicy(policy.kind, policy.visited, uniform).save(forged_path)
    calls = _replacing_after_the_read(monkeypatch, vlearn_module, directory / "policy.npz", forged_path.read_bytes())
    assert main(["evaluate", str(directory), "--out", str(tmp_path / "after.json")]) == 0
    assert calls == [1]
    before = json.loads((tmp_path / "before.json").read_text())
    after = json.loads((tmp_path / "after.json").read_text())

    def numbers(report):
        return {k: v for k, v in report.items() if "time" not in k and k not in ("created", "versions")}

    assert numbers(after) == numbers(before) and "cce_gap" in json.dumps(before)
    capsys.readouterr()
    assert main(["evaluate", str(directory)]) == 2  # the file now on disk is refused
    assert "SHA-256 differs" in capsys.readouterr().err


def test_a_curve_replaced_after_its_hash_is_not_read(tmp_path, monkeypatch, capsys):
    import markovgames.experiments.rundirs._read as read_module
    from markovgames.experiments import load_run_directory

    directory = tmp_path / "r"
    assert main(["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "20", "--out", str(directory), "--quiet"]) == 0
    before = load_run_directory(directory)
    curve = directory / "curve.npz"
    arrays = dict(np.load(curve))
    arrays["value"] = arrays["value"] * 0.5
    forged = tmp_path / "forged.npz"
    np.savez(forged, **arrays)
    calls = _replacing_after_the_read(monkeypatch, read_module, curve, forged.read_bytes())
    after = load_run_directory(directory)
    assert calls == [1]
    np.testing.assert_array_equal(after.value, before.value)
