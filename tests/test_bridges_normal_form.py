"""markovgames.bridges.normal_form: building and lifting normal-form games, Gambit .nfg files, Nashpy cross-checks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from conftest import needs_extra
from markovgames.bridges.normal_form import (
    LiftedGame,
    NFGFormatError,
    NormalFormGame,
    bimatrix,
    format_nfg,
    joint_distribution,
    lift,
    nash_equilibria,
    parse_nfg,
    payoffs_from_function,
    product_index_policy,
    product_policy,
    read_nfg,
    write_nfg,
)
from markovgames.evaluation import exact_cce_gap, exact_ce_gap, policy_value
from markovgames.solvers import solve_equilibrium

# Textbook games in their own units (row player's matrix, column player's matrix).
CHICKEN = bimatrix([[0, -1], [1, -10]], [[0, 1], [-1, -10]])
BATTLE = bimatrix([[2, 0], [0, 1]], [[1, 0], [0, 2]])
PENNIES = bimatrix([[1, -1], [-1, 1]], [[-1, 1], [1, -1]])
RPS = bimatrix([[0, -1, 1], [1, 0, -1], [-1, 1, 0]], [[0, 1, -1], [-1, 0, 1], [1, -1, 0]])


def random_payoffs(seed: int, num_actions) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(-5, 9, size=(len(num_actions), *num_actions)).astype(float)


# ---------------------------------------------------------------------------------------------
# Building and lifting
# ---------------------------------------------------------------------------------------------
def test_payoffs_from_function_any_number_of_players():
    # 3-player majority game: a player gets 1 when at least one other player chose its action.
    u = payoffs_from_function((2, 2, 2), lambda a: [float(sum(x == ai for x in a) >= 2) for ai in a])
    assert u.shape == (3, 2, 2, 2)
    for a in itertools.product(range(2), repeat=3):
        for i in range(3):
            assert u[(i, *a)] == float(sum(x == a[i] for x in a) >= 2)
    lifted = lift(u)
    assert lifted.rescaling.is_identity
    assert lifted.game.horizon == 1 and lifted.game.num_states == 1 and lifted.game.num_actions == (2, 2, 2)
    np.testing.assert_array_equal(lifted.game.rewards[0, :, 0], u)


def test_lift_rescales_affinely_and_returns_the_map():
    lifted = lift(NormalFormGame(CHICKEN, title="chicken"))
    assert isinstance(lifted, LiftedGame)
    # lo = -10, hi = 1: u01 = (u + 10) / 11.
    assert lifted.scale == pytest.approx(1 / 11)
    assert lifted.offset == pytest.approx(10 / 11)
    np.testing.assert_allclose(lifted.game.rewards[0, :, 0], (CHICKEN + 10) / 11, rtol=0, atol=1e-15)
    assert lifted.game.rewards.min() == 0.0 and lifted.game.rewards.max() == 1.0
    # The map inverts on values and gaps.
    np.testing.assert_allclose(lifted.original_values(lifted.game.rewards[0, :, 0, 1, 0]), CHICKEN[:, 1, 0])
    assert lifted.original_gaps(1 / 11) == pytest.approx(1.0)
    # Explicit bounds keep a chosen scale; bounds that do not contain the payoffs are refused.
    wide = lift(CHICKEN, bounds=(-20, 20))
    assert wide.scale == pytest.approx(1 / 40) and wide.offset == pytest.approx(0.5)
    with pytest.raises(ValueError, match="contain"):
        lift(CHICKEN, bounds=(-5, 5))
    # No rescaling (payoffs taken as rewards): refused, with the numbers written plainly.
    with pytest.raises(ValueError, match=r"the rescaled values span \[-10, 1\], not inside \[0, 1\]"):
        lift(CHICKEN, bounds=None)
    # The same game as the library's built-in chicken (same textbook map).
    from markovgames.games import chicken

    np.testing.assert_allclose(lifted.game.rewards, chicken().rewards, rtol=0, atol=1e-15)


def test_equilibria_are_invariant_under_the_rescaling():
    # Same LP CE (welfare objective scaled by a positive constant) in both units: compare incentives.
    lifted = lift(BATTLE, bounds=(-3, 7))
    sol = solve_equilibrium(lifted.game, "ce")
    sigma = sol.policy.joint[0, 0]
    assert _max_ce_violation(BATTLE, sigma) <= 1e-8
    assert _max_ce_violation(lifted.game.rewards[0, :, 0], sigma) <= 1e-9


# ---------------------------------------------------------------------------------------------
# Gambit .nfg
# ---------------------------------------------------------------------------------------------
PAYOFF_FORM = """NFG 1 R "Selten (IJGT, 75), Figure 2, normal form"
{ "Player 1" "Player 2" } { 3 2 }
"a comment"

