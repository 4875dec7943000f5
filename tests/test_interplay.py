"""Update order, step-size schedules, rates per player and regret curves, against literal NumPy.

On one state with ``H = 1`` the smooth value update's ``Q^t`` is the payoff tensor, so with uniform
averaging the engine's learners are the textbook ones on a normal-form game (tests/test_textbook_averaging.py):
here each new choice is checked against a literal loop written from its definition (module
docstrings of ``markovgames.dynamics._interplay`` and ``._regret``), to 1e-12, on zero-sum games
(whose equilibria are mixed, so that the orders really differ), and the paper's settings are
checked to be untouched.
"""

from __future__ import annotations

import numpy as np
import pytest

import literal_learners as literal
from conftest import case, make_random_game
from markovgames import MarkovGame
from markovgames.dynamics import get_step_schedule, run, run_batch
from test_textbook_averaging import _hedge, _regret_matching, _utilities

TOL = 1e-12
T = 50


#: Rock-paper-scissors: its only equilibrium is interior, and a small perturbation keeps it so.
RPS = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])


def zero_sum(seed: int) -> MarkovGame:
    """A one-state, one-step constant-sum 3x3 game (``r_1 = 1 - r_0``) near rock-paper-scissors:
    its equilibrium is mixed, so the dynamics keep moving and the orders differ."""
    noise = np.random.default_rng(seed).uniform(-0.05, 0.05, (3, 3))
    row = 0.5 + 0.3 * RPS + noise
    rewards = np.stack([row, 1.0 - row])[None, :, None]  # (H, N, S, A_0, A_1)
    return MarkovGame(rewards, np.ones((1, 1, 3, 3, 1)), 0)


def payoffs_of(game: MarkovGame) -> list[np.ndarray]:
    return [game.rewards[0, i, 0] for i in range(game.num_players)]


def literal_rm(payoffs, T: int, predictive: bool, alternating: bool) -> list[np.ndarray]:
    """RM+ / PRM+ (uniform weights), simultaneous or alternating: player ``i`` observes its utility
    against the players before it at their next strategy (Burch et al. 2019 for two players)."""
    n = [p.shape[i] for i, p in enumerate(payoffs)]
    N = len(payoffs)
    regret = [np.zeros(a) for a in n]
    x = [np.full(a, 1.0 / a) for a in n]
    played: list[list[np.ndarray]] = [[] for _ in range(N)]
    for _ in range(T):
        for i in range(N):
            played[i].append(x[i])
        view, nxt = list(x), list(x)
        for i in range(N):
            u = _utilities(payoffs[i], view if alternating else x, i)
            regret[i] = np.maximum(regret[i] + u - u @ x[i], 0.0)
            m = u if predictive else np.zeros_like(u)
            nxt[i] = _regret_matching(np.maximum(regret[i] + m - m @ x[i], 0.0))
            if alternating:
                view[i] = nxt[i]
        x = nxt
    return [np.array(p) for p in played]


# RM+ simultaneous and PRM+ alternating by default (each order and each learner once); the other
# two in the full mode (test_rm_plus_and_hedge_in_every_order_match_the_literal_references runs all
# four against the papers module's references by default: the same compiled loops).
@pytest.mark.parametrize(
    "alternating, predictive",
    [
        case(False, False, default=True, id="simultaneous-rm-plus"),
        case(False, True, default=False, id="simultaneous-prm-plus"),
        case(True, False, default=False, id="alternating-rm-plus"),
        case(True, True, default=True, id="alternating-prm-plus"),
    ],
)
def test_regret_matching_in_either_order_is_the_literal_one(predictive, alternating):
    game = zero_sum(41)
    order = "alternating" if alternating else "simultaneous"
    result = run(game, "rm-plus+smooth-uniform", T=T, optimistic=predictive, order=order)
    expected = literal_rm(payoffs_of(game), T, predictive, alternating)
    for i in range(2):
        np.testing.assert_allclose(result.policies[i][:, 0, 0], expected[i], rtol=0, atol=TOL)
    # The two orders are different algorithms on this game (it must not pass by coincidence).
    other = literal_rm(payoffs_of(game), T, predictive, not alternating)
    assert np.max(np.abs(result.policies[1][:, 0, 0] - other[1])) > 1e-3


