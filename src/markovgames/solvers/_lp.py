r"""Exact (coarse) correlated equilibria of a Markov game by backward induction and linear programming.

For ``h = H-1, ..., 0`` and every state ``s`` the solver forms the stage game

.. math::

    G_{h,i}(s, a) = r_{h,i}(s, a) + \sum_{s'} P_h(s' \mid s, a)\, V_{h+1,i}(s'),
    \qquad V_{H,i} \equiv 0,

and picks a joint distribution :math:`\sigma = \sigma_h(\cdot \mid s)` over joint actions
:math:`a = (a_0, \dots, a_{N-1})` by the linear program

.. math::

    \max_{\sigma}\; c(\sigma) \quad \text{s.t.}\quad \sigma \ge 0,\; \sum_a \sigma(a) = 1,

and, for a correlated equilibrium (``concept="ce"``), for every player ``i`` and every pair of
own actions :math:`a_i \ne b`,

.. math::

    \sum_{a_{-i}} \sigma(a_i, a_{-i}) \,[G_{h,i}(s, b, a_{-i}) - G_{h,i}(s, a_i, a_{-i})] \le 0,

or, for a coarse correlated equilibrium (``concept="cce"``), for every player ``i`` and every
own action ``b``,

.. math::

    \sum_{a} \sigma(a) \,[G_{h,i}(s, b, a_{-i}) - G_{h,i}(s, a)] \le 0 .

(Each CCE row is the sum over :math:`a_i` of the CE rows with the same ``b``, so every CE of the
stage game is a CCE of it.) Objectives :math:`c(\sigma)`:

``"welfare"``
    :math:`\sum_i \sum_a \sigma(a) G_{h,i}(s, a)` (utilitarian).
``"max-min"``
    :math:`\min_i \sum_a \sigma(a) G_{h,i}(s, a)` (egalitarian; an auxiliary variable ``t`` with
    ``t <= E_sigma G_i`` for every ``i``).
``"player:<i>"``
    :math:`\sum_a \sigma(a) G_{h,i}(s, a)`, player ``i``'s value.
``"feasibility"``
    ``0``: any (C)CE, whichever vertex HiGHS returns.

Then :math:`V_{h,i}(s) = \sum_a \sigma(a) G_{h,i}(s, a)`. The LP is always feasible (every stage
game has a Nash equilibrium, which is a CE), so a failed solve means numerical trouble and is
reported with its ``(h, s)``.

The result is a [`MarkovCorrelatedPolicy`][markovgames.policies.MarkovCorrelatedPolicy]. By the one-shot deviation
argument (induct on ``h`` with the policy's own continuation values) it admits no profitable
strategy modification ``phi_{h,i}^s: A_i -> A_i`` (CE) and no profitable deviation that ignores
the recommendations (CCE): its exact CE (resp. CCE) gap is 0. The optimisation is greedy per
stage: the returned policy maximises the objective of each stage game given the continuation
values already chosen, which is not in general the maximum over all Markov (C)CE of the whole
game.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from .._errors import MarkovGamesError
from .._waiting import in_background
from ..games import MarkovGame, require_finite_horizon
from ..policies import MarkovCorrelatedPolicy

__all__ = [
    "solve_equilibrium",
    "stage_game_incentives",
    "EquilibriumSolution",
    "StageIncentives",
    "SolverStatus",
    "EquilibriumSolverError",
    "MAX_JOINT_ACTIONS",
    "INCENTIVE_TOLERANCE",
    "DEFAULT_HIGHS_OPTIONS",
]

#: Default refusal limit on the number of joint actions (LP variables) of one stage LP.
MAX_JOINT_ACTIONS = 100_000

#: After each stage LP the returned distribution's worst incentive-constraint violation must be at
#: most this; a larger one is a solver failure, not a result.
INCENTIVE_TOLERANCE = 1e-6

#: HiGHS feasibility tolerances default to 1e-7 (absolute, on scaled rows). Stage-game payoffs are
#: in [0, H], so we tighten them to keep the returned incentive violations near round-off.
DEFAULT_HIGHS_OPTIONS: Mapping[str, Any] = {
    "primal_feasibility_tolerance": 1e-10,
    "dual_feasibility_tolerance": 1e-10,
}

Concept = Literal["ce", "cce"]

_LINPROG_STATUS = {
    0: "optimal",
    1: "iteration or time limit reached",
    2: "infeasible",
    3: "unbounded",
    4: "numerical difficulties",
}


class EquilibriumSolverError(MarkovGamesError, RuntimeError):
    """A stage LP failed or returned a distribution that violates its incentive constraints."""


@dataclass(frozen=True)
class SolverStatus:
    """How the stage LPs went.

    Attributes
    ----------
    solver : str
        The backend (``scipy.optimize.linprog(method='highs')``).
    num_lps : int
        ``H * S``, one LP per step and state.
    iterations : ndarray of int, shape ``(H, S)``
        HiGHS iterations of each LP.
    num_constraints : int
        Incentive rows of each LP (the same for every ``(h, s)``).
    max_incentive_violation : float
        The largest violation, over all ``(h, s)``, of the solved concept's own incentive
        constraints by the returned (clipped, renormalised) distribution.
    highs_options : dict
        The options passed to HiGHS.
    """

    solver: str
    num_lps: int
    iterations: np.ndarray
    num_constraints: int
    max_incentive_violation: float
    highs_options: dict = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class EquilibriumSolution:
    """A Markov (coarse) correlated equilibrium found by backward induction.

    Attributes
    ----------
    policy : MarkovCorrelatedPolicy
        ``joint[h, s, a_0, ..., a_{N-1}]``, the stage-game (C)CE chosen at each ``(h, s)``.
    values : ndarray, shape ``(H+1, N, S)``
        ``values[h, i, s]``: player ``i``'s expected return from step ``h`` in state ``s`` under
        ``policy``; ``values[H] = 0``.
    value : ndarray, shape ``(N,)``
        ``values[0, :, initial_state]``.
    concept : {"ce", "cce"}
    objective : str
        The normalised objective (``"welfare"``, ``"max-min"``, ``"feasibility"`` or ``"player:<i>"``).
    stage_objectives : ndarray, shape ``(H, S)``
        The attained objective of each stage LP, in the objective's own units (0 for
        ``"feasibility"``).
    solver_status : SolverStatus
    """

    policy: MarkovCorrelatedPolicy
    values: np.ndarray
    value: np.ndarray
    concept: str
    objective: str
    stage_objectives: np.ndarray
    solver_status: SolverStatus

    @property
    def welfare(self) -> float:
        """``sum_i value[i]``, the utilitarian welfare at the initial state."""
        return float(self.value.sum())


@dataclass(frozen=True, eq=False)
class StageIncentives:
    """Stage-game incentive constraints of a Markov correlated policy under its own continuation values.

    All arrays are indexed ``[h, i, s]`` and have shape ``(H, N, S)`` except ``values``.

    Attributes
    ----------
    values : ndarray, shape ``(H+1, N, S)``
        The policy's own values (``values[H] = 0``), which define the stage games.
    ce_violation : ndarray
        ``max(0, max_{a_i != b} sum_{a_-i} sigma(a_i, a_-i) [G_i(b, a_-i) - G_i(a_i, a_-i)])``: the
        worst CE incentive constraint of player ``i`` in the stage game at ``(h, s)``.
    cce_violation : ndarray
        ``max(0, max_b sum_a sigma(a) [G_i(b, a_-i) - G_i(a)])``: the worst CCE constraint.
    ce_gain : ndarray
        ``sum_{a_i} max_b max(0, ...)``: the gain of player ``i``'s best strategy modification
        ``phi: A_i -> A_i`` in that stage game alone (continuation values held fixed).
    cce_gain : ndarray
        ``max_b sum_a sigma(a) [G_i(b, a_-i) - G_i(a)]``, unclipped: negative when every
        uninformed deviation is strictly worse.
    """

    values: np.ndarray
    ce_violation: np.ndarray
    cce_violation: np.ndarray
    ce_gain: np.ndarray
    cce_gain: np.ndarray

    @property
    def max_ce_violation(self) -> float:
        """The worst CE incentive-constraint violation over every ``(h, i, s)``."""
        return float(self.ce_violation.max())

    @property
    def max_cce_violation(self) -> float:
        """The worst CCE incentive-constraint violation over every ``(h, i, s)``."""
        return float(self.cce_violation.max())


# ----------------------------------------------------------------------------- helpers
def check_objective(objective: str, num_players: int) -> str:
    """The canonical form of a [`solve_equilibrium`][markovgames.solvers.solve_equilibrium] objective for ``num_players`` players.

    Raises
    ------
    ValueError
        Naming ``objective`` and what is wrong with it.
    """
    return _parse_objective(objective, num_players)[0]


def _parse_objective(objective: str, num_players: int) -> tuple[str, int | None]:
    if not isinstance(objective, str):
        raise ValueError(f"objective: expected a string, got {objective!r}")
    key = objective.strip().lower()
    if key in ("welfare", "feasibility"):
        return key, None
    if key in ("max-min", "maxmin", "max_min"):
        return "max-min", None
    m = re.fullmatch(r"player:\s*(\d+)", key)
    if m:
        i = int(m.group(1))
        if not 0 <= i < num_players:
            raise ValueError(f"objective {objective!r}: player {i} is out of range 0..{num_players - 1}")
        return f"player:{i}", i
    raise ValueError(f"objective: expected 'welfare', 'max-min', 'feasibility' or 'player:<i>', got {objective!r}")


def _stage_games(game: MarkovGame, h: int, next_values: np.ndarray) -> np.ndarray:
    """``G[i, s, a] = r_h(s, a)_i + sum_s' P_h(s' | s, a) next_values[i, s']``, shape ``(N, S, A...)``."""
    # tensordot contracts s' and appends the player axis last: (S, A..., N).
    cont = np.tensordot(game.transitions[h], next_values, axes=([-1], [1]))
    return game.rewards[h] + np.moveaxis(cont, -1, 0)


def _incentive_gains(sigma: np.ndarray, stage: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """CE and CCE left-hand sides for all states at once.

    Parameters
    ----------
    sigma : shape ``(S, A_0, ..., A_{N-1})``
    stage : shape ``(N, S, A_0, ..., A_{N-1})``

    Returns
    -------
    ce : list over players of arrays ``(S, A_i, A_i)``, ``ce[i][s, a_i, b]``
    cce : list over players of arrays ``(S, A_i)``, ``cce[i][s, b]``
    """
    num_states = sigma.shape[0]
    ce: list[np.ndarray] = []
    cce: list[np.ndarray] = []
    for i in range(stage.shape[0]):
        a_i = sigma.shape[1 + i]
        sig = np.moveaxis(sigma, 1 + i, 1).reshape(num_states, a_i, -1)
        g = np.moveaxis(stage[i], 1 + i, 1).reshape(num_states, a_i, -1)
        # lhs[s, r, b] = sum_m sig[s, r, m] * (g[s, b, m] - g[s, r, m])
        lhs = np.einsum("srm,sbm->srb", sig, g) - np.einsum("srm,srm->sr", sig, g)[:, :, None]
        ce.append(lhs)
        cce.append(lhs.sum(axis=1))
    return ce, cce


def _incentive_matrix(stage: np.ndarray, concept: str) -> sp.csr_matrix:
    """Sparse incentive rows ``A_ub sigma <= 0`` of one stage game ``stage`` of shape ``(N, A...)``.

    Columns are joint actions in C order of ``(A_0, ..., A_{N-1})``.
    """
    acts = stage.shape[1:]
    num_joint = math.prod(acts)
    joint_index = np.arange(num_joint).reshape(acts)
    rows, cols, vals = [], [], []
    offset = 0
    for i, a_i in enumerate(acts):
        if a_i < 2:
            continue  # a player with one action has nothing to deviate to
        idx = np.moveaxis(joint_index, i, 0).reshape(a_i, -1)  # (A_i, M): joint index of (r, a_-i)
        g = np.moveaxis(stage[i], i, 0).reshape(a_i, -1)  # (A_i, M): G_i(r, a_-i)
        rec, dev = np.nonzero(~np.eye(a_i, dtype=bool))  # all pairs (a_i = rec, b = dev), rec != dev
        m = idx.shape[1]
        vals.append((g[dev] - g[rec]).ravel())
        cols.append(idx[rec].ravel())
        if concept == "ce":
            # One row per (rec, dev): only joint actions with a_i = rec enter it.
            rows.append(offset + np.repeat(np.arange(rec.size), m))
            offset += rec.size
        else:
            # One row per dev: the sum of the CE rows (rec, dev) over rec (rec == dev adds 0).
            rows.append(offset + np.repeat(dev, m))
            offset += a_i
    if not rows:
        return sp.csr_matrix((0, num_joint))
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(offset, num_joint))


def _solve_stage(stage: np.ndarray, concept: str, kind: str, player: int | None, options: dict, where: tuple[int, int]):
    """One stage LP; returns (sigma of shape (A...), attained objective, iterations, num_rows)."""
    num_players = stage.shape[0]
    acts = stage.shape[1:]
    num_joint = math.prod(acts)
    flat = stage.reshape(num_players, num_joint)
    a_ub = _incentive_matrix(stage, concept)
    num_rows = a_ub.shape[0]
    b_ub = np.zeros(num_rows)
    a_eq = sp.csr_matrix(np.ones((1, num_joint)))
    bounds: list[tuple[float | None, float | None]] | tuple[float, None] = (0.0, None)
    if kind == "welfare":
        c = -flat.sum(axis=0)  # linprog minimises
    elif kind == "feasibility":
        c = np.zeros(num_joint)
    elif kind == "max-min":
        # Variables (sigma, t): maximise t subject to t - E_sigma G_i <= 0 for every player i.
        c = np.zeros(num_joint + 1)
        c[-1] = -1.0
        a_ub = sp.vstack(
            [
                sp.hstack([a_ub, sp.csr_matrix((num_rows, 1))]),
                sp.hstack([sp.csr_matrix(-flat), sp.csr_matrix(np.ones((num_players, 1)))]),
            ],
            format="csr",
        )
        b_ub = np.zeros(num_rows + num_players)
        a_eq = sp.hstack([a_eq, sp.csr_matrix((1, 1))], format="csr")
        bounds = [(0.0, None)] * num_joint + [(None, None)]
    else:  # player:<i>
        c = -flat[player]
    # HiGHS runs in C++ for as long as a large stage LP takes: on a helper thread, awaited
    # interruptibly, so that Ctrl-C and SIGTERM are answered at once (`markovgames._waiting`).
    res = in_background(
        linprog,
        c,
        A_ub=a_ub if a_ub.shape[0] else None,
        b_ub=b_ub if a_ub.shape[0] else None,
        A_eq=a_eq,
        b_eq=np.ones(1),
        bounds=bounds,
        method="highs",
        options=options,
    )
    if res.status != 0 or res.x is None:
        h, s = where
        reason = _LINPROG_STATUS.get(res.status, "unknown status")
        hint = (
            " (the stage LP is always feasible since a Nash equilibrium exists: this is a numerical problem or a bug)"
            if res.status == 2
            else ""
        )
        raise EquilibriumSolverError(
            f"stage LP for the {concept.upper()} at (h={h}, s={s}) failed: {reason}{hint}; "
            f"HiGHS status {res.status}: {res.message}"
        )
    # Clip round-off negatives and renormalise so the values below are exactly those of the
    # distribution the returned policy will hold.
    sigma = np.clip(res.x[:num_joint], 0.0, None)
    total = sigma.sum()
    if not np.isfinite(total) or total <= 0.0:
        h, s = where
        raise EquilibriumSolverError(f"stage LP at (h={h}, s={s}) returned a non-distribution (sum {float(total)!r})")
    sigma /= total
    nit = int(getattr(res, "nit", 0) or 0)
    return sigma.reshape(acts), nit, num_rows


def _objective_value(values_hs: np.ndarray, kind: str, player: int | None) -> float:
    if kind == "welfare":
        return float(values_hs.sum())
    if kind == "max-min":
        return float(values_hs.min())
    if kind == "feasibility":
        return 0.0
    return float(values_hs[player])


def _check_policy(game: MarkovGame, policy: MarkovCorrelatedPolicy) -> None:
    expected = (game.horizon, game.num_states, *game.num_actions)
    if policy.num_players != game.num_players or policy.joint.shape != expected:
        raise ValueError(
            f"policy: joint shape {policy.joint.shape} with {policy.num_players} players does not match the "
            f"game's (H, S, A_0, ..., A_(N-1)) = {expected} with {game.num_players} players"
        )


# ----------------------------------------------------------------------------- public API
def solve_equilibrium(
    game: MarkovGame,
    concept: Concept,
    objective: str = "welfare",
    *,
    max_joint_actions: int = MAX_JOINT_ACTIONS,
    incentive_tolerance: float = INCENTIVE_TOLERANCE,
    highs_options: Mapping[str, Any] | None = None,
) -> EquilibriumSolution:
    """A Markov (coarse) correlated equilibrium by backward induction over stage-game LPs.

    Parameters
    ----------
    game : MarkovGame
    concept : {"ce", "cce"}
        Correlated or coarse correlated equilibrium of every stage game.
    objective : str, default "welfare"
        ``"welfare"`` (sum of the players' stage values), ``"max-min"`` (the smallest player's
        stage value), ``"player:<i>"`` (player ``i``'s stage value) or ``"feasibility"`` (any).
    max_joint_actions : int, default ``MAX_JOINT_ACTIONS`` (100 000)
        Refuse games whose number of joint actions ``prod_i A_i`` (the LP's variable count) exceeds
        this; raise it to allow larger LPs.
    incentive_tolerance : float, default 1e-6
        The returned distribution of every stage must satisfy its incentive constraints to within
        this, or [`EquilibriumSolverError`][markovgames.solvers.EquilibriumSolverError] is raised.
    highs_options : mapping, optional
        Options for ``scipy.optimize.linprog(method="highs")``, merged over
        ``DEFAULT_HIGHS_OPTIONS`` (e.g. ``{"time_limit": 60}``).

    Returns
    -------
    EquilibriumSolution

    Raises
    ------
    ValueError
        Unknown concept or objective, or too many joint actions.
    EquilibriumSolverError
        A stage LP failed (the message names ``(h, s)``).
    """
    require_finite_horizon(game, "solve_equilibrium")
    if not isinstance(game, MarkovGame):
        raise TypeError(f"game: expected a MarkovGame, got {type(game).__name__}")
    concept_key = str(concept).strip().lower()
    if concept_key not in ("ce", "cce"):
        raise ValueError(f"concept: expected 'ce' or 'cce', got {concept!r}")
    kind, player = _parse_objective(objective, game.num_players)
    num_joint = game.num_joint_actions
    if num_joint > max_joint_actions:
        raise ValueError(
            f"the game has {num_joint} joint actions (A = {game.num_actions}) per stage LP, more than "
            f"max_joint_actions = {max_joint_actions}; pass a larger max_joint_actions to allow it"
        )
    options = dict(DEFAULT_HIGHS_OPTIONS)
    if highs_options:
        options.update(highs_options)

    horizon, num_players, num_states = game.horizon, game.num_players, game.num_states
    values = np.zeros((horizon + 1, num_players, num_states))
    joint = np.zeros((horizon, num_states, *game.num_actions))
    stage_objectives = np.zeros((horizon, num_states))
    iterations = np.zeros((horizon, num_states), dtype=np.int64)
    num_rows = 0
    worst = 0.0
    for h in reversed(range(horizon)):
        stage = _stage_games(game, h, values[h + 1])  # (N, S, A...)
        for s in range(num_states):
            sigma, nit, num_rows = _solve_stage(stage[:, s], concept_key, kind, player, options, (h, s))
            joint[h, s] = sigma
            iterations[h, s] = nit
        # Expected stage payoffs of every player and state: sum_a sigma(a | s) G_i(s, a).
        axes = tuple(range(2, 2 + num_players))
        values[h] = (joint[h][None] * stage).sum(axis=axes)
        for s in range(num_states):
            stage_objectives[h, s] = _objective_value(values[h, :, s], kind, player)
        # Check the returned distributions rather than trusting the solver's tolerances.
        ce, cce = _incentive_gains(joint[h], stage)
        for i in range(num_players):
            lhs = ce[i].max(axis=(1, 2)) if concept_key == "ce" else cce[i].max(axis=1)
            bad = int(np.argmax(lhs))
            worst = max(worst, float(lhs[bad]))
            if lhs[bad] > incentive_tolerance:
                raise EquilibriumSolverError(
                    f"stage LP for the {concept_key.upper()} at (h={h}, s={bad}) returned a distribution "
                    f"violating player {i}'s incentive constraint by {lhs[bad]:.3g} > {incentive_tolerance:g}"
                )

    policy = MarkovCorrelatedPolicy(joint, num_players)
    values.setflags(write=False)
    value = values[0, :, game.initial_state].copy()
    value.setflags(write=False)
    stage_objectives.setflags(write=False)
    iterations.setflags(write=False)
    status = SolverStatus(
        solver="scipy.optimize.linprog(method='highs')",
        num_lps=horizon * num_states,
        iterations=iterations,
        num_constraints=num_rows,
        max_incentive_violation=max(worst, 0.0),
        highs_options=options,
    )
    return EquilibriumSolution(
        policy=policy,
        values=values,
        value=value,
        concept=concept_key,
        objective=kind,
        stage_objectives=stage_objectives,
        solver_status=status,
    )


def stage_game_incentives(game: MarkovGame, policy: MarkovCorrelatedPolicy) -> StageIncentives:
    """Evaluate ``policy`` and the CE/CCE incentive constraints of every stage game it induces.

    The stage game at ``(h, s)`` is ``G_h(s) = r_h(s, .) + P_h(s, .) V_{h+1}`` with ``V`` the
    policy's own values, so "every incentive constraint holds" (both violations 0) means the
    policy is a Markov CE (resp. CCE) by the one-shot deviation argument.

    Parameters
    ----------
    game : MarkovGame
    policy : MarkovCorrelatedPolicy
        Of shape ``(H, S, A_0, ..., A_{N-1})`` matching ``game``.

    Returns
    -------
    StageIncentives
    """
    _check_policy(game, policy)
    horizon, num_players, num_states = game.horizon, game.num_players, game.num_states
    values = np.zeros((horizon + 1, num_players, num_states))
    shape = (horizon, num_players, num_states)
    ce_violation, cce_violation = np.zeros(shape), np.zeros(shape)
    ce_gain, cce_gain = np.zeros(shape), np.zeros(shape)
    axes = tuple(range(2, 2 + num_players))
    for h in reversed(range(horizon)):
        stage = _stage_games(game, h, values[h + 1])
        sigma = policy.joint[h]
        values[h] = (sigma[None] * stage).sum(axis=axes)
        ce, cce = _incentive_gains(sigma, stage)
        for i in range(num_players):
            # The diagonal (b = a_i) is 0 up to round-off, so clipping at 0 drops nothing real.
            ce_violation[h, i] = np.clip(ce[i].max(axis=(1, 2)), 0.0, None)
            cce_violation[h, i] = np.clip(cce[i].max(axis=1), 0.0, None)
            ce_gain[h, i] = np.clip(ce[i].max(axis=2), 0.0, None).sum(axis=1)
            cce_gain[h, i] = cce[i].max(axis=1)
    for arr in (values, ce_violation, cce_violation, ce_gain, cce_gain):
        arr.setflags(write=False)
    return StageIncentives(values, ce_violation, cce_violation, ce_gain, cce_gain)
