"""Bandit feedback (``feedback="bandit:M"``): the IX utility estimator, rounds of M episodes, refusals.

The estimator is checked statistically through a run on a one-step, one-state game: after one
round of ``M`` episodes with uniform play, a non-optimistic ``hedge`` plays
``softmax(eta rho_2 u_hat)``, so ``2 (log theta(b) - log theta(0)) / eta`` is the round's estimate of
``u(b) - u(0)`` (``rho_2 = 1/2`` for ``H = 1``). Its mean and variance are known exactly
(`bandit_estimate_moments`); each z-test has a false-alarm rate of at most 1e-7 (Bonferroni over
the seeds and actions), the variance test 1e-6. Later rounds' estimates follow from consecutive
strategies the same way (``G_c = rho_c G_{c-1} + u_hat_c``, ``theta_{c+1} = softmax(eta rho_{c+1}
G_c)``): the third round's checks the default implicit exploration, which decays as
``(eta H / 2) / sqrt(c)``, at ``c = 3``. The three runs play ``4 M`` episodes each: one compiled
program for all.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from conftest import beyond_default_in_full, make_paper_game, make_random_game
from markovgames.dynamics import _vlearning, bandit_estimate_moments, run, run_vlearning, run_vlearning_batch
from markovgames.evaluation import exact_cce_gap, exact_ce_gap, policy_value, prefix_curves

ETA = 0.2
M = 2048
SEEDS = 64


def _runs(game, ix):
    return run_vlearning_batch(
        game, "hedge+smooth", 4 * M, list(range(SEEDS)), feedback=f"bandit:{M}", eta=ETA, ix=ix, optimistic=False
    )


def _estimates(game, ix: float):
    """Per seed and player, the recovered ``u_hat(b) - u_hat(0)`` for ``b >= 1``."""
    results = _runs(game, ix)
    out = []
    for i in range(game.num_players):
        theta = np.stack([r.played[i][M, 0] for r in results])  # round 2's strategy, (SEEDS, A_i)
        out.append(2.0 * (np.log(theta[:, 1:]) - np.log(theta[:, :1])) / ETA)
    return out


def _exact(game, player: int, gamma: float = 0.0):
    """Mean and variance of one round's ``u_hat(b) - u_hat(0)`` under uniform play, ``M`` visits."""
    a_i = game.num_actions[player]
    targets = np.moveaxis(game.rewards[0, player, 0], player, 0).reshape(a_i, -1)  # y = r (H = 1)
    others = np.full(targets.shape[1], 1.0 / targets.shape[1])
    theta = np.full(a_i, 1.0 / a_i)
    mean, var = bandit_estimate_moments(targets, others, theta, 1, gamma=gamma, visits=M)
    # The indicators of different actions never hold together: Cov(u_hat(b), u_hat(0)) per visit
    # is -E[1{a=b} l / (theta_b + g)] E[1{a=0} l / (theta_0 + g)] (H = 1).
    m = theta * ((1.0 - targets) @ others) / (theta + gamma)
    diff_var = var[1:] + var[0] + 2.0 * m[1:] * m[0] / M
    return mean[1:] - mean[0], diff_var


@pytest.fixture(scope="module")
def one_step_game():
    return make_random_game(21, 2, 1, 1, (2, 3))