def test_alternation_with_three_players_uses_the_newest_strategies():
    base = make_random_game(43, 3, 1, 1, (2, 3, 2))
    rewards = base.rewards.copy()
    rewards[0, 2] = 1.0 - 0.5 * (rewards[0, 0] + rewards[0, 1])
    game = MarkovGame(rewards, base.transitions, base.initial_state)
    result = run(game, "rm-plus+smooth-uniform", T=T, order="alternating")
    expected = literal_rm(payoffs_of(game), T, True, True)
    for i in range(3):
        np.testing.assert_allclose(result.policies[i][:, 0, 0], expected[i], rtol=0, atol=TOL)


def literal_hedge(payoffs, T: int, rates, factor, optimistic: bool) -> list[np.ndarray]:
    """(Optimistic) Hedge as FTRL with a time-varying rate: ``x^t ∝ exp(eta_{i,t} (sum_{j<t} u^j + m^t))``."""
    N = len(payoffs)
    n = [p.shape[i] for i, p in enumerate(payoffs)]
    sums = [np.zeros(a) for a in n]
    last = [np.zeros(a) for a in n]
    played: list[list[np.ndarray]] = [[] for _ in range(N)]
    for t in range(1, T + 1):
        x = [_hedge(sums[i] + (last[i] if optimistic else 0.0), rates[i] * factor(t)) for i in range(N)]
        for i in range(N):
            u = _utilities(payoffs[i], x, i)
            sums[i] = sums[i] + u
            last[i] = u
            played[i].append(x[i])
    return [np.array(p) for p in played]


_SCHEDULES = {
    "constant": ("constant", lambda t: 1.0),
    "sqrt": ("sqrt", lambda t: t**-0.5),
    "power": ("power:0.75", lambda t: t**-0.75),
}

#: Each schedule once and each of one rate and rates per player by default; all six in the full mode.
_SCHEDULE_DEFAULT = {("one-rate", "constant"), ("per-player", "sqrt"), ("one-rate", "power")}


@pytest.mark.parametrize(
    ("per_player", "schedule", "factor"),
    [
        case(per_player, *_SCHEDULES[name], default=(rates, name) in _SCHEDULE_DEFAULT, id=f"{rates}-{name}")
        for per_player, rates in ((False, "one-rate"), (True, "per-player"))
        for name in _SCHEDULES
    ],
)
def test_hedge_with_a_step_schedule_is_ftrl_with_a_time_varying_rate(schedule, factor, per_player):
    game = zero_sum(42)
    rates = (0.9, 0.3) if per_player else (0.9, 0.9)
    eta = rates if per_player else 0.9
    result = run(game, "hedge+smooth-uniform", T=T, eta=eta, step_schedule=schedule)
    expected = literal_hedge(payoffs_of(game), T, rates, factor, optimistic=True)
    for i in range(2):
        np.testing.assert_allclose(result.policies[i][:, 0, 0], expected[i], rtol=0, atol=TOL)
    assert result.step_schedule == schedule


