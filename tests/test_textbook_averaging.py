"""Uniform and linear averaging reduce to the textbook learners on a normal-form game.

On one state with ``H = 1`` the smooth value update's ``Q^t`` is the payoff tensor at every ``t``,
so a learner fed by ``smooth-uniform`` (``alpha_t = 1/t``, weights 1) sees the utilities of
the normal-form game and sums them with equal weights: ``hedge+smooth-uniform`` is optimistic
Hedge (Syrgkanis, Agarwal, Luo and Schapire, NeurIPS 2015: ``x^t ∝ exp(eta (sum_{j<t} u^j +
u^{t-1}))``), plain Hedge without optimism; ``rm-plus+smooth-uniform`` is predictive RM+ (Farina,
Kroer and Sandholm, AAAI 2021) and RM+ (Tammelin 2014) without optimism. ``smooth-linear`` weighs
utility ``j`` by ``j`` (the weights of linear averaging). The output policy (Algorithm 3 with
``alpha_t^j = w_j / sum w``) is then the weighted average of the joint strategies played, and its
certified CCE gap at ``T`` is that average's CCE gap.

The textbook learners here are written from those papers, in NumPy, with raw (unnormalised)
sums; the engine keeps normalised sums. They agree to 1e-12 on random games (continuous payoffs:
no ties, where regret matching is discontinuous).
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import beyond_default_in_full, make_random_game
from markovgames.dynamics import run

TOL = 1e-12


def _utilities(payoff: np.ndarray, strategies: list[np.ndarray], i: int) -> np.ndarray:
    """``u_i(a) = sum_{a_-i} payoff[a] prod_{k != i} x_k(a_k)`` for every action ``a`` of player ``i``."""
    tensor = payoff
    for k in reversed(range(len(strategies))):
        if k != i:
            tensor = np.tensordot(tensor, strategies[k], axes=([k], [0]))
    return tensor


def _hedge(cumulative: np.ndarray, eta: float) -> np.ndarray:
    z = eta * cumulative
    e = np.exp(z - z.max())
    return e / e.sum()


def _regret_matching(theta: np.ndarray) -> np.ndarray:
    total = theta.sum()
    return theta / total if total > 0 else np.full(theta.shape, 1.0 / theta.size)


def textbook_run(payoffs, learner: str, weights: str, optimistic: bool, eta: float, T: int) -> list[np.ndarray]:
    """Per player the strategies ``x^1..x^T`` of the textbook learner (raw weighted sums,
    ``w_t = 1`` or ``t``)."""
    N = len(payoffs)
    A = payoffs[0].shape
    sums = [np.zeros(A[i]) for i in range(N)]  # sum_j w_j u^j (Hedge) or the regrets R (RM+)
    last_u = [np.zeros(A[i]) for i in range(N)]
    last_x = [np.full(A[i], 1.0 / A[i]) for i in range(N)]
    played: list[list[np.ndarray]] = [[] for _ in range(N)]
    for t in range(1, T + 1):
        w = 1.0 if weights == "uniform" else float(t)
        x = []
        for i in range(N):
            m = last_u[i] if optimistic else np.zeros(A[i])
            if learner == "hedge":
                # OFTRL's argmax of eta <x, (sum_{j<t} w_j u^j + w_t m) / w_t> - entropy (the
                # weighted sum normalised by w_t, as Mao et al.'s eq. (3); w_t = 1 is Syrgkanis et al.)
                x.append(_hedge((sums[i] + w * m) / w, eta))
            else:
                x.append(_regret_matching(np.maximum(sums[i] + w * (m - m @ last_x[i]), 0.0)))
        for i in range(N):
            u = _utilities(payoffs[i], x, i)
            if learner == "hedge":
                sums[i] = sums[i] + w * u
            else:
                sums[i] = np.maximum(sums[i] + w * (u - u @ x[i]), 0.0)
            last_u[i], last_x[i] = u, x[i]
            played[i].append(x[i])
    return [np.array(p) for p in played]


def average_cce_gap(payoffs, played, weights: np.ndarray) -> float:
    """The CCE gap of the weighted average of the joint strategies played: max over players and
    deviations of ``sum_t p_t (u_i(a, x^t_-i) - u_i(x^t))``."""
    p = weights / weights.sum()
    gaps = []
    for i in range(len(payoffs)):
        deviation = np.zeros(payoffs[i].shape[i])
        value = 0.0
        for t in range(len(p)):
            x = [pl[t] for pl in played]
            u = _utilities(payoffs[i], x, i)
            deviation += p[t] * u
            value += p[t] * (u @ x[i])
        gaps.append(deviation.max() - value)
    return max(gaps)


@pytest.mark.parametrize("weights", ["uniform", "linear"])
@pytest.mark.parametrize("learner", ["hedge", "rm-plus"])
@pytest.mark.parametrize("optimistic", [True, False], ids=["optimistic", "plain"])
@pytest.mark.parametrize("shape", beyond_default_in_full(["3x3", "2x3x2"], {"3x3"}))  # three players: full mode
def test_smooth_averaging_on_a_normal_form_game_is_the_textbook_learner(weights, learner, optimistic, shape):
    shape = tuple(int(a) for a in shape.split("x"))
    game = make_random_game(31, len(shape), 1, 1, shape)
    payoffs = [game.rewards[0, i, 0] for i in range(len(shape))]
    T, eta = 60, 0.7
    result = run(game, f"{learner}+smooth-{weights}", T=T, eta=eta, optimistic=optimistic)
    expected = textbook_run(payoffs, learner, weights, optimistic, eta, T)
    for i, x in enumerate(expected):
        np.testing.assert_allclose(result.policies[i][:, 0, 0], x, rtol=0, atol=TOL)
    w = np.ones(T) if weights == "uniform" else np.arange(1.0, T + 1)
    for prefix in (1, 7, T):
        gap = average_cce_gap(payoffs, [x[:prefix] for x in expected], w[:prefix])
        certified = np.max(result.certified_cce_bound[prefix - 1] - result.value[prefix - 1])
        assert certified == pytest.approx(gap, abs=TOL)


def test_the_papers_averaging_is_not_the_textbook_one():
    """The guard against the trap the averagings remove: on a normal-form game ``hedge+smooth``
    (weights ``w_j = binom(H+j-1, H)``, linear for ``H = 1``) is the linearly weighted learner,
    not textbook optimistic Hedge."""
    game = make_random_game(32, 2, 1, 1, (3, 3))
    payoffs = [game.rewards[0, i, 0] for i in range(2)]
    paper = run(game, "hedge+smooth", T=40, eta=0.7)
    linear = textbook_run(payoffs, "hedge", "linear", True, 0.7, 40)
    uniform = textbook_run(payoffs, "hedge", "uniform", True, 0.7, 40)
    np.testing.assert_allclose(paper.policies[0][:, 0, 0], linear[0], rtol=0, atol=TOL)
    assert np.max(np.abs(paper.policies[0][:, 0, 0] - uniform[0])) > 1e-3


def test_a_run_with_uniform_averaging_is_stored_evaluated_and_certified(tmp_path, monkeypatch, capsys):
    """The averaging is part of the run's record (its value update's name), and every reader uses
    its kernel: the exact gaps stay within the certified ones, and certifying the stored
    trajectory with ``--value-update smooth-uniform`` gives the run's own curve back."""
    import json

    from markovgames.cli import main

    monkeypatch.chdir(tmp_path)
    argv = ["run", "--game", "paper", "--algorithm", "rm-plus+smooth-uniform", "-T", "200", "--exact", "--quiet"]
    assert main([*argv, "--out", "run"]) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["value_update"] == "smooth-uniform" and metrics["algorithm"] == "rm-plus+smooth-uniform"
    last = metrics["checkpoints"][-1]
    assert 0.0 <= last["exact_cce_gap"] <= last["certified_cce_gap"] + 1e-12
    assert main(["evaluate", "run", "--exact", "--quiet", "--out", "e.json"]) == 0
    report = json.loads((tmp_path / "e.json").read_text())
    assert report["exact_cce_gap"] == pytest.approx(last["exact_cce_gap"], abs=1e-12)
    certify = ["certify", "run/trajectory", "--game", "paper", "--quiet", "--value-update"]
    assert main([*certify, "smooth-uniform", "--out", "cert"]) == 0
    ours, theirs = np.load(tmp_path / "run" / "curve.npz"), np.load(tmp_path / "cert" / "curve.npz")
    for key in ("value", "certified_ce_bound", "certified_cce_bound"):
        np.testing.assert_allclose(theirs[key], ours[key], rtol=0, atol=1e-12)
    # The paper's averaging on the same trajectory is another output policy, with other numbers.
    assert main([*certify, "smooth", "--out", "paper"]) == 0
    assert np.max(np.abs(np.load(tmp_path / "paper" / "curve.npz")["value"] - ours["value"])) > 1e-4