1 1 0 2 0 2 1 1 0 3 2 0
"""

OUTCOME_FORM = """NFG 1 R "Two person 2 x 2 game with unique mixed equilibrium"
{ "Player 1" "Player 2" }

{ { "Top" "Bottom" }
{ "Left" "Right" }
}
""

{
{ "" 1, 0 }
{ "" 0, 1 }
{ "outcome \\"three\\"" 1/2 -3/4 }
}
1 2 0 3
"""


def test_parse_payoff_form_player_one_fastest():
    g = parse_nfg(PAYOFF_FORM)
    assert g.title == "Selten (IJGT, 75), Figure 2, normal form"
    assert g.player_names == ("Player 1", "Player 2")
    assert g.num_actions == (3, 2)
    assert g.comment == "a comment"
    # Contingencies (1,1), (2,1), (3,1), (1,2), (2,2), (3,2), each with both players' payoffs.
    expected = {(0, 0): (1, 1), (1, 0): (0, 2), (2, 0): (0, 2), (0, 1): (1, 1), (1, 1): (0, 3), (2, 1): (2, 0)}
    for (a, b), (u0, u1) in expected.items():
        assert g.payoffs[0, a, b] == u0 and g.payoffs[1, a, b] == u1


def test_parse_outcome_form_with_null_outcome_rationals_and_escapes():
    g = parse_nfg(OUTCOME_FORM)
    assert g.strategy_names == (("Top", "Bottom"), ("Left", "Right"))
    assert g.num_actions == (2, 2)
    # Contingency order (T,L), (B,L), (T,R), (B,R) -> outcomes 1, 2, 0 (null), 3.
    np.testing.assert_array_equal(g.payoffs[:, 0, 0], [1, 0])
    np.testing.assert_array_equal(g.payoffs[:, 1, 0], [0, 1])
    np.testing.assert_array_equal(g.payoffs[:, 0, 1], [0, 0])
    np.testing.assert_array_equal(g.payoffs[:, 1, 1], [0.5, -0.75])


@pytest.mark.parametrize("form", ["payoff", "outcome"])
@pytest.mark.parametrize("exact", [False, True])
def test_nfg_round_trip_exact(tmp_path, form, exact):
    rng = np.random.default_rng(3)
    payoffs = rng.normal(size=(3, 2, 3, 2)) * 7.3
    payoffs[0, 0, 0, 0] = 4.0  # an integer entry
    g = NormalFormGame(payoffs, title='three "players"', strategy_names=(("x", "y"), ("a", "b", "c"), ("u", "v")))
    path = write_nfg(tmp_path / "g.nfg", g, form=form, exact=exact)
    back = read_nfg(path)
    np.testing.assert_array_equal(back.payoffs, payoffs)
    assert back.title == g.title
    assert back.num_actions == (2, 3, 2)
    if form == "outcome":
        assert back.strategy_names == g.strategy_names


@pytest.mark.parametrize(
    "text, message",
    [
        ('NFG 2 R "x" { "a" } { 2 }\n1 2', "header"),
        ('NFG 1 R "x" { "a" "b" } { 2 2 }\n1 2 3', "expected 2 x 4 = 8 payoffs"),
        ('NFG 1 R "x" { "a" "b" } { 1 1 }\n1 zz', "number"),
        ('NFG 1 R "x" { "a" "b" } { 1 1 }\n1 1/0', "number"),
        ('NFG 1 R "x" { "a" "b" } { { "1" } { "1" } } "" { { "" 1 2 } } 2', "outcome number 2"),
        ('NFG 1 R "x" { "a" "b" } { 2 }', "2 players but 1 strategy counts"),
        ('NFG 1 R "unterminated', "unterminated"),
    ],
)
def test_parse_errors_are_clear(text, message):
    with pytest.raises(NFGFormatError, match=message):
        parse_nfg(text)


def test_read_error_names_the_path(tmp_path):
    path = tmp_path / "bad.nfg"
    path.write_text('NFG 1 R "x" { "a" } { 2 }\n1', encoding="utf-8")
    with pytest.raises(NFGFormatError, match="bad.nfg"):
        read_nfg(path)


def test_only_regular_files_are_read(tmp_path):
    """A FIFO would block the reader and a device never ends: refused before a byte is read."""
    import os

    os.mkfifo(tmp_path / "pipe.nfg")
    (tmp_path / "zero.nfg").symlink_to("/dev/zero")
    for name, kind in (("pipe.nfg", "a FIFO"), ("zero.nfg", "a character device")):
        with pytest.raises(NFGFormatError, match=rf"{name}: cannot read: not a regular file \({kind}\)"):
            read_nfg(tmp_path / name)


def _openspiel_payoffs(game) -> np.ndarray:
    """Payoffs of an OpenSpiel one-shot game, by playing every joint action."""
    n = game.num_players()
    state = game.new_initial_state()
    acts = [state.legal_actions(p) for p in range(n)]
    out = np.zeros((n, *(len(a) for a in acts)))
    for joint in itertools.product(*(range(len(a)) for a in acts)):
        s = game.new_initial_state()
        s.apply_actions([acts[p][j] for p, j in enumerate(joint)])
        out[(slice(None), *joint)] = s.returns()
    return out


@pytest.mark.parametrize("num_actions", [(3, 2), (2, 3, 2)])
def test_nfg_files_agree_with_openspiel(num_actions):
    pyspiel = needs_extra("openspiel", "pyspiel")
    payoffs = random_payoffs(11, num_actions) + 0.25
    # Ours -> OpenSpiel's reader.
    text = format_nfg(NormalFormGame(payoffs, title="ours"))
    np.testing.assert_array_equal(_openspiel_payoffs(pyspiel.load_nfg_game(text)), payoffs)
    # OpenSpiel's writer -> ours.
    for name in ("matrix_pd", "matrix_rps", "matching_pennies_3p"):
        game = pyspiel.load_game(name)
        ours = parse_nfg(pyspiel.game_to_nfg_string(game))
        np.testing.assert_array_equal(ours.payoffs, _openspiel_payoffs(game))


# ---------------------------------------------------------------------------------------------
# Nashpy: a Nash equilibrium is a CE (exact CE gap 0 as a product policy)
# ---------------------------------------------------------------------------------------------
NASH_GAMES = {
    "chicken": CHICKEN,
    "battle_of_the_sexes": BATTLE,
    "matching_pennies": PENNIES,
    "rock_paper_scissors": RPS,
    "random_3x3": random_payoffs(5, (3, 3)) + np.random.default_rng(50).random((2, 3, 3)),
    "random_4x3": random_payoffs(6, (4, 3)) + np.random.default_rng(60).random((2, 4, 3)),
}


@pytest.mark.parametrize("name", sorted(NASH_GAMES))
def test_nashpy_equilibria_have_zero_exact_ce_gap(name):
    needs_extra("normalform", "nashpy")
    payoffs = NASH_GAMES[name]
    lifted = lift(payoffs)
    equilibria = nash_equilibria(lifted, "support_enumeration") + nash_equilibria(payoffs, "lemke_howson")
    assert equilibria
    for x, y in equilibria:
        for policy in (product_policy([x, y]), product_index_policy([x, y])):
            ce = exact_ce_gap(lifted.game, policy)
            cce = exact_cce_gap(lifted.game, policy)
            assert abs(ce.gap) <= 1e-9, (name, x, y, ce.per_player)
            assert cce.gap <= 1e-9
            # The value is the expected payoff x^T A y (y^T B x), through the rescaling.
            expected = np.einsum("a,b,iab->i", x, y, payoffs)
            np.testing.assert_allclose(lifted.original_values(policy_value(lifted.game, policy)), expected, atol=1e-9)


def test_nashpy_in_original_or_lifted_units_gives_the_same_equilibria():
    needs_extra("normalform", "nashpy")
    lifted = lift(CHICKEN)
    a = nash_equilibria(CHICKEN)
    b = nash_equilibria(lifted.game)
    assert len(a) == len(b) == 3
    for (x1, y1), (x2, y2) in zip(a, b, strict=True):
        np.testing.assert_allclose(x1, x2, atol=1e-12)
        np.testing.assert_allclose(y1, y2, atol=1e-12)


def test_nash_equilibria_refuses_more_than_two_players():
    needs_extra("normalform", "nashpy")
    with pytest.raises(ValueError, match="two-player"):
        nash_equilibria(random_payoffs(1, (2, 2, 2)))


# ---------------------------------------------------------------------------------------------
# The LP solver's correlated equilibria satisfy every incentive constraint (checked here)
# ---------------------------------------------------------------------------------------------
def _max_ce_violation(payoffs: np.ndarray, sigma: np.ndarray) -> float:
    """max over i, a != b of sum_{a_-i} sigma(a, a_-i) [u_i(b, a_-i) - u_i(a, a_-i)] (plain loops)."""
    n = payoffs.shape[0]
    acts = payoffs.shape[1:]
    worst = -np.inf
    for i in range(n):
        for a in range(acts[i]):
            for b in range(acts[i]):
                if a == b:
                    continue
                total = 0.0
                for joint in itertools.product(*(range(k) for k in acts)):
                    if joint[i] != a:
                        continue
                    dev = list(joint)
                    dev[i] = b
                    total += sigma[joint] * (payoffs[(i, *dev)] - payoffs[(i, *joint)])
                worst = max(worst, total)
    return worst


def _max_cce_violation(payoffs: np.ndarray, sigma: np.ndarray) -> float:
    """max over i, b of sum_a sigma(a) [u_i(b, a_-i) - u_i(a)]."""
    n = payoffs.shape[0]
    acts = payoffs.shape[1:]
    worst = -np.inf
    for i in range(n):
        for b in range(acts[i]):
            total = 0.0
            for joint in itertools.product(*(range(k) for k in acts)):
                dev = list(joint)
                dev[i] = b
                total += sigma[joint] * (payoffs[(i, *dev)] - payoffs[(i, *joint)])
            worst = max(worst, total)
    return worst


LP_GAMES = {
    "chicken": CHICKEN,
    "battle_of_the_sexes": BATTLE,
    "rock_paper_scissors": RPS,
    "random_3x4": random_payoffs(7, (3, 4)),
    "random_2x2x3": random_payoffs(8, (2, 2, 3)),
    "majority_3p": payoffs_from_function((2, 2, 2), lambda a: [float(sum(x == ai for x in a) >= 2) for ai in a]),
}


@pytest.mark.parametrize("name", sorted(LP_GAMES))
@pytest.mark.parametrize("objective", ["welfare", "max-min", "player:0"])
def test_lp_correlated_equilibria_satisfy_every_incentive_constraint(name, objective):
    payoffs = LP_GAMES[name]
    lifted = lift(payoffs)
    u01 = lifted.game.rewards[0, :, 0]
    ce = solve_equilibrium(lifted.game, "ce", objective).policy.joint[0, 0]
    cce = solve_equilibrium(lifted.game, "cce", objective).policy.joint[0, 0]
    assert ce.min() >= 0 and abs(ce.sum() - 1) <= 1e-12
    assert _max_ce_violation(u01, ce) <= 1e-9
    assert _max_cce_violation(u01, cce) <= 1e-9
    # Every CE is a CCE; in the original units the violations are the same up to 1 / scale.
    assert _max_cce_violation(u01, ce) <= 1e-9
    assert _max_ce_violation(payoffs, ce) <= 1e-9 / lifted.scale
    # And the library's exact gaps of them agree that they are equilibria.
    assert exact_ce_gap(lifted.game, product_policy_from_joint(ce)).gap <= 1e-9


def product_policy_from_joint(joint: np.ndarray):
    from markovgames.policies import MarkovCorrelatedPolicy

    return MarkovCorrelatedPolicy(joint[None, None], joint.ndim)


def test_joint_distribution_and_product_policies():
    x, y = np.array([0.25, 0.75]), np.array([0.5, 0.2, 0.3])
    joint = joint_distribution([x, y])
    np.testing.assert_allclose(joint, np.outer(x, y))
    assert product_policy([x, y]).joint.shape == (1, 1, 2, 3)
    idx = product_index_policy([x, y])
    assert idx.T == 1 and idx.num_actions == (2, 3)
    with pytest.raises(ValueError, match="probability vector"):
        product_policy([np.array([0.5, 0.6]), y])


# Gambit's own catalog file e01.nfg (catalog/gamefiles in the Gambit repository): strategy names
# followed by a payoff list. Gambit's reader picks the body's form by its first token, whatever
# the header gave; this reader once took names to mean an outcome list and refused the file.
_E01 = """NFG 1 R "Selten (IJGT, 75), Figure 1, normal form" { "Player 1" "Player 2" "Player 3" }

