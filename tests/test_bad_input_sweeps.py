"""Bad input to ``markovgames sweep``, from its configuration to its directory: its section of ``docs/errors.md``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from bad_input import (
    LEARNER_FILE,
    Case,
    _a_file,
    _another_run,
    _both,
    _busy,
    _fifo,
    _set,
    _write_bytes,
    _write_game,
    check_case,
)
from markovgames.games import get_discounted_builtin, save_game

SWEEP_S = "markovgames sweep"
SWEEP_BASE = 'T = 50\ngames = ["paper"]\nalgorithms = ["smooth_ce"]\netas = [0.2]\ncheckpoints = [10, 50]\n'
#: A sweep of a discounted game.
DISCOUNTED_BASE = 'T = 50\ngames = ["matching_pennies_discounted"]\nalgorithms = ["hedge+discounted-smooth"]\netas = [0.2]\ncheckpoints = [10, 50]\n'


def _toml(text: str, name: str = "sweep.toml"):
    def setup(d: Path) -> None:
        (d / name).write_text(text)

    return setup


def _sweep(old: str, new: str):
    assert old in SWEEP_BASE
    return _toml(SWEEP_BASE.replace(old, new))


def _sweep_directory(
    edit_run: Callable[[dict], object] | None = None,
    edit_manifest: Callable[[dict], object] | None = None,
    manifest_text: str | None = None,
):
    """``sweep.toml`` (SWEEP_BASE) and the directory ``sw`` of its interrupted sweep, as a sweep
    leaves it: its one run's file (changed by ``edit_run``), its manifest (changed by
    ``edit_manifest``, or replaced by ``manifest_text``) and the lock file beside it. Made without
    running anything: the run's numbers are zeros."""

    def setup(d: Path) -> None:
        from markovgames.experiments.sweeps._config import load_sweep_config
        from markovgames.experiments.sweeps._execute import BatchOutput
        from markovgames.experiments.sweeps._plan import plan_sweep
        from markovgames.experiments.sweeps._results import _run_document
        from markovgames.experiments.sweeps._session import _SweepSession

        (d / "sweep.toml").write_text(SWEEP_BASE)
        config, raw = load_sweep_config(d / "sweep.toml")
        plan = plan_sweep(config, d)
        out = d / "sw"
        (out / "runs").mkdir(parents=True)
        session = _SweepSession(
            config,
            plan,
            out,
            overrides=(),
            progress=None,
            raw_config=raw,
            config_name="sweep.toml",
            start_wall=0.0,
            started_at="2026-01-01T00:00:00+00:00",
        )
        session.write_manifest("interrupted")
        if edit_manifest is not None or manifest_text is not None:
            manifest = json.loads((out / "manifest.json").read_text())
            if edit_manifest is not None:
                edit_manifest(manifest)
            text = manifest_text if manifest_text is not None else json.dumps(manifest)
            (out / "manifest.json").write_text(text)
        if edit_run is not None:
            (run,) = plan.runs
            checkpoints = np.asarray(run.checkpoints)
            zeros = np.zeros((1, len(checkpoints), run.game.num_players))
            output = BatchOutput("b", (run.run_id,), checkpoints, zeros, zeros, zeros, 0.0, 0.0, "host", 1)
            doc = _run_document(run, output, 0, 1, 1)
            edit_run(doc)
            (out / "runs" / f"{run.run_id}.json").write_text(json.dumps(doc))

    return setup


def _folder_with_runs(d: Path) -> None:
    """A project folder that happens to have a ``runs/`` subfolder and a ``results.parquet``: not a sweep."""
    (d / "proj" / "runs").mkdir(parents=True)
    (d / "proj" / "results.parquet").write_bytes(b"the project's own table\n")