def test_the_ix_estimate_is_unbiased_with_the_stated_variance(one_step_game):
    game = one_step_game
    estimates = _estimates(game, ix=0.0)
    for i, d in enumerate(estimates):
        mean, var = _exact(game, i)
        # The unbiased mean is the true utility difference [r_i pi_-i](b) - [r_i pi_-i](0).
        u = np.moveaxis(game.rewards[0, i, 0], i, 0).reshape(game.num_actions[i], -1).mean(axis=1)
        np.testing.assert_allclose(mean, u[1:] - u[0], rtol=0, atol=1e-12)
        z = (d - mean) / np.sqrt(var)
        limit = stats.norm.isf(1e-7 / (2 * d.size))
        assert np.all(np.abs(z) < limit), (i, z.max(), z.min(), limit)
        # Variance: (SEEDS - 1) s^2 / var ~ chi2(SEEDS - 1), two-sided at 1e-6 per column.
        ratio = (SEEDS - 1) * d.var(axis=0, ddof=1) / var
        lo, hi = stats.chi2.ppf(0.5e-6 / d.shape[1], SEEDS - 1), stats.chi2.isf(0.5e-6 / d.shape[1], SEEDS - 1)
        assert np.all((ratio > lo) & (ratio < hi)), (i, ratio, lo, hi)


def test_implicit_exploration_biases_the_estimate_as_stated(one_step_game):
    """With gamma > 0 the mean moves by the stated bias: the unbiased mean is rejected (the test can fail)."""
    game = one_step_game
    estimates = _estimates(game, ix=0.5)
    for i, d in enumerate(estimates):
        biased_mean, var = _exact(game, i, gamma=0.5)
        unbiased_mean, _ = _exact(game, i)
        z_biased = (d.mean(axis=0) - biased_mean) / np.sqrt(var / SEEDS)
        z_unbiased = (d.mean(axis=0) - unbiased_mean) / np.sqrt(var / SEEDS)
        assert np.all(np.abs(z_biased) < 5.5)
        assert np.any(np.abs(z_unbiased) > 8.0)


def _moments_at(game, player: int, theta, other, gamma: float):
    """Mean and variance of one round's ``u_hat(b) - u_hat(0)`` (``b >= 1``) at the strategies
    ``theta`` (the player's) and ``other`` (the other player's), ``M`` visits, IX ``gamma``."""
    targets = np.moveaxis(game.rewards[0, player, 0], player, 0).reshape(game.num_actions[player], -1)
    mean, var = bandit_estimate_moments(targets, other, theta, 1, gamma=gamma, visits=M)
    m = theta * ((1.0 - targets) @ other) / (theta + gamma)  # as in `_exact`: the covariance term
    return mean[1:] - mean[0], var[1:] + var[0] + 2.0 * m[1:] * m[0] / M


def test_the_default_implicit_exploration_decays_as_stated(one_step_game):
    """Round 3's estimates under the default ``ix``: the mean and variance of IX with
    ``gamma_3 = (eta H / 2) / sqrt(3)``, and not those of the constant ``eta H / 2`` (the test can fail)."""
    game = one_step_game
    results = _runs(game, None)
    assert {(r.ix, r.ix_schedule) for r in results} == {(ETA / 2, "decaying")}
    c, gamma_1 = 3, ETA * game.horizon / 2
    rho = {r: (r - 1) / r for r in (2, 3, 4)}  # (c - 1) / (k + c - 1) at c = r, k = H = 1
    constant: list[float] = []
    for i in range(game.num_players):
        theta = {r: np.stack([res.played[i][(r - 1) * M, 0] for res in results]) for r in (3, 4)}
        other = np.stack([res.played[1 - i][(c - 1) * M, 0] for res in results])  # the others' play in round 3
        # G_c(b) - G_c(0) from round c + 1's strategy, then u_hat_3 = G_3 - rho_3 G_2 (differences).
        g3 = (np.log(theta[4][:, 1:]) - np.log(theta[4][:, :1])) / (ETA * rho[4])
        g2 = (np.log(theta[3][:, 1:]) - np.log(theta[3][:, :1])) / (ETA * rho[3])
        d = g3 - rho[3] * g2
        z = {}
        for rule, gamma in (("decaying", gamma_1 / np.sqrt(c)), ("constant", gamma_1)):
            moments = [_moments_at(game, i, theta[3][s], other[s], gamma) for s in range(SEEDS)]
            mean, var = np.stack([m for m, _ in moments]), np.stack([v for _, v in moments])
            z[rule] = (d - mean) / np.sqrt(var)
        limit = stats.norm.isf(1e-7 / (2 * d.size))
        assert np.all(np.abs(z["decaying"]) < limit), (i, z["decaying"].max(), z["decaying"].min())
        # Each seed's z is N(0, 1): their mean over the seeds has standard deviation 1/sqrt(SEEDS),
        # and their sum of squares is chi2(SEEDS) per action (two-sided at 1e-6).
        assert np.all(np.abs(z["decaying"].mean(axis=0)) * np.sqrt(SEEDS) < 5.5)
        squares = (z["decaying"] ** 2).sum(axis=0)
        lo, hi = stats.chi2.ppf(0.5e-6 / d.shape[1], SEEDS), stats.chi2.isf(0.5e-6 / d.shape[1], SEEDS)
        assert np.all((squares > lo) & (squares < hi)), (i, squares, lo, hi)
        # Under a constant gamma the same numbers are off (its bias is another): below, over the players.
        constant.extend(np.abs(z["constant"].mean(axis=0)) * np.sqrt(SEEDS))
    assert max(constant) > 8.0, constant