def test_a_users_schedule_from_a_file(tmp_path):
    source = tmp_path / "rates.py"
    source.write_text("import numpy as np\n\ndef harmonic(t):\n    return 1.0 / (1.0 + np.log(t))\n")
    game = zero_sum(44)
    schedule = get_step_schedule(f"{source}:harmonic")
    assert schedule.source_sha256 is not None
    result = run(game, "hedge+smooth-uniform", T=T, eta=0.8, step_schedule=schedule)
    expected = literal_hedge(payoffs_of(game), T, (0.8, 0.8), lambda t: 1.0 / (1.0 + np.log(t)), optimistic=True)
    np.testing.assert_allclose(result.policies[0][:, 0, 0], expected[0], rtol=0, atol=TOL)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("return -1.0 + 0 * t", "at t = 1 is -1.0"),
        ("return np.where(t > 3, np.nan, 1.0)", "at t = 4 is nan"),
        ("raise RuntimeError('no')", "raised RuntimeError: no"),
    ],
)
def test_a_bad_users_schedule_stops_the_run_naming_it(tmp_path, body, message):
    source = tmp_path / "bad.py"
    source.write_text(f"import numpy as np\n\ndef f(t):\n    {body}\n")
    with pytest.raises(ValueError, match="step-size schedule") as err:
        run(zero_sum(45), "hedge+smooth-uniform", T=10, step_schedule=f"{source}:f")
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"order": "sequential"}, "order must be one of simultaneous, alternating"),
        ({"step_schedule": "power:2"}, "exponent must be a number in [0, 1]"),
        ({"step_schedule": "power:x"}, "is not a number"),
        ({"step_schedule": "sqrtt"}, "did you mean 'sqrt'"),
        ({"eta": (0.1, 0.2, 0.3)}, "got 3 for a game of 2 players"),
        ({"eta": (0.1, -0.2)}, "positive finite"),
        ({"eta": (0.1, "theory")}, "'theory' is one rate for all players"),
        ({"algorithm": "extragradient+smooth-uniform", "order": "alternating"}, "two utility queries"),
        ({"algorithm": "extragradient+smooth-uniform", "optimistic": False}, "no non-optimistic form"),
        ({"algorithm": "bm-exrm-plus+smooth-uniform"}, "the reduction takes learners of one query"),
    ],
)
def test_bad_settings_are_refused_with_what_was_wrong(kwargs, message):
    kwargs = {"algorithm": "hedge+smooth-uniform", **kwargs}
    with pytest.raises(ValueError) as err:
        run(zero_sum(46), T=5, **kwargs)
    assert message in str(err.value)


