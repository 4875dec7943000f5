"""Bandit feedback in a sweep: V-learning (``cce-v``, ``ce-v``, ``stage-v``) and compositions
``LEARNER+UPDATE`` under ``bandit:M``, run through ``run_vlearning_batch`` (docs/vlearning.md).

Here: the axes such an algorithm runs with (`algorithm_axes`: V-learning's are its papers', whatever
the sweep-wide ``feedbacks``, ``etas`` and ``optimistic`` say), the keys that do not apply to bandit
runs, refused naming the key (`check_bandit_settings`, a validator of the configuration), the
settings a run used (`bandit_parameters`), and its size (`bandit_run_bytes`, `check_bandit_size`).
``T`` counts rounds under bandit feedback: a run plays ``T M`` episodes, its learners update ``T``
times, and its checkpoints ``T'`` are rounds (the output policy's prefixes).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ...dynamics import VLEARNING_ALGORITHMS
from ...dynamics._ix import parse_ix
from ...dynamics._vlearning import MAX_RECORD_BYTES
from ...policies._visit_chain import MAX_DENSE_ENTRIES
from ._values import is_bandit

if TYPE_CHECKING:
    from ...games import MarkovGame

__all__ = [
    "PAPER_RATE",
    "VLEARNING_FEEDBACK",
    "is_vlearning",
    "bandit_parameters",
    "bandit_run_bytes",
    "check_bandit_size",
    "check_bandit_settings",
]

#: The ``eta`` of a V-learning run: its papers' rate schedules (no single learning rate).
PAPER_RATE = "paper"
#: V-learning's feedback: one episode per round, as in its papers.
VLEARNING_FEEDBACK = "bandit:1"


def is_vlearning(name: str) -> bool:
    """Whether ``name`` is a V-learning algorithm (`VLEARNING_ALGORITHMS`), not a composition."""
    return name in VLEARNING_ALGORITHMS


def bandit_parameters(
    algorithm: str, eta: Any, bonus: float | None, ix: float | None, horizon: int
) -> tuple[float, float | None, str | None]:
    """The bonus constant and the implicit exploration a bandit run used, its scale and schedule:
    those given, else the library's defaults (bonus 1 for V-learning, 0 for a composition; for a
    composition the decaying ``ix = eta H / 2`` over the square root of the visits, a number given
    being a constant; ``None, None`` for V-learning, whose papers' schedules set it)."""
    if is_vlearning(algorithm):
        return (1.0 if bonus is None else float(bonus)), None, None
    used_ix, schedule = parse_ix(ix, float(eta), horizon)
    return (0.0 if bonus is None else float(bonus)), used_ix, schedule


def bandit_run_bytes(game: MarkovGame, rounds: int, per_round: int) -> tuple[int, int, int]:
    """About how many bytes a bandit run of ``rounds`` rounds of ``per_round`` episodes holds: its
    record (states, actions, rewards and the strategies played, ``E H (2 N 8 + 16 + 8 sum A_i)`` for
    ``E`` episodes), its output policy (``K H S (1 + 8 sum A_i)`` for ``K`` rounds) and the largest
    arrays of its evaluation at the checkpoints (``prefix_curves``: ``K S |A| S`` numbers)."""
    H, S, N = game.horizon, game.num_states, game.num_players
    actions = sum(game.num_actions)
    record = rounds * per_round * H * (2 * N * 8 + 16 + 8 * actions)
    policy = rounds * H * S * (1 + 8 * actions)
    evaluation = rounds * S * math.prod(game.num_actions) * S * 8
    return record, policy, evaluation


def check_bandit_size(game: MarkovGame, rounds: int, per_round: int) -> None:
    """Refuse (``ValueError``, to be prefixed with the run's key) a bandit run whose record, output
    policy or evaluation is beyond the library's limits, before any batch starts."""
    record, _, _ = bandit_run_bytes(game, rounds, per_round)
    if record > MAX_RECORD_BYTES:
        raise ValueError(
            f"{rounds * per_round:,} episodes: the run's record would take {record / 2**30:.1f} GiB, above "
            f"{MAX_RECORD_BYTES / 2**30:.0f} GiB; choose a smaller T"
        )
    entries = rounds * game.horizon * game.num_states * (1 + sum(game.num_actions))
    evaluation = rounds * game.num_states * math.prod(game.num_actions) * game.num_states
    if max(entries, evaluation) > MAX_DENSE_ENTRIES:
        what = "its output policy" if entries >= evaluation else "the evaluation of its output policy"
        raise ValueError(
            f"{rounds:,} rounds: {what} needs {max(entries, evaluation):,} entries, above the limit "
            f"{MAX_DENSE_ENTRIES:,}; choose a smaller T, or a smaller game"
        )