#: bm-logbarrier+smooth-linear in the full mode (a compiled round of its own, 3 s): the round calls
#: every learner through the learner protocol; hedge and rm-plus here, and bm-hedge with
#: smooth-linear in test_bandit_reference.py, run by default.
@pytest.mark.parametrize(
    "algorithm",
    beyond_default_in_full(["hedge+smooth", "bm-logbarrier+smooth-linear", "rm-plus+stage"], {"hedge+smooth", "rm-plus+stage"}),
)
def test_rounds_of_m_episodes(algorithm):
    game = make_paper_game()
    result = run_vlearning(game, algorithm, 48, feedback="bandit:4", seed=1)
    assert (result.rounds, result.episodes_per_round, result.samples_used) == (12, 4, 96)
    policy = result.policy
    assert (
        policy.T == 12
        and policy.kind == {"hedge": "smooth", "bm-logbarrier": "smooth-linear", "rm-plus": "stage"}[algorithm.split("+")[0]]
    )
    # A round's episodes play the same strategies at the same (h, s); a round visits state 0 at step 0.
    for p in result.played:
        rounds = p.reshape(12, 4, 2, -1)
        same = result.states.reshape(12, 4, 2)[:, :, None, :] == result.states.reshape(12, 4, 2)[:, None, :, :]
        diff = np.abs(rounds[:, :, None] - rounds[:, None, :]).max(axis=-1).transpose(0, 1, 2, 3)
        assert np.all(diff[same] == 0)
    assert np.all(result.counts[0] == [12, 0])
    assert np.all(result.counts.sum(axis=1) >= 12) and np.all(result.counts <= 12)
    curves = prefix_curves(game, policy, [1, 5, 12])
    np.testing.assert_allclose(curves.value[-1], policy_value(game, policy), rtol=0, atol=1e-12)
    ce, cce = exact_ce_gap(game, policy.prefix(5)), exact_cce_gap(game, policy.prefix(5))
    assert -1e-12 <= ce.gap <= curves.certified_ce_gap[1] + 1e-12
    assert cce.gap <= curves.certified_cce_gap[1] + 1e-12


def test_run_refuses_bandit_feedback_with_a_pointer():
    with pytest.raises(ValueError, match=r"online play.*run_vlearning\(game, ALGORITHM, episodes, feedback='bandit:4'\)"):
        run(make_paper_game(), "smooth_cce", T=5, feedback="bandit:4")