def literal_regrets(payoffs, played, i: int, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Player ``i``'s weighted average external and swap regret after each prefix."""
    x = played[i]
    U = np.array([_utilities(payoffs[i], [p[t] for p in played], i) for t in range(len(x))])
    external, swap = [], []
    for t in range(1, len(x) + 1):
        w = weights[:t] / weights[:t].sum()
        gain = U[:t] - np.sum(U[:t] * x[:t], axis=1, keepdims=True)  # u(b) - <u, x>
        external.append(np.max(w @ gain))
        # sum_a max_b sum_j w_j x_j(a) (u_j(b) - u_j(a))
        swap.append(sum(np.max(w @ (x[:t, a, None] * (U[:t] - U[:t, a, None]))) for a in range(x.shape[1])))
    return np.array(external), np.array(swap)


#: Each learner with one averaging by default, alternating, so both averagings run (the regret rows
#: weigh what was played as the averaging says, whatever the learner); all six in the full mode.
_REGRET_CASES = [
    case(learner, update, default=(k + u) % 2 == 0, id=f"{learner}-{update}")
    for k, learner in enumerate(["hedge", "rm-plus", "bm-hedge"])
    for u, update in enumerate(["smooth-uniform", "smooth-linear"])
]


@pytest.mark.parametrize(("learner", "update"), _REGRET_CASES)
def test_regret_curves_on_a_normal_form_game_are_the_literal_regrets(update, learner):
    game = make_random_game(47, 2, 1, 1, (3, 2))
    result = run(game, f"{learner}+{update}", T=T, regret=True, eta=0.7)
    played = [p[:, 0, 0] for p in result.policies]
    weights = np.ones(T) if update == "smooth-uniform" else np.arange(1.0, T + 1)
    for i in range(2):
        external, swap = literal_regrets(payoffs_of(game), played, i, weights)
        np.testing.assert_allclose(result.external_regret[:, i], external, rtol=0, atol=TOL)
        np.testing.assert_allclose(result.swap_regret[:, i], swap, rtol=0, atol=TOL)


def test_regret_curves_under_alternation_use_the_utilities_the_learners_saw():
    game = zero_sum(48)
    result = run(game, "rm-plus+smooth-uniform", T=T, regret=True, order="alternating", optimistic=False)
    P = payoffs_of(game)
    x, y = (p[:, 0, 0] for p in result.policies)
    # Player 1 saw player 0's next strategy: x^{t+1} (computed in iteration t; the last one too).
    nxt = run(game, "rm-plus+smooth-uniform", T=T + 1, order="alternating", optimistic=False).policies[0][1:, 0, 0]
    U1 = np.array([_utilities(P[1], [nxt[t], y[t]], 1) for t in range(T)])
    gain = U1 - np.sum(U1 * y, axis=1, keepdims=True)
    expected = np.max(np.cumsum(gain, axis=0) / np.arange(1, T + 1)[:, None], axis=1)
    np.testing.assert_allclose(result.external_regret[:, 1], expected, rtol=0, atol=TOL)


def test_regret_curves_in_a_markov_game_are_the_largest_over_steps_and_states():
    """Swap regret is at least external regret at every step and state, so their maxima too; a
    batch gives every run's curves as its single runs do; the curves leave the rest unchanged."""
    game = make_random_game(49, 2, 2, 2, (2, 3))  # (two steps and states: compile time grows with H)
    with_regret = run(game, "bm-hedge+smooth", T=40, regret=True)
    plain = run(game, "bm-hedge+smooth", T=40)
    np.testing.assert_array_equal(with_regret.value, plain.value)
    np.testing.assert_array_equal(with_regret.certified_ce_bound, plain.certified_ce_bound)
    assert np.all(with_regret.swap_regret >= with_regret.external_regret - 1e-12)
    assert np.all(with_regret.swap_regret >= -1e-12)
    batch = run_batch([game, game], "bm-hedge+smooth", T=40, etas=[0.2, 0.5], regret=True)
    np.testing.assert_allclose(batch.run(0).swap_regret, with_regret.swap_regret, rtol=0, atol=1e-13)
    # Rates per player in a batch: a tuple per run (a bare tuple of numbers is one rate per run).
    per_player = run_batch(game, "bm-hedge+smooth", T=40, etas=[(0.2, 0.5), (0.5, 0.2)], regret=True)
    single = run(game, "bm-hedge+smooth", T=40, eta=(0.5, 0.2), regret=True)
    np.testing.assert_allclose(per_player.run(1).swap_regret, single.swap_regret, rtol=0, atol=1e-13)
    assert len(run_batch(game, "bm-hedge+smooth", T=40, etas=(0.2, 0.5), regret=True)) == 2  # (the batch's loop)
    assert plain.external_regret is None


def test_the_papers_settings_are_unchanged_by_the_new_defaults():
    """Simultaneous, constant and without regret curves, a run is the same run (bit for bit) as
    with the settings named."""
    game = make_random_game(50, 2, 2, 3, (2, 2))
    default = run(game, "smooth_ce", T=30)
    named = run(game, "smooth_ce", T=30, order="simultaneous", step_schedule="constant", regret=False)
    for i in range(2):
        np.testing.assert_array_equal(default.policies[i], named.policies[i])
    np.testing.assert_array_equal(default.value, named.value)


# ------------------------------------------------------------------------------------------------
# The projected-gradient learners against tests/literal_learners.py (written from their papers)
# ------------------------------------------------------------------------------------------------


def game_of(payoffs) -> MarkovGame:
    """A one-state, one-step game of payoffs in [0, 1] (an affine image of ``payoffs``; these
    learners are not scale invariant, so the literal reference runs on the same image)."""
    stacked = np.stack([np.asarray(p, float) for p in payoffs])
    lo, hi = stacked.min(), stacked.max()
    scaled = (stacked - lo) / (hi - lo)
    n = scaled.shape[1:]
    return MarkovGame(scaled[None, :, None], np.ones((1, 1, *n, 1)), 0)


# Each learner once and each rate by default (one compiled loop per learner: the rate is an
# argument of the loop); all six in the full mode.
@pytest.mark.parametrize(
    ("eta", "name"),
    [
        case(eta, name, default=(k + e) % 2 == 0, id=f"{eta}-{name}")
        for e, eta in enumerate([0.1, 1.3])
        for k, name in enumerate(["extragradient", "exrm-plus", "sprm-plus"])
    ],
)
def test_projected_gradient_learners_are_their_papers_algorithms(name, eta):
    game = game_of(literal.cai_3x3_game())
    payoffs = payoffs_of(game)
    reference = {"extragradient": literal.extragradient, "exrm-plus": literal.exrm_plus, "sprm-plus": literal.sprm_plus}[name]
    expected = reference(payoffs, T, eta)
    result = run(game, f"{name}+smooth-uniform", T=T, eta=eta)
    for i in range(2):
        np.testing.assert_allclose(result.policies[i][:, 0, 0], expected.played[i], rtol=0, atol=TOL)


def test_rm_plus_and_hedge_in_every_order_match_the_literal_references():
    """The same checks as above, against the references of the papers module (an independent
    writing of alternation: its rounds, not the engine's iterations)."""
    game = zero_sum(51)
    payoffs = payoffs_of(game)
    for predictive in (False, True):
        for alternating in (False, True):
            order = "alternating" if alternating else "simultaneous"
            result = run(game, "rm-plus+smooth-uniform", T=T, optimistic=predictive, order=order)
            expected = literal.rm_plus(payoffs, T, predictive=predictive, alternating=alternating)
            for i in range(2):
                np.testing.assert_allclose(result.policies[i][:, 0, 0], expected[i], rtol=0, atol=TOL)
    result = run(game, "hedge+smooth-uniform", T=T, eta=0.9, step_schedule="sqrt", order="alternating", optimistic=False)
    expected = literal.hedge(payoffs, T, lambda t: 0.9 / np.sqrt(t), alternating=True)
    for i in range(2):
        np.testing.assert_allclose(result.policies[i][:, 0, 0], expected[i], rtol=0, atol=TOL)


def test_last_iterates_on_the_3x3_game_of_cai_et_al():
    """Cai et al. (ICLR 2025): RM+ and PRM+ do not converge in last iterate on this game, ExRM+ and
    SPRM+ do. The engine's duality gaps of the last iterate (in the game's [0, 1] image) say the same."""
    game = game_of(literal.cai_3x3_game())
    gaps = {}
    # eta = 0.8 in the [0, 1] image (payoffs in [-4, 4] divided by 8) is the step 0.1 in the paper's units.
    for name, eta in (("rm-plus", 1.0), ("exrm-plus", 0.8), ("sprm-plus", 0.8)):
        result = run(game, f"{name}+smooth-uniform", T=2000, eta=eta, last_iterate=[2000])
        gaps[name] = float(result.last_iterate_duality_gap[-1])
        # The engine's duality gap (best responses by backward induction) is the matrix game's.
        x, y = (p[-1, 0, 0] for p in result.policies)
        assert gaps[name] == pytest.approx(literal.duality_gap(payoffs_of(game)[0], x, y), abs=1e-12)
    assert gaps["rm-plus"] > 1e-3
    assert gaps["exrm-plus"] < 1e-6 and gaps["sprm-plus"] < 1e-6


@pytest.mark.parametrize("name", ["extragradient", "exrm-plus", "sprm-plus"])
def test_an_initial_strategy_is_where_the_papers_algorithm_starts(name):
    game = game_of(literal.cai_3x3_game())
    start = [np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.2, 0.6])]
    reference = {"extragradient": literal.extragradient, "exrm-plus": literal.exrm_plus, "sprm-plus": literal.sprm_plus}[name]
    expected = reference(payoffs_of(game), T, 0.5, start)
    result = run(game, f"{name}+smooth-uniform", T=T, eta=0.5, initial_strategy=start)
    for i in range(2):
        np.testing.assert_allclose(result.policies[i][:, 0, 0], expected.played[i], rtol=0, atol=TOL)
    np.testing.assert_allclose(expected.base[0][0], start[0])