{ { "1" "2" }
{ "1" "2" }
{ "1" "2" }
}

1 1 1 3 2 2 4 4 0 3 2 2 1 1 1 0 0 0 0 0 1 0 0 0
"""

_COUNTS_WITH_OUTCOMES = """NFG 1 R "counts + outcome list" { "P1" "P2" } { 2 2 }

{
{ "" 2, 0 }
{ "" 0, 1 }
{ "" 0, 1 }
{ "" 1, 0 }
}
1 2 3 4
"""


def test_nfg_body_form_goes_by_its_first_token():
    e01 = parse_nfg(_E01)
    assert e01.strategy_names == (("1", "2"),) * 3
    # Contingencies in Gambit's order, player 1 fastest: (0,0,0), (1,0,0), (0,1,0), ...
    np.testing.assert_array_equal(e01.payoffs[:, 0, 0, 0], [1, 1, 1])
    np.testing.assert_array_equal(e01.payoffs[:, 1, 0, 0], [3, 2, 2])
    np.testing.assert_array_equal(e01.payoffs[:, 0, 1, 0], [4, 4, 0])
    np.testing.assert_array_equal(e01.payoffs[:, 0, 1, 1], [0, 0, 1])
    np.testing.assert_array_equal(e01.payoffs[:, 1, 1, 1], [0, 0, 0])
    counts = parse_nfg(_COUNTS_WITH_OUTCOMES)
    np.testing.assert_array_equal(counts.payoffs[0], [[2, 0], [0, 1]])
    np.testing.assert_array_equal(counts.payoffs[1], [[0, 1], [1, 0]])


def test_nfg_strings_escape_only_quotes_as_gambit_does():
    """Gambit's lexer knows one escape, a backslash before a quote; other backslashes stand for
    themselves (they were doubled on writing), and a string cannot end with one."""
    title = 'a\\b "q" c\\"d'
    nfg = NormalFormGame(np.zeros((2, 1, 1)), title=title, player_names=("x\\y", "z"))
    text = format_nfg(nfg)
    assert 'NFG 1 R "a\\b \\"q\\" c\\\\"d"' in text
    back = parse_nfg(text)
    assert back.title == title and back.player_names == ("x\\y", "z")
    # What Gambit writes for a backslash is read as a backslash.
    assert parse_nfg('NFG 1 R "a\\b" { "P" } { 1 }\n0\n').title == "a\\b"
    with pytest.raises(ValueError, match="cannot end with a backslash"):
        format_nfg(NormalFormGame(np.zeros((2, 1, 1)), title="ends with \\"))
    with pytest.raises(TypeError, match="expected the text of a .nfg file"):
        parse_nfg(None)


@pytest.mark.parametrize(
    "text, message",
    [
        ("NFG 1", "unexpected end of file, expected 'R' or 'D'"),
        ("NFG 1 R title", "expected the game title (a quoted string) at offset 8, got 'title'"),
        ('NFG 1 R "t" { } { }', "the game has no players"),
        ('NFG 1 R "t" { "a" } { 2x }', "expected a strategy count at offset 22, got '2x'"),
        ('NFG 1 R "t" { "a" "b" } { 2 0 }', "every player needs at least one strategy, got (2, 0)"),
        ('NFG 1 R "t" { "a" } { { "x" "y" }', "unexpected end of file, expected '}' closing the strategy names"),
        ('NFG 1 R "t" { "a" "b" } { { "x" } { "y" } } "" { { "" 1 } } 1', "outcome 1 has 1 payoffs, expected 2"),
        (
            'NFG 1 R "t" { "a" "b" } { { "x" } { "y" } } "" { { "" 1 2 } } 1 1',
            "outcome form: expected 1 outcome numbers (one per contingency), got 2",
        ),
        (
            'NFG 1 R "t" { "a" "b" } { { "x" } { "y" } } "" { { "" 1 2 } } one',
            "expected an outcome number at offset 62, got 'one'",
        ),
    ],
)
def test_parse_errors_name_what_was_expected_and_where(text, message):
    """Each refusal of the parser, word for word (offsets are of the offending token)."""
    with pytest.raises(NFGFormatError) as info:
        parse_nfg(text)
    assert str(info.value) == message


def test_outcome_body_after_counted_strategies():
    """The body's form goes by its first token: an outcome list also follows strategy counts, and
    outcome 0 is the null outcome (all payoffs 0)."""
    g = parse_nfg('NFG 1 R "t" { "a" "b" } { 2 1 } { { "" 1/2 2 } { 3 4 } } 2 0')
    np.testing.assert_array_equal(g.payoffs, [[[3.0], [0.0]], [[4.0], [0.0]]])
    assert g.strategy_names == (("1", "2"), ("1",)) and g.comment == ""
