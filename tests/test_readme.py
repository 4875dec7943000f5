"""The README's Python example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert blocks, "the README has no Python example"
    for block in blocks:
        exec(compile(block, str(README), "exec"), {})
    assert capsys.readouterr().out.strip()


def test_readme_random_game_examples_learn_and_say_why_theory_does_not(tmp_path, monkeypatch, capsys):
    """The README's random-game commands, run as written: the constant-rate run learns (its gap at T
    is far below its gap at T' = 1) and keeps a trajectory of a reasonable size; the run with the
    theory rate keeps none, and the text next to it says why it barely learns."""
    import json
    import shlex

    from markovgames.cli import main

    text = README.read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S) if "my_game.json" in b)
    commands = [shlex.split(line.split("#")[0]) for line in block.splitlines() if "my_game.json" in line]
    assert commands[0][:3] == ["markovgames", "games", "random"]
    monkeypatch.chdir(tmp_path)
    for argv in commands:
        assert main(argv[1:] + (["--quiet"] if argv[1] == "run" else [])) == 0, argv
    runs = [argv for argv in commands if argv[1] == "run"]
    assert runs, "no run of my_game.json in the README"
    for argv in runs:
        out = tmp_path / argv[argv.index("--out") + 1]
        metrics = json.loads((out / "metrics.json").read_text())
        concept = "certified_cce_gap" if "cce" in metrics["algorithm"] else "certified_ce_gap"
        first, last = metrics["checkpoints"][0][concept], metrics["checkpoints"][-1][concept]
        trajectory = sum(p.stat().st_size for p in (out / "trajectory").glob("*.npy")) if (out / "trajectory").exists() else 0
        assert trajectory < 20 * 2**20, (argv, trajectory)
        if "theory" in argv:
            assert "--no-trajectory" in argv and last > 0.9 * first  # the theory rate barely moves the gap
            assert f"{first:.3f} -> {last:.3f}" in text  # and the README says so, with its numbers
        else:
            assert last < first / 100, (argv, first, last)
    capsys.readouterr()