@pytest.mark.parametrize(
    ("algorithm", "start", "message"),
    [
        ("hedge+smooth-uniform", [[1, 0, 0], [1, 0, 0]], "has no init_at"),
        ("ogda+stage", [[1, 0, 0], [1, 0, 0]], "restarts its learners every stage"),
        ("ogda+smooth-uniform", [[1, 0, 0]], "one strategy per player (2), got 1"),
        ("ogda+smooth-uniform", [[1, 0], [1, 0, 0]], "expected shape (3,) or (1, 1, 3)"),
        ("ogda+smooth-uniform", [[0.5, 0.6, -0.1], [1, 0, 0]], "must be probability vectors"),
    ],
)
def test_a_bad_initial_strategy_is_refused(algorithm, start, message):
    with pytest.raises(ValueError) as err:
        run(zero_sum(52), algorithm, T=5, initial_strategy=start)
    assert message in str(err.value)


def test_alternation_and_schedules_under_the_stage_based_update():
    """The stage's learners restart every stage: a schedule's t is the position in the stage, and
    alternation plays within the stage. Checked on ``H = 1``, whose stages have lengths 1, 2, 4, ...
    and ``Q^tau = r`` from stage 2 on (stage 1 sees ``Q^1 = 0``): without optimism (the stage's
    first prediction is not a literal algorithm's) each later stage is a fresh literal run."""
    game = zero_sum(53)
    result = run(game, "rm-plus+stage", T=15, order="alternating", optimistic=False)
    hedge = run(game, "hedge+stage", T=15, eta=0.9, step_schedule="sqrt", optimistic=False)
    start = 1
    for length in (2, 4, 8):
        expected = literal.rm_plus(payoffs_of(game), length, predictive=False, alternating=True)
        expected_h = literal.hedge(payoffs_of(game), length, lambda t: 0.9 / np.sqrt(t), optimistic=False)
        for i in range(2):
            np.testing.assert_allclose(result.policies[i][start : start + length, 0, 0], expected[i], rtol=0, atol=TOL)
            np.testing.assert_allclose(hedge.policies[i][start : start + length, 0, 0], expected_h[i], rtol=0, atol=TOL)
        start += length


