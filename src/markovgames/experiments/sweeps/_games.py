"""The games of a sweep's grid: built from the configuration's entries (built-in, file, random;
of one kind, finite-horizon or discounted: `check_one_kind`), and labelled."""

from __future__ import annotations

from pathlib import Path

from ..._suggest import did_you_mean, nearest_path
from ...games import (
    BUILTIN_GAMES,
    DISCOUNTED_GAMES,
    DiscountedMarkovGame,
    MarkovGame,
    get_builtin,
    get_discounted_builtin,
    load_any_game,
    random_discounted_game,
    random_game,
)
from ...games._resolve import is_game_file
from ._config import SweepConfig, SweepConfigError
from ._discounted import check_one_kind

__all__ = ["build_games"]


def _random_label(spec, seed: int | None) -> str:
    acts = "x".join(map(str, spec.action_tuple))
    length = f"gamma={spec.discount:g}" if spec.discounted else f"H={spec.horizon}"
    text = f"random(N={spec.players},{length},S={spec.states},A={acts}"
    if spec.reward_distribution != "uniform":
        text += f",{spec.reward_distribution}"
    if spec.transition_concentration != 1.0:
        text += f",c={spec.transition_concentration:g}"
    if spec.initial_state != 0:
        text += f",s1={spec.initial_state}"
    if spec.successors is not None:
        text += f",K={spec.successors}"
    if spec.zero_sum:
        text += ",zero-sum"
    if seed is not None:
        text += f",seed={seed}"
    return text + ")"


def _nearest_game_file(file: str, base_dir: Path) -> str:
    """`` (did you mean 'x'?)`` for the existing game file nearest ``file`` (relative to the
    configuration's directory ``base_dir``, and so written), or ``""``."""
    path = Path(file)
    found = nearest_path(path if path.is_absolute() else base_dir / path, is_game_file)
    if found is None:
        return ""
    shown = Path(found) if path.is_absolute() else Path(found).relative_to(base_dir)
    return f" (did you mean {str(shown)!r}?)"


def build_games(config: SweepConfig, base_dir: Path, game_seeds: list[int], max_bytes: int | None, max_entries: int):
    """``[(entry index, label, kind, seed, seed index, game)]`` for every game of the grid (all of
    one kind, finite-horizon or discounted: `check_one_kind`)."""
    built: list[tuple[int, str, str, int | None, int | None, MarkovGame | DiscountedMarkovGame]] = []
    for index, entry in enumerate(config.games):
        where = f"games[{index}]"
        game: MarkovGame | DiscountedMarkovGame
        if entry.builtin is not None:
            game = get_discounted_builtin(entry.builtin) if entry.builtin in DISCOUNTED_GAMES else get_builtin(entry.builtin)
            built.append((index, entry.label or entry.builtin, "builtin", None, None, game))
        elif entry.file is not None:
            path = Path(entry.file)
            if not path.is_absolute():
                path = base_dir / path
            if not path.exists():
                raise SweepConfigError(
                    f"{where}: {entry.file!r} is neither a built-in game nor an existing game file"
                    f"{did_you_mean(entry.file, [*BUILTIN_GAMES, *DISCOUNTED_GAMES]) or _nearest_game_file(entry.file, base_dir)}"
                )
            try:  # a game file of either kind (a discounted one has 'discount')
                game = load_any_game(path, max_bytes=max_bytes, max_entries=max_entries)
            except Exception as err:  # GameFileError and friends: name the entry
                raise SweepConfigError(f"{where}: {err}") from None
            built.append((index, entry.label or entry.file, "file", None, None, game))
        else:
            spec = entry.random
            if spec is None:  # unreachable: GameSpec is validated to give exactly one of the three
                raise SweepConfigError(f"{where}: give exactly one of builtin, file, random")
            seeds = [(spec.seed, None)] if spec.seed is not None else [(s, k) for k, s in enumerate(game_seeds)]
            for seed, k in seeds:
                options = dict(
                    seed_or_rng=seed,
                    reward_distribution=spec.reward_distribution,
                    transition_concentration=spec.transition_concentration,
                    initial_state=spec.initial_state,
                    num_successors=spec.successors,
                    max_entries=max_entries,
                    zero_sum=spec.zero_sum,
                )
                try:
                    if spec.discount is not None:  # as 'markovgames games random --discount G' draws it
                        game = random_discounted_game(spec.players, spec.states, spec.action_tuple, spec.discount, **options)  # type: ignore[arg-type]
                    else:
                        game = random_game(spec.players, spec.horizon, spec.states, spec.action_tuple, **options)  # type: ignore[arg-type]
                except Exception as err:
                    raise SweepConfigError(f"{where}.random: {err}") from None
                label = entry.label or _random_label(spec, spec.seed)
                built.append((index, label, "random", seed, k, game))
    check_one_kind([(index, game) for index, _, _, _, _, game in built])
    # Different entries must not share a label (results are grouped by it).
    owner: dict[str, int] = {}
    out = []
    for index, label, kind, game_seed, k, game in built:
        if owner.setdefault(label, index) != index:
            label = f"{label}#{index}"
        out.append((index, label, kind, game_seed, k, game))
    return out