def _apart(feedbacks: list[str]) -> str:
    """Advice for an algorithm listed under bandit and other feedback models at once."""
    others = [f for f in feedbacks if not is_bandit(f)]
    if not others:
        return ""
    shown = ", ".join(f'"{f}"' for f in others)
    return f" (list the algorithm twice to run it otherwise under {shown}: once with feedbacks = [{shown}])"


def check_bandit_settings(config) -> None:
    """Refuse, naming the key, what V-learning and bandit runs cannot take: a V-learning table that
    sets feedbacks, optimism, learning rates or ``ix``; ``bonus`` or ``ix`` without bandit feedback;
    ``"theory"`` rates, update orders other than simultaneous, schedules other than constant,
    ``regret``, ``last_iterate``, ``weighted_average`` or ``float32`` for a bandit run (a ``ValueError``);
    ``config``: a `SweepConfig` (a validator of it calls this)."""
    for k, alg in enumerate(config.algorithms):
        where, name = f"algorithms[{k}]", alg.name
        feedbacks = alg.feedbacks or config.feedbacks
        if is_vlearning(name):
            if alg.feedbacks is not None and alg.feedbacks != [VLEARNING_FEEDBACK]:
                raise ValueError(
                    f"{where}.feedbacks: {name!r} is V-learning, which runs on {VLEARNING_FEEDBACK} (one episode per "
                    "round, its papers' feedback); remove the key"
                )
            if alg.optimistic is not None and alg.optimistic != [False]:
                raise ValueError(f"{where}.optimistic: {name!r} has no optimistic form (its papers' bandits); remove the key")
            if alg.etas is not None:
                raise ValueError(
                    f"{where}.etas: {name!r} runs with its papers' rates; a learning rate is for a composition "
                    "LEARNER+UPDATE under bandit:M; remove the key"
                )
            for key, what in (("ix", "implicit exploration"), ("bandit_rate", "rates")):
                if getattr(alg, key) is not None:
                    raise ValueError(
                        f"{where}.{key}: {name!r} runs with its papers' {what}; {key} is for a composition "
                        "LEARNER+UPDATE under bandit:M; remove the key"
                    )
            bandit, feedbacks = [VLEARNING_FEEDBACK], [VLEARNING_FEEDBACK]
        else:
            bandit = [f for f in feedbacks if is_bandit(f)]
            for key in ("bonus", "ix", "bandit_rate"):
                if getattr(alg, key) is not None and not bandit:
                    raise ValueError(
                        f"{where}.{key}: applies to bandit feedback only (V-learning, or a composition under bandit:M); "
                        f"{name!r} runs under {', '.join(feedbacks)}"
                    )
            etas = alg.etas or config.etas
            if bandit and any(isinstance(e, str) for e in etas):
                key = f"{where}.etas" if alg.etas else "etas"
                raise ValueError(
                    f"{key}: {where}: 'theory' is a rate of the paper's full-information theorems; under {bandit[0]} "
                    f"{name!r} needs numbers: give it its own etas{_apart(feedbacks)}"
                )
        if not bandit:
            continue
        runs = f"{where}: {name!r} under {bandit[0]}"
        for key, default, what in (
            ("orders", "simultaneous", "updates simultaneously, once per round"),
            (
                "eta_schedules",
                "constant",
                "has no step-size schedule over iterations (V-learning its papers' rates, a composition its "
                "bandit_rate over a state's visits)",
            ),
        ):
            odd = [v for v in getattr(alg, key) or getattr(config, key) if v != default]
            if odd:
                own = f"{where}.{key}" if getattr(alg, key) else key
                raise ValueError(
                    f'{own}: {runs} {what}: {odd[0]!r} is not available; give it its own {key} = ["{default}"]{_apart(feedbacks)}'
                )
        if config.regret if alg.regret is None else alg.regret:
            key = "regret" if alg.regret is None else f"{where}.regret"
            raise ValueError(f"{key}: {runs} records no regret curves; give it its own regret = false{_apart(feedbacks)}")
        for key, what in (("last_iterate", "last iterate"), ("weighted_average", "weighted average of its iterates")):
            if getattr(config, key):
                raise ValueError(f"{key}: {runs} records no {what}; run it in a sweep without {key}")
        if config.dtype != "float64":
            raise ValueError(f'dtype: {runs} runs in float64 only; run it in a sweep with dtype = "float64"')
