r"""Monte Carlo estimates of values by sampled episodes (docs/gaps.md).

The exact values of [`policy_value`][markovgames.evaluation.policy_value], of the maximising CE
modification (`CEGapResult.deviation_value`) and of the best CCE deviation
(`CCEGapResult.best_response_value`) are expectations of the total reward over episodes;
[`monte_carlo_value`][markovgames.evaluation.monte_carlo_value] estimates them independently by simulation (`._sampling`), which
checks the exact recursions — in particular the hidden-index semantics and the claim that the
deviations returned really achieve the reported values — end to end.

The estimate of :math:`E[\sum_h r_{h,i}]` is the sample mean of the returns; its standard error
is the sample standard deviation over :math:`\sqrt{E}`. Episodes are sampled in batches (same
generator, so the result depends only on the seed and ``num_episodes``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._rng import as_generator
from ..games import MarkovGame
from ._sampling import Episodes, sample_episodes

__all__ = ["MonteCarloEstimate", "monte_carlo_value", "sample_episodes", "Episodes"]

#: Episodes per vectorised batch (bounds the memory, about 100 bytes x H x N per episode).
DEFAULT_BATCH = 2**18


@dataclass(frozen=True, eq=False)
class MonteCarloEstimate:
    """A Monte Carlo estimate of every player's value.

    Attributes
    ----------
    mean : ndarray (N,)
        Sample mean of the total rewards.
    stderr : ndarray (N,)
        Standard error of the mean (sample standard deviation / sqrt(num_episodes)).
    num_episodes : int
    seed : int or None
        The integer seed, when one was given (``None`` for a caller's Generator).
    """

    mean: np.ndarray
    stderr: np.ndarray
    num_episodes: int
    seed: int | None

    def z_scores(self, exact: np.ndarray) -> np.ndarray:
        """``(mean - exact) / stderr`` per player (``0`` where both differences and errors vanish)."""
        diff = self.mean - np.asarray(exact, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(self.stderr > 0, diff / np.where(self.stderr > 0, self.stderr, 1.0), np.where(diff == 0, 0.0, np.inf))
        return z


def monte_carlo_value(
    game: MarkovGame,
    policy,
    num_episodes: int,
    seed,
    deviation=None,
    *,
    batch_size: int = DEFAULT_BATCH,
    progress: Callable[[int], None] | None = None,
) -> MonteCarloEstimate:
    r"""Estimate every player's value of ``policy`` (optionally with one player deviating) by simulation.

    Parameters
    ----------
    game : MarkovGame
    policy : IndexChainPolicy or MarkovCorrelatedPolicy
    num_episodes : int
    seed : int, numpy.random.Generator or None
        Seed or generator of all random draws (``None``: fresh OS entropy, not reproducible).
    deviation : StrategyModification, HistoryDeviation, MarkovDeviation or None
        See [`sample_episodes`][markovgames.evaluation.sample_episodes].
    batch_size : int
        Episodes per vectorised batch.
    progress : callable or None
        ``progress(done)`` after each batch, with the number of episodes done so far.

    Returns
    -------
    MonteCarloEstimate
        ``mean`` estimates :math:`V_{1,i}(s_1)` of the (possibly modified) policy for every player.
    """
    num_episodes = int(num_episodes)
    if num_episodes < 2:
        raise ValueError(f"num_episodes must be >= 2 for a standard error, got {num_episodes}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    gen = as_generator(seed)
    # Chan et al.'s pairwise update of (count, mean, sum of squared deviations) per batch: no
    # cancellation even when the variance is tiny compared with the mean.
    count, mean, m2 = 0, np.zeros(game.num_players), np.zeros(game.num_players)
    while count < num_episodes:
        size = min(batch_size, num_episodes - count)
        returns = sample_episodes(game, policy, size, gen, deviation).returns
        b_mean = returns.mean(axis=0)
        b_m2 = np.square(returns - b_mean).sum(axis=0)
        delta = b_mean - mean
        new_count = count + size
        mean = mean + delta * (size / new_count)
        m2 = m2 + b_m2 + np.square(delta) * (count * size / new_count)
        count = new_count
        if progress is not None:
            progress(count)
    var = m2 / (num_episodes - 1)
    return MonteCarloEstimate(
        mean=mean,
        stderr=np.sqrt(var / num_episodes),
        num_episodes=num_episodes,
        seed=int(seed) if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) else None,
    )
