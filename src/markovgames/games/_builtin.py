"""Built-in games: the paper's game, classic normal-form games, a repeated game, random games.

Shape convention as in `markovgames.games._model`: ``rewards[h, i, s, a_0, ..., a_{N-1}]``
and ``transitions[h, s, a_0, ..., a_{N-1}, s']``, absolute player order.

* A normal-form game with payoff tensor ``u[i, a_0, ..., a_{N-1}]`` in ``[0, 1]`` is the Markov
  game with ``H = S = 1``: ``rewards[0, i, 0, a] = u[i, a]`` and ``transitions[0, 0, a, 0] = 1``.
  Textbook payoffs outside ``[0, 1]`` are mapped by an increasing affine map
  ``x -> (x - lo) / (hi - lo)`` with one ``(lo, hi)`` per game (common to all players), which
  preserves best responses and all (coarse) correlated equilibria; each game's docstring gives
  its map.
* A repeated game plays a stage game ``H`` times; its state is the previous joint action.
* A random game draws rewards i.i.d. and each transition row from a symmetric Dirichlet law.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._suggest import did_you_mean
from ._io._base import _MAX_PLAYERS
from ._model import MAX_GAME_ENTRIES, GameValidationError, MarkovGame, SparseTransitions
from ._units import AffineRescaling

__all__ = [
    "paper_game",
    "normal_form_game",
    "prisoners_dilemma",
    "matching_pennies",
    "battle_of_the_sexes",
    "chicken",
    "shapley",
    "repeated_game",
    "repeated_prisoners_dilemma",
    "random_game",
    "REWARD_DISTRIBUTIONS",
    "BUILTIN_GAMES",
    "UnknownGameError",
    "get_builtin",
]


class UnknownGameError(GameValidationError, LookupError):
    """A game name is neither a built-in game nor a readable game file."""


# ---------------------------------------------------------------------------------------
# The paper's game
# ---------------------------------------------------------------------------------------
def paper_game() -> MarkovGame:
    """The game of the paper's simulations (Mao et al. 2024, appendix "Simulation Details").

    ``N = 2`` players, ``S = 2`` states, ``H = 2`` steps, two actions each; initial state 0
    (the paper's ``s_0``). Player 0 (the paper's player 1) picks the row ``a_0, a_1``,
    player 1 the column ``b_0, b_1``; both tables are indexed ``[a, b]``:

    ========  ==========================  ==========================
    state     player 0                    player 1
    ========  ==========================  ==========================
    ``s_0``   ``[[0.8, 0.2], [0.0, 1.0]]``  ``[[0.2, 1.0], [0.5, 0.0]]``
    ``s_1``   ``[[1.0, 0.2], [0.5, 0.8]]``  ``[[0.5, 1.0], [1.0, 0.2]]``
    ========  ==========================  ==========================

    Transitions, in both states: matching actions ``(a_0, b_0)``, ``(a_1, b_1)`` stay with
    probability 0.8 and switch with 0.2; opposite actions stay with 0.2 and switch with 0.8.
    The rewards and transitions are the same at both steps.

    Returns
    -------
    MarkovGame
        Named ``"paper"``.
    """
    rewards_step = np.array(
        [
            # player 0: [state][a][b]
            [[[0.8, 0.2], [0.0, 1.0]], [[1.0, 0.2], [0.5, 0.8]]],
            # player 1: [state][a][b]
            [[[0.2, 1.0], [0.5, 0.0]], [[0.5, 1.0], [1.0, 0.2]]],
        ]
    )
    transitions_step = np.empty((2, 2, 2, 2))
    for s in range(2):
        for a in range(2):
            for b in range(2):
                # Literal pairs, not 1 - 0.8 (= 0.19999999999999996), so files show 0.2.
                stay, switch = (0.8, 0.2) if a == b else (0.2, 0.8)
                transitions_step[s, a, b, s] = stay
                transitions_step[s, a, b, 1 - s] = switch
    horizon = 2
    return MarkovGame(
        rewards=np.broadcast_to(rewards_step, (horizon, *rewards_step.shape)),
        transitions=np.broadcast_to(transitions_step, (horizon, *transitions_step.shape)),
        initial_state=0,
        name="paper",
        description="The paper's 2-player, 2-state, 2-step game (Mao et al. 2024, Simulation Details)",
    )


# ---------------------------------------------------------------------------------------
# Normal-form games
# ---------------------------------------------------------------------------------------
def normal_form_game(
    payoffs: ArrayLike, name: str = "normal_form", description: str = "", *, units: AffineRescaling | None = None
) -> MarkovGame:
    """Lift a normal-form game to a one-step, one-state Markov game.

    Parameters
    ----------
    payoffs : array_like, shape ``(N, A_0, ..., A_{N-1})``
        ``payoffs[i, a_0, ..., a_{N-1}]`` is player ``i``'s payoff (OpenSpiel's order), in
        ``[0, 1]``.
    name, description : str

    Returns
    -------
    MarkovGame
        ``H = S = 1``: ``rewards[0, i, 0, a] = payoffs[i, a]``, ``transitions[0, 0, a, 0] = 1``.

    Raises
    ------
    GameValidationError
        Wrong shape, or an entry not finite or outside ``[0, 1]`` (the message names
        ``payoffs`` and the index).
    """
    arr = np.asarray(payoffs)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise GameValidationError(f"payoffs: expected a numeric array, got dtype {arr.dtype}")
    arr = np.array(arr, dtype=np.float64)
    if arr.ndim < 2 or arr.shape[0] != arr.ndim - 1:
        raise GameValidationError(
            f"payoffs: expected shape (N, A_0, ..., A_(N-1)) with N = number of action axes, got shape {arr.shape}"
        )
    # Check here so the message uses the caller's indices, not the lifted rewards' ones.
    bad = ~np.isfinite(arr) | (arr < 0.0) | (arr > 1.0)
    if bad.any():
        idx = tuple(int(k) for k in np.argwhere(bad)[0])
        raise GameValidationError(f"payoffs{list(idx)} = {float(arr[idx])!r} is not in [0, 1]")
    num_actions = arr.shape[1:]
    return MarkovGame(
        rewards=arr[None, :, None, ...],
        transitions=np.ones((1, 1, *num_actions, 1)),
        initial_state=0,
        name=name,
        description=description,
        units=units,
    )


def _bimatrix(row: ArrayLike, col: ArrayLike, lo: float, hi: float) -> np.ndarray:
    """Stack two textbook payoff matrices and rescale ``x -> (x - lo) / (hi - lo)``."""
    payoffs = np.stack([np.asarray(row, dtype=np.float64), np.asarray(col, dtype=np.float64)])
    return (payoffs - lo) / (hi - lo)


def _textbook_units(lo: float, hi: float) -> AffineRescaling:
    """The map of `_bimatrix`'s rescaling, ``r01 = (x - lo) / (hi - lo)``, kept as the game's units."""
    return AffineRescaling(1.0 / (hi - lo), 0.0 - lo / (hi - lo) + 0.0)


def prisoners_dilemma() -> MarkovGame:
    """The prisoner's dilemma, actions ``0 = cooperate``, ``1 = defect``.

    Textbook payoffs ``T = 5 > R = 3 > P = 1 > S = 0`` (row, column):
    ``(C, C) = (3, 3)``, ``(C, D) = (0, 5)``, ``(D, C) = (5, 0)``, ``(D, D) = (1, 1)``,
    rescaled by ``x -> x / 5``: ``(0.6, 0.6)``, ``(0, 1)``, ``(1, 0)``, ``(0.2, 0.2)``.
    Defection strictly dominates; the unique equilibrium (Nash, CE and CCE) is ``(D, D)``.
    """
    return normal_form_game(
        _bimatrix([[3, 0], [5, 1]], [[3, 5], [0, 1]], lo=0.0, hi=5.0),
        units=_textbook_units(0.0, 5.0),
        name="prisoners_dilemma",
        description="Prisoner's dilemma (T,R,P,S) = (5,3,1,0) rescaled by x/5; actions cooperate, defect",
    )


def matching_pennies() -> MarkovGame:
    """Matching pennies, actions ``0 = heads``, ``1 = tails``; player 0 wants to match.

    Textbook payoffs ``+1`` / ``-1`` (zero-sum), rescaled by ``x -> (x + 1) / 2``: the matcher
    gets 1 on a match and 0 otherwise, the other player the complement. The unique
    equilibrium (Nash, CE and CCE) is uniform play by both.
    """
    match = np.array([[1.0, -1.0], [-1.0, 1.0]])
    return normal_form_game(
        _bimatrix(match, -match, lo=-1.0, hi=1.0),
        units=_textbook_units(-1.0, 1.0),
        name="matching_pennies",
        description="Matching pennies (+1/-1 rescaled by (x+1)/2); player 0 wins on a match",
    )


def battle_of_the_sexes() -> MarkovGame:
    """Battle of the sexes, actions ``0 = opera``, ``1 = football``.

    Textbook payoffs: ``(O, O) = (2, 1)``, ``(F, F) = (1, 2)``, mismatch ``(0, 0)``, rescaled by
    ``x -> x / 2``: ``(1, 0.5)``, ``(0.5, 1)``, ``(0, 0)``. Two pure equilibria and a mixed one.
    """
    return normal_form_game(
        _bimatrix([[2, 0], [0, 1]], [[1, 0], [0, 2]], lo=0.0, hi=2.0),
        units=_textbook_units(0.0, 2.0),
        name="battle_of_the_sexes",
        description="Battle of the sexes (2,1)/(1,2)/(0,0) rescaled by x/2; actions opera, football",
    )


def chicken() -> MarkovGame:
    """The game of chicken, actions ``0 = swerve``, ``1 = straight``.

    Textbook payoffs: ``(swerve, swerve) = (0, 0)``, ``(swerve, straight) = (-1, 1)``,
    ``(straight, swerve) = (1, -1)``, ``(straight, straight) = (-10, -10)``, rescaled by
    ``x -> (x + 10) / 11``: ``(10/11, 10/11)``, ``(9/11, 1)``, ``(1, 9/11)``, ``(0, 0)``.
    Two pure equilibria (one swerves), a mixed one, and correlated equilibria outside their
    convex hull.
    """
    return normal_form_game(
        _bimatrix([[0, -1], [1, -10]], [[0, 1], [-1, -10]], lo=-10.0, hi=1.0),
        units=_textbook_units(-10.0, 1.0),
        name="chicken",
        description="Chicken 0/-1/+1/-10 rescaled by (x+10)/11; actions swerve, straight",
    )


def shapley() -> MarkovGame:
    """Shapley's (1964) 3x3 game, on which fictitious play cycles.

    Row payoffs ``A = I`` (the identity), column payoffs ``B[a, b] = 1`` iff ``b = a + 1 mod 3``
    (a standard presentation; payoffs already in ``{0, 1}``, so the rescaling is the identity).
    The row player wants to match the column, the column player to be one step ahead. No
    pure equilibrium; the unique Nash equilibrium is uniform play by both.
    """
    row = np.eye(3)
    col = np.roll(np.eye(3), 1, axis=1)
    return normal_form_game(
        _bimatrix(row, col, lo=0.0, hi=1.0),
        units=_textbook_units(0.0, 1.0),
        name="shapley",
        description="Shapley's 3x3 game: row wins by matching, column by being one ahead (mod 3)",
    )


# ---------------------------------------------------------------------------------------
# Repeated games
# ---------------------------------------------------------------------------------------
def repeated_game(
    stage_game_payoffs: ArrayLike,
    horizon: int,
    name: str = "repeated",
    description: str = "",
    *,
    state_bonus: ArrayLike | None = None,
) -> MarkovGame:
    """A normal-form stage game played ``horizon`` times; the state is the last joint action.

    States: ``0`` is "start" (the initial state) and ``1 + k`` means "the previous joint action
    was the ``k``-th in row-major (C) order of ``(a_0, ..., a_{N-1})``", so
    ``S = 1 + prod_i A_i``. Transitions are deterministic: from any state, the joint action
    ``a`` leads to state ``1 + ravel(a)``. Rewards at every step and state are the stage
    payoffs, plus ``state_bonus`` if given.

    Parameters
    ----------
    stage_game_payoffs : array_like, shape ``(N, A_0, ..., A_{N-1})``
        The stage game ``u[i, a]`` in ``[0, 1]``.
    horizon : int
        ``H >= 1`` rounds.
    name, description : str
    state_bonus : array_like, shape ``(N, S, A_0, ..., A_{N-1})``, optional
        Added to the stage payoffs in state ``s`` at every step:
        ``rewards[h, i, s, a] = u[i, a] + state_bonus[i, s, a]``; the sum must stay in ``[0, 1]``.

    Returns
    -------
    MarkovGame
    """
    stage = normal_form_game(stage_game_payoffs, name="stage")
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
        raise GameValidationError(f"horizon: expected a positive integer, got {horizon!r}")
    num_actions = stage.num_actions
    num_players = stage.num_players
    num_joint = math.prod(num_actions)
    num_states = 1 + num_joint
    payoffs = stage.rewards[0, :, 0]  # (N, A...)
    step_rewards = np.broadcast_to(payoffs[:, None], (num_players, num_states, *num_actions)).copy()
    if state_bonus is not None:
        bonus = np.asarray(state_bonus, dtype=np.float64)
        if bonus.shape != step_rewards.shape:
            raise GameValidationError(
                f"state_bonus: expected shape (N, S, A_0, ..., A_(N-1)) = {step_rewards.shape}, got {bonus.shape}"
            )
        step_rewards = step_rewards + bonus
    step_transitions = np.zeros((num_states, num_joint, num_states))
    # Joint action k (row-major) always leads to state 1 + k, whatever the current state.
    step_transitions[:, np.arange(num_joint), 1 + np.arange(num_joint)] = 1.0
    step_transitions = step_transitions.reshape((num_states, *num_actions, num_states))
    return MarkovGame(
        rewards=np.broadcast_to(step_rewards, (int(horizon), *step_rewards.shape)),
        transitions=np.broadcast_to(step_transitions, (int(horizon), *step_transitions.shape)),
        initial_state=0,
        name=name,
        description=description,
    )


def repeated_prisoners_dilemma(horizon: int = 3, cooperation_bonus: float = 0.1) -> MarkovGame:
    """The prisoner's dilemma of [`prisoners_dilemma`][markovgames.games.prisoners_dilemma] repeated ``horizon`` times.

    States ``0 = start``, ``1 = (C, C)``, ``2 = (C, D)``, ``3 = (D, C)``, ``4 = (D, D)`` (the previous
    round's joint action, see [`repeated_game`][markovgames.games.repeated_game]). Rewards are the stage rewards, except
    that mutual cooperation right after mutual cooperation (state 1, action ``(C, C)``) pays
    each player ``0.6 + cooperation_bonus`` instead of 0.6: sustained cooperation is worth a
    little more, which makes the rewards depend on the state. With the default bonus 0.1 the
    stage game is still a prisoner's dilemma in every state (``0.7 < 1``).

    Parameters
    ----------
    horizon : int
        Number of rounds (default 3).
    cooperation_bonus : float
        In ``[0, 0.4]`` so that rewards stay in ``[0, 1]`` (default 0.1).

    Returns
    -------
    MarkovGame
        ``N = 2``, ``H = horizon``, ``S = 5``, two actions each.
    """
    if not 0.0 <= float(cooperation_bonus) <= 0.4:
        raise GameValidationError(f"cooperation_bonus = {cooperation_bonus!r} is outside [0, 0.4]")
    pd = prisoners_dilemma()
    payoffs = pd.rewards[0, :, 0]
    bonus = np.zeros((2, 5, 2, 2))
    bonus[:, 1, 0, 0] = float(cooperation_bonus)
    return repeated_game(
        payoffs,
        horizon,
        name="repeated_prisoners_dilemma",
        description=(
            f"Prisoner's dilemma repeated {horizon} times; state = previous joint action; "
            f"+{cooperation_bonus:g} for mutual cooperation after mutual cooperation"
        ),
        state_bonus=bonus,
    )


# ---------------------------------------------------------------------------------------
# Random games
# ---------------------------------------------------------------------------------------
#: Reward laws accepted by [`random_game`][markovgames.games.random_game].
REWARD_DISTRIBUTIONS = ("uniform", "bernoulli")


def _positive_int(value, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise GameValidationError(f"{field}: expected a positive integer, got {value!r}")
    return int(value)


def _as_rng(seed_or_rng) -> tuple[np.random.Generator, int | None]:
    if isinstance(seed_or_rng, np.random.Generator):
        return seed_or_rng, None
    if isinstance(seed_or_rng, bool) or not isinstance(seed_or_rng, (int, np.integer)) or seed_or_rng < 0:
        raise TypeError(f"seed_or_rng: expected a non-negative int seed or a numpy.random.Generator, got {seed_or_rng!r}")
    return np.random.default_rng(int(seed_or_rng)), int(seed_or_rng)


def random_game(
    num_players: int,
    horizon: int,
    num_states: int,
    num_actions: int | Sequence[int],
    *,
    seed_or_rng: int | np.random.Generator,
    reward_distribution: str = "uniform",
    transition_concentration: float = 1.0,
    initial_state: int = 0,
    name: str | None = None,
    max_entries: int = MAX_GAME_ENTRIES,
    num_successors: int | None = None,
    zero_sum: bool = False,
) -> MarkovGame:
    """A random Markov game.

    Every reward entry ``rewards[h, i, s, a]`` is i.i.d.: ``Uniform[0, 1]`` for
    ``reward_distribution="uniform"``, ``Bernoulli(1/2)`` on ``{0, 1}`` for ``"bernoulli"``
    (many ties). Every transition row ``transitions[h, s, a, :]`` is independently
    ``Dirichlet(c * ones(S))`` with ``c = transition_concentration``: ``c = 1`` is uniform on the
    simplex, small ``c`` gives nearly deterministic transitions, large ``c`` rows near uniform.
    The rewards are drawn first, then the transitions, in C order, so a seed fixes the game.

    With ``num_successors = K`` the game is sparse ([`SparseTransitions`][markovgames.games.SparseTransitions]): each row has
    ``K`` distinct successor states drawn uniformly without replacement, with probabilities
    ``Dirichlet(c * ones(K))``. This is how large games (``S = 10^4`` and more) are built.

    With ``zero_sum=True`` (two players only) the game is constant-sum: player 0's rewards are
    drawn as above, ``rewards[h, 0, s, a]`` i.i.d., and ``rewards[h, 1] = 1 - rewards[h, 0]``
    everywhere, so every reward stays in ``[0, 1]`` (for ``"uniform"`` both players' rewards are
    ``Uniform[0, 1]``, for ``"bernoulli"`` both are ``Bernoulli(1/2)``) and
    ``r_0 + r_1 = 1``. Subtracting the constant ``1/2`` from both gives a zero-sum game with the
    same best responses, equilibria and gaps; player 0's value plus player 1's is ``H`` under
    every policy. Only ``H x S x |A|`` reward entries are drawn (then the transitions), so a seed
    gives a different game than without ``zero_sum``.

    Parameters
    ----------
    num_players, horizon, num_states : int
        ``N, H, S >= 1``.
    num_actions : int or sequence of int
        ``A_i``; one int means the same for every player.
    seed_or_rng : int or numpy.random.Generator
        An int seeds ``numpy.random.default_rng``; a Generator is used (and advanced) as is.
    reward_distribution : {"uniform", "bernoulli"}
    transition_concentration : float
        ``c > 0``.
    initial_state : int
    name : str, optional
        Default ``"random"`` plus the sizes and the seed.
    max_entries : int
        Refuse sizes giving more entries than this, before drawing anything.
    num_successors : int, optional
        ``1 <= K <= S``: make a sparse game with ``K`` successors per row.
    zero_sum : bool
        Make a two-player constant-sum game, ``r_1 = 1 - r_0``.

    Returns
    -------
    MarkovGame
    """
    num_players = _positive_int(num_players, "num_players")
    if num_players > _MAX_PLAYERS:  # the limit of game files, which could not store the game
        raise GameValidationError(
            f"num_players = {num_players} exceeds the supported maximum of {_MAX_PLAYERS} "
            f"(rewards would need {num_players + 3} array axes)"
        )
    horizon = _positive_int(horizon, "horizon")
    num_states = _positive_int(num_states, "num_states")
    if isinstance(num_actions, (int, np.integer, float)) or not np.iterable(num_actions):
        # One number for every player; a bool, a fraction or None is refused by name.
        actions = (_positive_int(num_actions, "num_actions"),) * num_players
    else:
        actions = tuple(num_actions)
        if len(actions) != num_players:
            raise GameValidationError(f"num_actions: expected {num_players} entries (num_players), got {len(actions)}")
        actions = tuple(_positive_int(a, f"num_actions[{i}]") for i, a in enumerate(actions))
    if reward_distribution not in REWARD_DISTRIBUTIONS:
        raise GameValidationError(
            f"reward_distribution = {reward_distribution!r}{did_you_mean(str(reward_distribution), REWARD_DISTRIBUTIONS)} "
            f"is not one of {', '.join(REWARD_DISTRIBUTIONS)}"
        )
    if not isinstance(zero_sum, (bool, np.bool_)):
        raise GameValidationError(f"zero_sum: expected True or False, got {zero_sum!r}")
    if zero_sum and num_players != 2:
        raise GameValidationError(f"zero_sum: a zero-sum game has two players, got num_players = {num_players}")
    concentration = float(transition_concentration)
    if not (math.isfinite(concentration) and concentration > 0.0):
        raise GameValidationError(f"transition_concentration = {transition_concentration!r} must be positive and finite")
    reward_shape = (horizon, num_players, num_states, *actions)
    transition_shape = (horizon, num_states, *actions, num_states)
    if num_successors is not None:
        num_successors = _positive_int(num_successors, "num_successors")
        if num_successors > num_states:
            raise GameValidationError(f"num_successors = {num_successors} exceeds num_states = {num_states}")
        transition_shape = transition_shape[:-1] + (num_successors,)
    for field, shape in (("rewards", reward_shape), ("transitions", transition_shape)):
        if math.prod(shape) > max_entries:
            raise GameValidationError(
                f"{field}: the sizes give {math.prod(shape)} entries, more than max_entries = {max_entries} "
                "(raise max_entries to allow)"
            )
    rng, seed = _as_rng(seed_or_rng)

    # Constant-sum: draw player 0's rewards only; player 1's are their complement.
    drawn = (horizon, 1, *reward_shape[2:]) if zero_sum else reward_shape
    if reward_distribution == "uniform":
        rewards = rng.random(drawn)
    else:
        rewards = rng.integers(0, 2, size=drawn).astype(np.float64)
    if zero_sum:
        rewards = np.concatenate([rewards, 1.0 - rewards], axis=1)
    rows = rng.dirichlet(np.full(transition_shape[-1], concentration), size=transition_shape[:-1])
    # Renormalise: Dirichlet samples sum to 1 only up to rounding, and a tiny concentration
    # can underflow every coordinate of a row but one.
    rows = rows / rows.sum(axis=-1, keepdims=True)
    transitions = rows
    if num_successors is not None:
        rows = np.where(rows > 0.0, rows, 0.0)
        transitions = SparseTransitions(_distinct_states(rng, transition_shape, num_states), rows)

    if name is None:
        sizes = f"N={num_players},H={horizon},S={num_states},A={'x'.join(map(str, actions))}"
        if num_successors is not None:
            sizes += f",K={num_successors}"
        if zero_sum:
            sizes += ",zero-sum"
        name = f"random({sizes}" + (f",seed={seed})" if seed is not None else ")")
    description = (
        ("Random two-player constant-sum game (r_1 = 1 - r_0): player 0's " if zero_sum else "Random game: ")
        + f"rewards i.i.d. {'Uniform[0,1]' if reward_distribution == 'uniform' else 'Bernoulli(1/2)'}, "
        f"transition rows i.i.d. Dirichlet({concentration:g} * ones({transition_shape[-1]}))"
        + (f" over {num_successors} distinct uniformly drawn successor states" if num_successors is not None else "")
    )
    return MarkovGame(
        rewards=rewards,
        transitions=transitions,
        initial_state=initial_state,
        name=name,
        description=description,
        max_entries=max_entries,
    )


def _distinct_states(rng: np.random.Generator, shape: tuple[int, ...], num_states: int) -> np.ndarray:
    """``shape[:-1]`` rows of ``shape[-1]`` distinct states drawn uniformly from ``0..S-1``."""
    k = shape[-1]
    num_rows = math.prod(shape[:-1])
    if 4 * k > num_states:
        # Dense regime: the first k of a random permutation of each row.
        out = np.argsort(rng.random((num_rows, num_states)), axis=-1)[:, :k]
    else:
        # Sparse regime (k << S): redraw the duplicates of each row until none is left.
        out = rng.integers(0, num_states, size=(num_rows, k))
        while True:
            ordered = np.sort(out, axis=-1)
            dup_rows = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=-1))
            if dup_rows.size == 0:
                break
            sub = out[dup_rows]
            order = np.argsort(sub, axis=-1, kind="stable")
            sorted_sub = np.take_along_axis(sub, order, axis=-1)
            repeat = np.zeros_like(sub, dtype=bool)
            repeat[:, 1:] = sorted_sub[:, 1:] == sorted_sub[:, :-1]
            np.put_along_axis(sub, order, np.where(repeat, rng.integers(0, num_states, size=sub.shape), sorted_sub), axis=-1)
            out[dup_rows] = sub
    return out.reshape(shape).astype(np.int64)


# ---------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------
#: Built-in games by name; each value builds a fresh game.
BUILTIN_GAMES: dict[str, Callable[[], MarkovGame]] = {
    "paper": paper_game,
    "prisoners_dilemma": prisoners_dilemma,
    "matching_pennies": matching_pennies,
    "battle_of_the_sexes": battle_of_the_sexes,
    "chicken": chicken,
    "shapley": shapley,
    "repeated_prisoners_dilemma": repeated_prisoners_dilemma,
}


def get_builtin(name: str) -> MarkovGame:
    """Build the built-in game ``name``.

    Raises
    ------
    UnknownGameError
        ``name`` is not in `BUILTIN_GAMES`; the message lists the choices.
    """
    try:
        factory = BUILTIN_GAMES[name]
    except (KeyError, TypeError):
        raise UnknownGameError(
            f"unknown built-in game {name!r}{did_you_mean(str(name), BUILTIN_GAMES)}; choices: {', '.join(sorted(BUILTIN_GAMES))}"
        ) from None
    return factory()