@pytest.mark.parametrize(
    ("algorithm", "kwargs", "message"),
    [
        ("hedge+smooth", {"feedback": "bandit:0"}, "feedback must be 'bandit:M'"),
        ("hedge+smooth", {"feedback": "sampled:2"}, "feedback must be 'bandit:M'"),
        ("hedge+smooth", {"feedback": "bandit:3"}, "episodes = 8 is not a multiple of the 3 episodes per round"),
        ("cce-v", {"eta": 0.1}, "cce-v uses its paper's rates"),
        ("hedge+smooth", {"eta": 0.0}, "eta must be a finite number > 0"),
        ("hedge+smooth", {"ix": -1.0}, "ix must be 'decaying' or a finite number >= 0, got -1.0"),
        ("hedge+smooth", {"ix": "constant"}, "ix must be 'decaying' or a finite number >= 0, got 'constant'"),
        ("hedge+smooth", {"optimistic": 1}, "optimistic must be True or False"),
        ("extragradient+smooth-uniform", {}, "two utility queries"),
        ("hedge+cubic", {}, "unknown value update"),
    ],
)
def test_bad_bandit_arguments_are_refused(algorithm, kwargs, message):
    with pytest.raises(ValueError, match=message):
        run_vlearning(make_paper_game(), algorithm, 8, **kwargs)


def test_a_users_learner_that_plays_garbage_is_stopped(tmp_path, monkeypatch):
    source = tmp_path / "bad_learner.py"
    source.write_text(
        "import jax.numpy as jnp\n"
        "from typing import NamedTuple\n"
        "from markovgames.learners import Learner, LearnerSpec\n"
        "class S(NamedTuple):\n"
        "    count: object\n"
        "def build(axis):\n"
        "    def init(shape, dtype):\n"
        "        return S(jnp.zeros(shape, dtype))\n"
        "    def play(state, prediction, eta, decay):\n"
        "        n = state.count.shape[axis]\n"
        "        # Uniform at first; once a state has been observed, a vector summing to 2.\n"
        "        return jnp.where(jnp.any(state.count > 0), 2.0, 1.0) / n * jnp.ones_like(state.count), state\n"
        "    def observe(state, utility, decay):\n"
        "        return S(state.count + 1.0)\n"
        "    return Learner(init, play, observe)\n"
        "LEARNER = LearnerSpec('doubler', build)\n"
    )
    from markovgames.dynamics import LearnerOutputError

    # Named where it happened: episode 2 (the first after a visit), in the second compiled call
    # (a chunk of one episode: the check runs after every compiled call, with its first episode).
    monkeypatch.setattr(_vlearning, "_CHUNK", 1)
    message = r"learner 'doubler' played a strategy that is not a probability vector at episode 2, step 0, state 0 \(player 0\): \[1. 1.\]"
    with pytest.raises(LearnerOutputError, match=message):
        run_vlearning(make_paper_game(), f"{source}:LEARNER+smooth", 6, seed=0)


def test_pooling_pairwise_and_by_tables_agree(monkeypatch):
    # The paper's game, hedge+smooth on bandit:4 (M^2 > S: pooled through tables by default, the
    # program test_rounds_of_m_episodes and the command line's tests compile, reused here), then
    # pairwise. (Last in this file: the tests above use the default program before it is dropped.)
    game = make_paper_game()
    assert 4 * 4 > game.num_states * _vlearning._PAIRS_FACTOR  # the default: every round through tables
    runs = [run_vlearning(game, "hedge+smooth", 60, feedback="bandit:4", seed=3)]
    # The factor is read when the round is traced: the round's compiled programs are dropped
    # around the pairwise run (only the round's: every other compiled function stays).
    monkeypatch.setattr(_vlearning, "_PAIRS_FACTOR", 1e9)  # every round pooled pairwise
    _vlearning._chunk_batch.clear_cache()
    runs.append(run_vlearning(game, "hedge+smooth", 60, feedback="bandit:4", seed=3))
    _vlearning._chunk_batch.clear_cache()
    a, b = runs
    np.testing.assert_array_equal(a.actions, b.actions)
    for x, y in zip(a.played, b.played, strict=True):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-13)
    for x, y in zip(a.value_estimates, b.value_estimates, strict=True):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-13)