USER_EXTRAGRADIENT = """
from typing import NamedTuple

import jax.numpy as jnp

from markovgames.learners import Learner, LearnerSpec, project_simplex


class State(NamedTuple):
    base: jnp.ndarray


def build(axis):
    def init(shape, dtype):
        return State(jnp.full(shape, 1.0 / shape[axis], dtype))

    def propose(state, eta, decay):
        return {propose}

    def play(state, prediction, eta, decay):
        return project_simplex(state.base + eta * prediction, axis), state

    def observe(state, utility, decay, eta):
        return State(project_simplex(state.base + eta * utility, axis))

    return Learner(init, play, observe, propose=propose, observe_takes_eta=True)


EG = LearnerSpec("my-eg", build, description="extragradient, written by a user")
"""


def test_a_users_two_query_learner_runs_in_the_same_loop(tmp_path):
    """A user's learner with ``propose`` and ``observe_takes_eta`` is the built-in extragradient
    (the protocol's optional parts reach user code as they reach the built-ins)."""
    source = tmp_path / "eg.py"
    source.write_text(USER_EXTRAGRADIENT.replace("{propose}", "state.base"))
    game = game_of(literal.cai_3x3_game())
    mine = run(game, f"{source}:EG+smooth-uniform", T=T, eta=0.4)
    builtin = run(game, "extragradient+smooth-uniform", T=T, eta=0.4)
    for i in range(2):
        np.testing.assert_allclose(mine.policies[i], builtin.policies[i], rtol=0, atol=TOL)


def test_a_users_propose_of_the_wrong_shape_is_the_users_error(tmp_path):
    from markovgames.learners import LearnerError

    source = tmp_path / "eg.py"
    source.write_text(USER_EXTRAGRADIENT.replace("{propose}", "state.base[..., :1]"))
    with pytest.raises(LearnerError, match="propose returned"):
        run(game_of(literal.cai_3x3_game()), f"{source}:EG+smooth-uniform", T=5)


def test_a_users_init_at_of_the_wrong_structure_is_the_users_error(tmp_path):
    from markovgames.learners import LearnerError

    source = tmp_path / "eg.py"
    text = USER_EXTRAGRADIENT.replace("{propose}", "state.base").replace(
        "observe_takes_eta=True)", "observe_takes_eta=True, init_at=lambda s, dtype: (s, s))"
    )
    source.write_text(text)
    with pytest.raises(LearnerError, match="init_at returned a state"):
        run(game_of(literal.cai_3x3_game()), f"{source}:EG+smooth-uniform", T=5, initial_strategy=[[1, 0, 0], [0, 1, 0]])