CASES: list[Case] = [
    # ---- markovgames sweep
    Case(
        "sweep-run-file-damaged",
        SWEEP_S,
        "a run file of an interrupted sweep that was changed (a field of the wrong type)",
        _sweep_directory(edit_run=lambda doc: doc["records"][0].update(value="high")),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sw/runs/", "records[0].value: expected a list of 2 finite numbers (N)", "delete the file to run that run again"),
    ),
    Case(
        "sweep-manifest-damaged",
        SWEEP_S,
        "a manifest.json that was changed (a field of the wrong type)",
        _sweep_directory(edit_manifest=lambda doc: doc["sessions"][0].update(retries="many")),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sw/manifest.json", "sessions[0].retries: expected a non-negative integer", "delete it to start the manifest afresh"),
    ),
    Case(
        "sweep-manifest-nested-too-deep",
        SWEEP_S,
        "a manifest.json nested thousands deep",
        _sweep_directory(manifest_text="[" * 100000 + "]" * 100000),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sw/manifest.json", "JSON nested too deep"),
    ),
    Case(
        "sweep-unknown-key",
        SWEEP_S,
        "an unknown configuration key",
        _toml(SWEEP_BASE + "colour = 1\n"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "unknown key 'colour'", "allowed keys"),
        subprocess=True,
    ),
    Case(
        "sweep-unknown-nested-key",
        SWEEP_S,
        "an unknown key in a nested table",
        _sweep('games = ["paper"]', "games = [{random = {players = 2, horizon = 1, states = 2, actions = 2, colour = 1}}]"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "games[0].random", "unknown key 'colour'"),
    ),
    Case(
        "sweep-T-float",
        SWEEP_S,
        "T written as a float (a count is an integer, as in game files)",
        _sweep("T = 50", "T = 50.0"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "T:", "got 50.0", "a float"),
    ),
    Case(
        "sweep-grid-too-large",
        SWEEP_S,
        "a grid of more runs than --max-runs (checked before it is expanded)",
        _sweep(
            'games = ["paper"]', "games = [{random = {players = 2, horizon = 2, states = 2, actions = 2}}]\nseeds = 1000000000"
        ),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "the grid has 1000000000 runs", "more than --max-runs = 100000", "raise the limit with --max-runs"),
    ),
    Case(
        "sweep-random-games-too-large",
        SWEEP_S,
        "random games that together need more memory than the machine has",
        _sweep(
            'games = ["paper"]',
            "games = [{random = {players = 2, horizon = 1, states = 4096, actions = 64, successors = 1}}]\nseeds = 100000",
        ),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "games[0]", "the grid's random games take", "more than this machine's"),
    ),
    Case(
        "sweep-T-memory",
        SWEEP_S,
        "a T whose batches need more memory than the machine has",
        _sweep("T = 50", "T = 2147483647"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "T: a batch of 2147483647 iterations takes about", "more than this machine's"),
    ),
    Case(
        "sweep-checkpoints-too-many",
        SWEEP_S,
        "more checkpoints than a run reports (10000)",
        _toml(SWEEP_BASE.replace("T = 50", "T = 20000").replace("[10, 50]", str(list(range(1, 10002))))),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "checkpoints", "10001 checkpoints", "limit of 10000"),
    ),
    Case(
        "sweep-nested-too-deep",
        SWEEP_S,
        "arrays nested thousands deep",
        _toml("a = " + "[" * 5000 + "]" * 5000 + "\n"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "invalid TOML", "nested too deep"),
    ),
    Case(
        "sweep-dotted-key-too-long",
        SWEEP_S,
        "a dotted key of thousands of parts (refused before it is parsed)",
        _toml(SWEEP_BASE + ".".join(["a"] * 100_000) + " = 1\n"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "line 6", "a dotted key of more than 32 parts"),
    ),
    Case(
        "sweep-config-fifo",
        SWEEP_S,
        "a configuration that is a FIFO",
        _fifo("sweep.toml"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "not a regular file (a FIFO)"),
    ),
    Case(
        "sweep-out-busy",
        SWEEP_S,
        "a sweep directory another command is writing to",
        _both(_toml(SWEEP_BASE), _busy("sw")),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("--out sw", "another markovgames command is writing to this directory"),
    ),
    Case(
        "sweep-wrong-type",
        SWEEP_S,
        "a value of the wrong type",
        _sweep("T = 50", 'T = "ten"'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "T:", "'ten'"),
    ),
    Case(
        "sweep-T-zero",
        SWEEP_S,
        "T < 1",
        _sweep("T = 50", "T = 0"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "T:", "got 0"),
    ),
    Case(
        "sweep-T-too-large",
        SWEEP_S,
        "T beyond what the compiled loop can count",
        _sweep("T = 50", "T = 10_000_000_000"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "T:", "largest supported T"),
    ),
    Case(
        "sweep-eta-huge-integer",
        SWEEP_S,
        "a learning rate too large for a float",
        _sweep("etas = [0.2]", "etas = [1" + "0" * 400 + "]"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "etas[0]", "learning rate"),
    ),
    Case(
        "sweep-eta-too-large",
        SWEEP_S,
        "a learning rate whose logits the dtype cannot resolve",
        _sweep("etas = [0.2]", "etas = [0.2, 1e300]"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "etas[1]", "1e+300 is too large"),
    ),
    Case(
        "sweep-eta-nonpositive",
        SWEEP_S,
        "a learning rate <= 0",
        _sweep("etas = [0.2]", "etas = [0.2, 0]"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "etas[1]", "got 0"),
    ),
    Case(
        "sweep-empty-etas",
        SWEEP_S,
        "an empty grid: etas = []",
        _sweep("etas = [0.2]", "etas = []"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "etas:", "non-empty"),
    ),
    Case(
        "sweep-empty-algorithms",
        SWEEP_S,
        "an empty grid: algorithms = []",
        _sweep('algorithms = ["smooth_ce"]', "algorithms = []"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "algorithms:", "must not be empty"),
    ),
    Case(
        "sweep-empty-games",
        SWEEP_S,
        "an empty grid: games = []",
        _sweep('games = ["paper"]', "games = []"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "games:", "must not be empty"),
    ),
    Case(
        "sweep-unknown-algorithm",
        SWEEP_S,
        "an unknown algorithm",
        _sweep('algorithms = ["smooth_ce"]', 'algorithms = ["smooth_ce", "foo"]'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "algorithms[1]", "'foo'"),
    ),
    # ---- discounted games: one kind per sweep, and what a discounted run cannot take, named by key and cell
    Case(
        "sweep-discounted-mixed",
        SWEEP_S,
        "finite-horizon and discounted games in one sweep",
        _sweep('games = ["paper"]', 'games = ["paper", "matching_pennies_discounted"]'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "games[1]", "'matching_pennies_discounted' is a discounted game", "games[0] 'paper'", "of one kind"),
    ),
    Case(
        "sweep-finite-update-on-discounted",
        SWEEP_S,
        "a finite-horizon value update on a discounted game's file",
        lambda d: (
            save_game(get_discounted_builtin("prisoners_dilemma_discounted"), d / "g.json"),
            _sweep('games = ["paper"]', 'games = ["g.json"]')(d),
        ),
        ("sweep", "sweep.toml", "--out", "sw"),
        (
            "sweep.toml",
            "algorithms[0]",
            "'smooth' value update",
            "games[0] 'prisoners_dilemma_discounted'",
            "use bm-logbarrier+discounted-smooth",
        ),
    ),
    Case(
        "sweep-discounted-update-on-finite",
        SWEEP_S,
        "a discounted value update on a finite-horizon game",
        _sweep('algorithms = ["smooth_ce"]', 'algorithms = ["hedge+discounted-smooth"]'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "algorithms[0]", "'discounted-smooth' value update", "games[0] 'paper'", "hedge+smooth"),
    ),
    Case(
        "sweep-random-horizon-and-discount",
        SWEEP_S,
        "a random game with both a horizon and a discount",
        _sweep(
            'games = ["paper"]',
            "games = [{random = {players = 2, horizon = 2, discount = 0.9, states = 2, actions = 2, seed = 1}}]",
        ),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "games[0].random", "give exactly one of horizon", "and discount", "got both"),
    ),
    Case(
        "sweep-random-discount-one",
        SWEEP_S,
        "a random discounted game with discount 1",
        _sweep('games = ["paper"]', "games = [{random = {players = 2, discount = 1, states = 2, actions = 2, seed = 1}}]"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "games[0].random.discount", "1.0 is not below 1"),
    ),
    Case(
        "sweep-discounted-exact",
        SWEEP_S,
        "exact = true in a sweep of discounted games (no output policy)",
        _toml(DISCOUNTED_BASE + "exact = true\n"),
        ("sweep", "sweep.toml", "--out", "sw"),
        (
            "sweep.toml",
            "exact",
            "algorithms[0] 'hedge+discounted-smooth' on games[0] 'matching_pennies_discounted' (a discounted game",
            "no output policy",
            "last_iterate",
        ),
    ),
    Case(
        "sweep-discounted-eta-theory",
        SWEEP_S,
        "a 'theory' learning rate on a discounted game (the implemented rates are for finite-horizon games)",
        _toml(DISCOUNTED_BASE.replace("etas = [0.2]", 'etas = [0.2, "theory"]')),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "etas[1]", "on games[0] 'matching_pennies_discounted'", "'theory:", "give a number"),
    ),
    Case(
        "sweep-discounted-bandit",
        SWEEP_S,
        "bandit feedback on a discounted game (episodes of H steps)",
        _toml(
            DISCOUNTED_BASE.replace(
                'algorithms = ["hedge+discounted-smooth"]',
                'algorithms = [{name = "hedge+discounted-smooth", feedbacks = ["full", "bandit:2"]}]',
            )
        ),
        ("sweep", "sweep.toml", "--out", "sw"),
        (
            "sweep.toml",
            "algorithms[0].feedbacks[1]",
            "(a discounted game, discount = 0.9)",
            "bandit feedback",
            "full or sampled:K",
        ),
    ),
    Case(
        "sweep-discounted-vlearning",
        SWEEP_S,
        "V-learning on a discounted game",
        _toml(DISCOUNTED_BASE.replace('algorithms = ["hedge+discounted-smooth"]', 'algorithms = ["cce-v"]')),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "algorithms[0]", "'cce-v' is V-learning", "is a discounted game", "LEARNER+discounted-smooth"),
    ),
    Case(
        "sweep-learner-wrong-shape",
        SWEEP_S,
        "a user's learner that breaks the protocol (checked before any worker starts)",
        _both(
            _write_bytes("mine.py", LEARNER_FILE.replace(b"PLAYED", b"x[..., 0]")),
            _sweep('algorithms = ["smooth_ce"]', 'algorithms = ["mine.py:LEARNER+smooth"]'),
        ),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "algorithms[0]", "learner 'mine': play returned as its strategy a float64 array of shape [2, 2]"),
    ),
    Case(
        "sweep-checkpoints-beyond-T",
        SWEEP_S,
        "a checkpoint beyond T",
        _sweep("[10, 50]", "[10, 500]"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "checkpoints", "500 is beyond T = 50"),
    ),
    Case(
        "sweep-invalid-toml",
        SWEEP_S,
        "not TOML",
        _toml("T = \n"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "invalid TOML", "line 1"),
    ),
    Case(
        "sweep-not-utf8",
        SWEEP_S,
        "a configuration that is not UTF-8",
        _write_bytes("sweep.toml", b'name = "caf\xe9"\n'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "not UTF-8"),
    ),
    Case(
        "sweep-no-such-config",
        SWEEP_S,
        "a configuration file that does not exist",
        None,
        ("sweep", "nope.toml", "--out", "sw"),
        ("nope.toml", "no such configuration file"),
    ),
    Case(
        "sweep-bad-override",
        SWEEP_S,
        "--set with an impossible value",
        _toml(SWEEP_BASE),
        ("sweep", "sweep.toml", "--set", "T=0", "--out", "sw"),
        ("sweep.toml", "T:", "got 0"),
    ),
    Case(
        "sweep-override-out-of-range",
        SWEEP_S,
        "--set of a list entry that does not exist",
        _toml(SWEEP_BASE),
        ("sweep", "sweep.toml", "--set", "games[5].label=x", "--out", "sw"),
        ("--set games[5].label", "out of range"),
    ),
    Case(
        "sweep-bad-game-file",
        SWEEP_S,
        "a game file of the grid is invalid",
        _both(
            _toml(SWEEP_BASE.replace('"paper"', '"game.json"')), _write_game("game.json", _set(("rewards", 1, 0, 1, 0, 1), 1.5))
        ),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("games[0]", "game.json", "rewards[1][0][1][0][1] = 1.5"),
    ),
    Case(
        "sweep-workers-zero",
        SWEEP_S,
        "--workers < 1",
        _toml(SWEEP_BASE),
        ("sweep", "sweep.toml", "--workers", "0", "--out", "sw"),
        ("--workers", "got 0"),
    ),
    Case(
        "sweep-out-unwritable",
        SWEEP_S,
        "an output directory that cannot be created (its parent is a file)",
        _both(_toml(SWEEP_BASE), _a_file),
        ("sweep", "sweep.toml", "--out", "afile/sw"),
        ("--out afile/sw", "afile is not a directory"),
    ),
    Case(
        "sweep-out-holds-a-run",
        SWEEP_S,
        "an output directory that already holds a run, not a sweep",
        _both(_toml(SWEEP_BASE), _another_run("sw")),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("--out sw", "not a sweep directory"),
    ),
    Case(
        "sweep-out-has-runs-folder",
        SWEEP_S,
        "an output folder with a runs/ subfolder that no sweep made (recognised by the sweep's marker only)",
        _both(_toml(SWEEP_BASE), _folder_with_runs),
        ("sweep", "sweep.toml", "--out", "proj"),
        ("--out proj", "not a sweep directory"),
    ),
    Case(
        "sweep-order-unknown",
        SWEEP_S,
        "an update order that does not exist",
        _toml(SWEEP_BASE + 'orders = ["simultaneous", "sideways"]\n'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "orders[1]", "unknown order 'sideways'", "alternating"),
    ),
    Case(
        "sweep-eta-schedule-unknown",
        SWEEP_S,
        "a step-size schedule that does not exist",
        _toml(SWEEP_BASE + 'eta_schedules = ["constant", "fast"]\n'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "eta_schedules[1]", "unknown step-size schedule 'fast'", "power:P"),
    ),
    Case(
        "sweep-eta-schedule-not-finite",
        SWEEP_S,
        "a user's step-size schedule whose factor is NaN (checked when the sweep is planned, not in every batch)",
        _both(
            _toml(SWEEP_BASE + 'eta_schedules = ["rates.py:f"]\n'),
            _write_bytes("rates.py", b"import numpy as np\n\n\ndef f(t):\n    return np.where(t > 7, np.nan, 1.0)\n"),
        ),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "eta_schedules[0]", "step-size schedule 'rates.py:f'", "factor(t) at t = 8 is nan"),
        subprocess=True,
    ),
    Case(
        "sweep-eta-schedule-above-rate-limit",
        SWEEP_S,
        "a user's step-size schedule whose rate eta f(t) leaves the limits of a rate",
        _both(
            _toml(SWEEP_BASE + 'eta_schedules = ["sqrt", "rates.py:f"]\n'),
            _write_bytes("rates.py", b"import numpy as np\n\n\ndef f(t):\n    return np.full_like(t, 1e16)\n"),
        ),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "eta_schedules[1]", "eta f(t) at t = 1 is 0.2 x 1e+16 = 2e+15, above 6.93e+14"),
    ),
    Case(
        "sweep-game-units-integer-beyond-float",
        SWEEP_S,
        "a game file of the sweep whose units scale is an integer of 401 digits",
        _both(
            _toml(SWEEP_BASE.replace('games = ["paper"]', 'games = ["game.json"]')),
            _write_game("game.json", _set(("units",), {"scale": 10**400, "offset": 0})),
        ),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "games[0]", "units.scale: an integer of 401 digits"),
    ),
    Case(
        "sweep-integer-too-many-digits",
        SWEEP_S,
        "an integer of more than 4,300 digits in the configuration (Python converts none)",
        _toml(SWEEP_BASE.replace("T = 50", "T = " + "7" * 4400)),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "line 1, column 5: T: an integer of 4400 digits, more than the 4300 a number may have"),
        subprocess=True,
    ),
    Case(
        "sweep-set-integer-too-many-digits",
        SWEEP_S,
        "an integer of more than 4,300 digits in --set",
        _toml(SWEEP_BASE),
        ("sweep", "sweep.toml", "--out", "sw", "--set", "base_seed=" + "7" * 4400),
        ("--set base_seed", "an integer of 4400 digits, more than the 4300 a number may have"),
    ),
    Case(
        "sweep-eta-schedule-exits",
        SWEEP_S,
        "a user's step-size schedule that calls sys.exit()",
        _both(
            _toml(SWEEP_BASE + 'eta_schedules = ["rates.py:f"]\n'),
            _write_bytes("rates.py", b"import sys\n\n\ndef f(t):\n    sys.exit(5)\n"),
        ),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "eta_schedules[0]", "factor(t) raised SystemExit: 5 (rates.py, line 5)"),
    ),
    Case(
        "sweep-feedback-unknown",
        SWEEP_S,
        "a sampled feedback model without its number of samples",
        _toml(SWEEP_BASE + 'feedbacks = ["full", "sampled"]\n'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "feedbacks[1]", "'sampled'", "sampled:8"),
    ),
    Case(
        "sweep-zero-sum-players",
        SWEEP_S,
        "a zero-sum random game with more than two players",
        _sweep('games = ["paper"]', "games = [{random = {players = 3, horizon = 2, states = 2, actions = 2, zero_sum = true}}]"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "games[0].random", "zero_sum = true needs players = 2"),
    ),
    Case(
        "sweep-bandit-without-rounds",
        SWEEP_S,
        "bandit feedback without its episodes per round",
        _toml(SWEEP_BASE + 'feedbacks = ["bandit"]\n'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "feedbacks[0]", "'bandit'", "bandit:1"),
    ),
    Case(
        "sweep-vlearning-etas",
        SWEEP_S,
        "learning rates for V-learning, which runs with its papers' rates",
        _sweep('algorithms = ["smooth_ce"]', 'algorithms = [{name = "cce-v", etas = [0.1]}]'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "algorithms[0].etas", "'cce-v'", "papers' rates", "remove the key"),
    ),
    Case(
        "sweep-eta-theory-unknown",
        SWEEP_S,
        "a theorem's rate of a paper the catalogue does not know",
        _sweep("etas = [0.2]", 'etas = ["theory:nobody"]'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "etas", "'theory:nobody'", "unknown paper 'nobody'", "theory:mao2024"),
    ),
    Case(
        "sweep-weighted-average-bandit",
        SWEEP_S,
        "the weighted average of the iterates for V-learning, which has no iterates of that kind",
        _sweep('algorithms = ["smooth_ce"]', 'algorithms = ["cce-v"]\nweighted_average = true'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "weighted_average", "'cce-v' under bandit:1", "records no weighted average"),
    ),
    Case(
        "sweep-bandit-theory-rate",
        SWEEP_S,
        "the paper's theory rate for a composition under bandit feedback",
        _sweep("etas = [0.2]", 'etas = ["theory"]\nfeedbacks = ["bandit:2"]'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "etas", "algorithms[0]", "'theory'", "bandit:2", "give it its own etas"),
    ),
    Case(
        "sweep-bandit-alternating",
        SWEEP_S,
        "alternating updates of a bandit run (its players update once per round, together)",
        _sweep('algorithms = ["smooth_ce"]', 'algorithms = ["cce-v"]\norders = ["simultaneous", "alternating"]'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "orders", "algorithms[0]", "'cce-v' under bandit:1", "'alternating'", 'orders = ["simultaneous"]'),
    ),
    Case(
        "sweep-bonus-without-bandit",
        SWEEP_S,
        "a bonus for an algorithm that runs on no bandit feedback",
        _sweep('algorithms = ["smooth_ce"]', 'algorithms = [{name = "smooth_ce", bonus = 0.5}]'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "algorithms[0].bonus", "bandit feedback only", "full"),
    ),
    Case(
        "sweep-bandit-rate-unknown",
        SWEEP_S,
        "a composition's learning-rate schedule over a state's visits that does not exist",
        _sweep(
            'algorithms = ["smooth_ce"]', 'algorithms = [{name = "smooth_ce", feedbacks = ["bandit:2"], bandit_rate = "sqrt"}]'
        ),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "algorithms[0].bandit_rate", "expected one of 'decaying', 'constant'", "got 'sqrt'"),
    ),
    Case(
        "sweep-bandit-two-query-learner",
        SWEEP_S,
        "bandit feedback for a learner that makes two utility queries per iteration",
        _sweep('algorithms = ["smooth_ce"]', 'algorithms = ["extragradient+smooth-uniform"]\nfeedbacks = ["bandit:2"]'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "feedbacks", "algorithms[0]", "'extragradient'", "two utility queries", "bandit:2"),
    ),
    Case(
        "sweep-two-bad-entries",
        SWEEP_S,
        "a configuration with two bad entries: both reported, one line each naming its key",
        _sweep('algorithms = ["smooth_ce"]\netas = [0.2]', 'algorithms = ["smooth_ce", "smooth_ec"]\netas = [0.2, -1]'),
        ("sweep", "sweep.toml", "--out", "sw"),
        (
            "sweep.toml: algorithms[1]: unknown algorithm 'smooth_ec' (did you mean 'smooth_ce'?)",
            "sweep.toml: etas[1]: ",
            "got -1",
        ),
        lines=2,
    ),
    Case(
        "sweep-bandit-T-too-large",
        SWEEP_S,
        "a T whose bandit runs' records would be beyond the library's limit (checked before any batch)",
        _toml('T = 100_000_000\ngames = ["paper"]\nalgorithms = ["cce-v"]\ncheckpoints = [10]\n'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "T", "algorithms[0] under bandit:1 on games[0]", "100,000,000 episodes", "choose a smaller T"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, tmp_path, monkeypatch, capsys, request):
    check_case(case, tmp_path, monkeypatch, capsys, request)
