r"""Normal-form games: build them, lift them to one-step Markov games, Gambit ``.nfg`` files, Nashpy.

A normal-form game with ``N`` players is a payoff tensor ``payoffs[i, a_0, ..., a_{N-1}]``
(OpenSpiel's order, absolute player order). It is the Markov game with ``H = S = 1``
([`markovgames.games.normal_form_game`][markovgames.games.normal_form_game]): ``rewards[0, i, 0, a] = payoffs[i, a]`` and a single
self-loop state. markovgames needs payoffs in ``[0, 1]``, so `lift` rescales by one increasing
affine map common to all players,

.. math:: u^{01} = \text{scale}\cdot u + \text{offset}, \qquad \text{scale} > 0,

which changes no best response and no Nash, correlated or coarse correlated equilibrium (the
equilibrium *sets* are identical, strategy by strategy). Values map the same way, and gaps (differences of
values) are multiplied by ``scale``: a gap of ``g`` in the lifted game is ``g / scale`` in the
original units. With the default ``bounds="auto"``, payoffs already in ``[0, 1]`` are kept as they
are; otherwise ``lo = min payoffs``, ``hi = max payoffs``, ``scale = 1 / (hi - lo)``,
``offset = -lo / (hi - lo)``. The map is returned with the game (`LiftedGame`).

Gambit's strategic-game format (``.nfg``) is read in both of its forms and written in either:

* payoff form: ``NFG 1 R "title" { "P1" "P2" } { 3 2 }``, an optional comment string, then the
  payoffs of every contingency, all players' payoffs for one contingency after another, **player 1's
  strategy changing fastest** (so the contingency ``(a_0, ..., a_{N-1})`` is entry
  ``a_0 + A_0 a_1 + A_0 A_1 a_2 + ...``);
* outcome form: ``{ { "s1" "s2" } { "t1" "t2" } }`` (strategy names per player) instead of the
  counts, then a list of outcomes ``{ "name" u_1, u_2 }`` and one outcome number per contingency in
  the same order (1-based; 0 is the null outcome, all payoffs 0).

Numbers may be integers, decimals or rationals ``p/q`` (``R``; the older ``D`` header is accepted).
OpenSpiel's own ``pyspiel.load_nfg_game`` reads the payoff form that `format_nfg` writes
without a comment.

Nash equilibria of two-player games come from Nashpy (extra ``normalform``): a Nash equilibrium is a
correlated equilibrium, so its product is a CE with exact CE gap 0 (`product_policy`).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from .._errors import MarkovGamesError
from .._files import read_bounded
from ..games import DEFAULT_MAX_FILE_BYTES, DiscountedMarkovGame, MarkovGame, normal_form_game
from ..policies import IndexChainPolicy, MarkovCorrelatedPolicy
from ._deps import require
from ._rescale import AffineRescaling, Rescaled, fit_rescaling, to_unit_interval

__all__ = [
    "NormalFormGame",
    "LiftedGame",
    "NFGFormatError",
    "AffineRescaling",
    "payoffs_from_function",
    "bimatrix",
    "lift",
    "parse_nfg",
    "read_nfg",
    "format_nfg",
    "write_nfg",
    "product_policy",
    "product_index_policy",
    "joint_distribution",
    "nash_equilibria",
]


class NFGFormatError(MarkovGamesError, ValueError):
    """A ``.nfg`` text is malformed; the message names what was expected and where."""


# ---------------------------------------------------------------------------------------
# The game
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class NormalFormGame:
    """An ``N``-player normal-form game in its own (original) units.

    Parameters
    ----------
    payoffs : array_like, shape ``(N, A_0, ..., A_{N-1})``
        ``payoffs[i, a_0, ..., a_{N-1}]``, any finite reals.
    title : str
    player_names : sequence of str, optional
        Default ``"Player 1" .. "Player N"`` (Gambit's default).
    strategy_names : sequence of sequences of str, optional
        Default ``"1" .. "A_i"`` for every player.
    comment : str
    """

    payoffs: np.ndarray
    title: str = ""
    player_names: tuple[str, ...] = ()
    strategy_names: tuple[tuple[str, ...], ...] = ()
    comment: str = ""

    def __post_init__(self) -> None:
        arr = np.array(self.payoffs, dtype=np.float64, copy=True)
        if arr.ndim < 2 or arr.shape[0] != arr.ndim - 1:
            raise ValueError(f"payoffs: expected shape (N, A_0, ..., A_(N-1)) with N = number of action axes, got {arr.shape}")
        if any(a < 1 for a in arr.shape[1:]):
            raise ValueError(f"payoffs: every player needs at least one strategy, got {arr.shape[1:]}")
        if not np.all(np.isfinite(arr)):
            idx = tuple(int(k) for k in np.argwhere(~np.isfinite(arr))[0])
            raise ValueError(f"payoffs{list(idx)} is not finite")
        arr.setflags(write=False)
        n = arr.shape[0]
        players = tuple(str(p) for p in self.player_names) or tuple(f"Player {i + 1}" for i in range(n))
        if len(players) != n:
            raise ValueError(f"player_names: expected {n} names, got {len(players)}")
        strategies = tuple(tuple(str(s) for s in names) for names in self.strategy_names) or tuple(
            tuple(str(k + 1) for k in range(a)) for a in arr.shape[1:]
        )
        if tuple(len(s) for s in strategies) != arr.shape[1:]:
            raise ValueError(
                f"strategy_names: expected {arr.shape[1:]} names per player, got {tuple(len(s) for s in strategies)}"
            )
        object.__setattr__(self, "payoffs", arr)
        object.__setattr__(self, "player_names", players)
        object.__setattr__(self, "strategy_names", strategies)
        object.__setattr__(self, "title", str(self.title))
        object.__setattr__(self, "comment", str(self.comment))

    @property
    def num_players(self) -> int:
        return int(self.payoffs.shape[0])

    @property
    def num_actions(self) -> tuple[int, ...]:
        return tuple(int(a) for a in self.payoffs.shape[1:])

    def lift(self, *, bounds="auto", name: str | None = None) -> LiftedGame:
        """The one-step Markov game with payoffs rescaled to ``[0, 1]`` (see `lift`)."""
        return lift(self, bounds=bounds, name=name)

    def __repr__(self) -> str:
        return f"NormalFormGame(title={self.title!r}, N={self.num_players}, A={self.num_actions})"


@dataclass(frozen=True, eq=False)
class LiftedGame(Rescaled):
    """A normal-form game lifted to a one-step Markov game, with the rescaling that was applied.

    Attributes
    ----------
    game : MarkovGame
        ``H = S = 1``; ``game.rewards[0, i, 0, a] = rescaling.apply(normal_form.payoffs[i, a])``.
    rescaling : AffineRescaling
        ``u01 = scale * u + offset``; values map the same way, gaps by ``scale`` alone.
    normal_form : NormalFormGame
        The game in its original units.
    """

    game: MarkovGame
    rescaling: AffineRescaling
    normal_form: NormalFormGame

    def original_values(self, values01) -> np.ndarray:
        """Values (expected payoffs) of the lifted game in the original units."""
        return self.rescaling.original_value(values01, horizon=1)

    def original_gaps(self, gaps01) -> np.ndarray:
        """Gaps (CE/CCE/Nash deviation incentives) of the lifted game in the original units."""
        return self.rescaling.original_gap(gaps01)


def _as_normal_form(game_or_payoffs) -> NormalFormGame:
    if isinstance(game_or_payoffs, NormalFormGame):
        return game_or_payoffs
    return NormalFormGame(np.asarray(game_or_payoffs, dtype=np.float64))


def payoffs_from_function(num_actions: Sequence[int], payoff: Callable[[tuple[int, ...]], Sequence[float]]) -> np.ndarray:
    """The payoff tensor ``(N, A_0, ..., A_{N-1})`` of ``payoff(joint_action) -> (u_0, ..., u_{N-1})``.

    Example: a 3-player majority game, ``payoffs_from_function((2, 2, 2), lambda a: [float(a.count(x) >= 2) for x in a])``.
    """
    acts = tuple(int(a) for a in num_actions)
    n = len(acts)
    if n < 1 or any(a < 1 for a in acts):
        raise ValueError(f"num_actions: expected positive counts, got {num_actions!r}")
    out = np.empty((n, *acts))
    for joint in np.ndindex(*acts):
        vals = np.asarray(payoff(tuple(int(a) for a in joint)), dtype=np.float64)
        if vals.shape != (n,):
            raise ValueError(f"payoff{joint} returned shape {vals.shape}, expected ({n},)")
        out[(slice(None), *joint)] = vals
    return out


def bimatrix(row: ArrayLike, col: ArrayLike) -> np.ndarray:
    """Stack a row player's matrix ``A[a, b]`` and a column player's ``B[a, b]`` into ``(2, A_0, A_1)``."""
    a = np.asarray(row, dtype=np.float64)
    b = np.asarray(col, dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"bimatrix: expected two matrices of one shape, got {a.shape} and {b.shape}")
    return np.stack([a, b])


def lift(game_or_payoffs, *, bounds="auto", name: str | None = None, description: str | None = None) -> LiftedGame:
    """Lift a normal-form game to a one-step, one-state [`MarkovGame`][markovgames.MarkovGame].

    Parameters
    ----------
    game_or_payoffs : NormalFormGame or array_like ``(N, A_0, ..., A_{N-1})``
    bounds : ``"auto"`` (default), ``"minmax"``, ``None`` or ``(lo, hi)``
        The rescaling (see the module docstring and `fit_rescaling`):
        ``"auto"`` keeps payoffs already in ``[0, 1]`` and maps others by ``(u - min) / (max - min)``.
    name, description : str, optional
        Default: the game's title.

    Returns
    -------
    LiftedGame
        ``.game`` (the Markov game), ``.rescaling`` (``scale``, ``offset``), ``.normal_form``.
    """
    nfg = _as_normal_form(game_or_payoffs)
    rescaling = fit_rescaling(nfg.payoffs, bounds)
    unit = to_unit_interval(nfg.payoffs, rescaling)
    title = nfg.title or "normal_form"
    desc = (
        description
        if description is not None
        else (f"{nfg.title or 'normal-form game'} (payoffs rescaled by u01 = {rescaling.scale!r} * u + {rescaling.offset!r})")
    )
    game = normal_form_game(unit, name=name or title, description=desc, units=rescaling)
    return LiftedGame(game=game, rescaling=rescaling, normal_form=nfg)


# ---------------------------------------------------------------------------------------
# Policies of one-step games
# ---------------------------------------------------------------------------------------
def _strategies(strategies: Sequence[ArrayLike]) -> list[np.ndarray]:
    out = []
    for i, x in enumerate(strategies):
        v = np.asarray(x, dtype=np.float64)
        if v.ndim != 1 or v.size < 1 or np.any(v < -1e-12) or abs(v.sum() - 1.0) > 1e-9:
            raise ValueError(f"strategies[{i}] must be a probability vector, got {x!r}")
        v = np.clip(v, 0.0, None)
        out.append(v / v.sum())
    if not out:
        raise ValueError("need one mixed strategy per player")
    return out


def joint_distribution(strategies: Sequence[ArrayLike]) -> np.ndarray:
    """The product ``x_0 ⊗ ... ⊗ x_{N-1}`` of mixed strategies, shape ``(A_0, ..., A_{N-1})``."""
    joint = np.ones(())
    for v in _strategies(strategies):
        joint = np.multiply.outer(joint, v)
    return joint


def product_policy(strategies: Sequence[ArrayLike]) -> MarkovCorrelatedPolicy:
    """A mixed-strategy profile as a one-step [`MarkovCorrelatedPolicy`][markovgames.policies.MarkovCorrelatedPolicy].

    Its joint distribution (``H = S = 1``) is the product of the strategies, so its exact CE/CCE
    gaps are the Nash gaps (a Nash equilibrium has CE gap 0).
    """
    joint = joint_distribution(strategies)
    return MarkovCorrelatedPolicy(joint[None, None], joint.ndim)


def product_index_policy(strategies: Sequence[ArrayLike]) -> IndexChainPolicy:
    """The same profile as an [`IndexChainPolicy`][markovgames.policies.IndexChainPolicy] with ``T = 1`` (one index)."""
    return IndexChainPolicy("smooth", tuple(v[None, None, None, :] for v in _strategies(strategies)))


# ---------------------------------------------------------------------------------------
# Nashpy
# ---------------------------------------------------------------------------------------
def nash_equilibria(game_or_payoffs, method: str = "support_enumeration", **kwargs) -> list[tuple[np.ndarray, np.ndarray]]:
    """Nash equilibria of a two-player game computed by Nashpy (extra ``normalform``).

    Parameters
    ----------
    game_or_payoffs : NormalFormGame, LiftedGame, MarkovGame with ``H = S = 1``, DiscountedMarkovGame with ``S = 1``, or payoffs ``(2, A_0, A_1)``
        Equilibria do not depend on the affine rescaling, so either units give the same set.
    method : ``"support_enumeration"`` (default), ``"vertex_enumeration"`` or ``"lemke_howson"``
        (one equilibrium; ``initial_dropped_label`` defaults to 0), or ``"lemke_howson_enumeration"``.
    **kwargs
        Passed to the Nashpy method.

    Returns
    -------
    list of ``(x, y)``
        Mixed strategies of the row and the column player.
    """
    nash = require("nashpy", extra="normalform", feature="markovgames.bridges.normal_form.nash_equilibria")
    if isinstance(game_or_payoffs, LiftedGame):
        payoffs = game_or_payoffs.normal_form.payoffs
    elif isinstance(game_or_payoffs, MarkovGame):
        g = game_or_payoffs
        if g.horizon != 1:
            raise ValueError(f"nash_equilibria: expected a one-step game (H = 1), got H = {g.horizon}")
        payoffs = g.rewards[0, :, g.initial_state]
    elif isinstance(game_or_payoffs, DiscountedMarkovGame):
        # A one-state discounted game's stationary Nash equilibria are its stage game's, played
        # at every step (every value is the stage payoff divided by 1 - gamma).
        d = game_or_payoffs
        if d.num_states != 1:
            raise ValueError(f"nash_equilibria: expected a one-state discounted game, got S = {d.num_states}")
        payoffs = d.rewards[:, 0]
    else:
        payoffs = _as_normal_form(game_or_payoffs).payoffs
    if payoffs.shape[0] != 2:
        raise ValueError(f"nash_equilibria: Nashpy handles two-player games, this one has {payoffs.shape[0]} players")
    solver = nash.Game(payoffs[0], payoffs[1])
    if method == "support_enumeration":
        found = solver.support_enumeration(**kwargs)
    elif method == "vertex_enumeration":
        found = solver.vertex_enumeration(**kwargs)
    elif method == "lemke_howson":
        kwargs.setdefault("initial_dropped_label", 0)
        found = [solver.lemke_howson(**kwargs)]
    elif method == "lemke_howson_enumeration":
        found = solver.lemke_howson_enumeration(**kwargs)
    else:
        raise ValueError(
            "method must be 'support_enumeration', 'vertex_enumeration', 'lemke_howson' or "
            f"'lemke_howson_enumeration', got {method!r}"
        )
    out = []
    for x, y in found:
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        if np.all(np.isfinite(x)) and np.all(np.isfinite(y)):  # Lemke-Howson may return nan on degenerate games
            out.append((x, y))
    return out


# ---------------------------------------------------------------------------------------
# Gambit .nfg
# ---------------------------------------------------------------------------------------
# Gambit's lexer knows one escape, \" for a quote; any other backslash is itself.
_TOKEN = re.compile(r'\s*(?:(?P<quoted>"(?:[^"\\]|\\"|\\(?!"))*")|(?P<brace>[{}])|(?P<comma>,)|(?P<word>[^\s{}",]+))', re.S)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """``(kind, value, position)`` tokens; strings unescaped; commas dropped (Gambit separators)."""
    out = []
    pos = 0
    n = len(text)
    while pos < n:
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None:
            raise NFGFormatError(f"unterminated string or bad character at offset {pos}: {text[pos : pos + 20]!r}")
        kind = m.lastgroup
        if kind is None:  # unreachable: every alternative of _TOKEN is a named group
            raise NFGFormatError(f"unreadable token at offset {pos}: {text[pos : pos + 20]!r}")
        start = m.start(kind)
        if kind == "quoted":
            raw = m.group(kind)[1:-1]
            out.append(("string", raw.replace('\\"', '"'), start))
        elif kind == "brace":
            out.append((m.group(kind), m.group(kind), start))
        elif kind == "word":
            out.append(("word", m.group(kind), start))
        pos = m.end()
    return out


def _number(token: tuple[str, str, int]) -> float:
    kind, value, pos = token
    if kind != "word":
        raise NFGFormatError(f"expected a number at offset {pos}, got {value!r}")
    try:
        return float(Fraction(value))
    except (ValueError, ZeroDivisionError):
        raise NFGFormatError(f"expected a number (integer, decimal or p/q) at offset {pos}, got {value!r}") from None


def _contingencies(num_actions: tuple[int, ...]):
    """Joint actions in Gambit's order: player 1's (index 0's) strategy changing fastest."""
    for rev in np.ndindex(*reversed(num_actions)):
        yield tuple(int(a) for a in reversed(rev))


class _TokenStream:
    """The tokens of a ``.nfg`` text, read front to back (the parser's position in them)."""

    def __init__(self, tokens: list[tuple[str, str, int]]):
        self._tokens = tokens
        self._at = 0

    def next_is(self, kind: str) -> bool:
        """Whether a next token exists and is of ``kind``."""
        return self._at < len(self._tokens) and self._tokens[self._at][0] == kind

    def take(self, expected_kind: str | None = None, what: str = "") -> tuple[str, str, int]:
        """The next token, which must be of ``expected_kind`` when given (``what`` names it in errors)."""
        if self._at >= len(self._tokens):
            raise NFGFormatError(f"unexpected end of file, expected {what or expected_kind}")
        tok = self._tokens[self._at]
        if expected_kind is not None and tok[0] != expected_kind:
            raise NFGFormatError(f"expected {what or expected_kind} at offset {tok[2]}, got {tok[1]!r}")
        self._at += 1
        return tok

    def take_all(self, kind: str) -> list[tuple[str, str, int]]:
        """The run of tokens of ``kind`` that comes next (possibly none)."""
        out = []
        while self.next_is(kind):
            out.append(self.take())
        return out

    def rest(self) -> list[tuple[str, str, int]]:
        """All the remaining tokens (the body ends the file)."""
        out = self._tokens[self._at :]
        self._at = len(self._tokens)
        return out


class _Strategies(NamedTuple):
    """The strategies of a ``.nfg`` header: counts, and names in the outcome form (``()`` if counted)."""

    num_actions: tuple[int, ...]
    names: tuple[tuple[str, ...], ...]


def parse_nfg(text: str) -> NormalFormGame:
    """Parse the text of a Gambit ``.nfg`` file (payoff or outcome form) into a `NormalFormGame`.

    Raises
    ------
    NFGFormatError
        With the offset of the offending token.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_nfg: expected the text of a .nfg file (a str), got {type(text).__name__}")
    toks = _TokenStream(_tokens(text))
    title = _read_title(toks)
    players = _read_players(toks)
    strategies = _read_strategies(toks, len(players))
    comment = toks.take()[1] if toks.next_is("string") else ""
    # The body's form goes by its first token, as in Gambit's reader: '{' opens an outcome list,
    # a number starts a payoff list (whether the strategies were counted or named).
    if toks.next_is("{"):
        payoffs = _read_outcome_body(toks, strategies.num_actions)
    else:
        payoffs = _read_payoff_body(toks, strategies.num_actions)
    return NormalFormGame(payoffs, title=title, player_names=players, strategy_names=strategies.names, comment=comment)


def _read_title(toks: _TokenStream) -> str:
    """Read the header ``NFG 1 R`` (or ``D``) and return the game's title that follows it."""
    head = [toks.take("word", "'NFG'"), toks.take("word", "version 1"), toks.take("word", "'R' or 'D'")]
    if head[0][1] != "NFG" or head[1][1] != "1" or head[2][1] not in ("R", "D"):
        raise NFGFormatError(f"expected the header 'NFG 1 R', got {' '.join(t[1] for t in head)!r}")
    return toks.take("string", "the game title (a quoted string)")[1]


def _read_players(toks: _TokenStream) -> tuple[str, ...]:
    """Read ``{ "P1" "P2" ... }`` and return the player names (at least one)."""
    toks.take("{", "'{' opening the player names")
    players = tuple(tok[1] for tok in toks.take_all("string"))
    toks.take("}", "'}' closing the player names")
    if not players:
        raise NFGFormatError("the game has no players")
    return players


def _read_strategies(toks: _TokenStream, num_players: int) -> _Strategies:
    """Read the strategy counts ``{ 3 2 }`` or names ``{ { "s1" "s2" } ... }``: one positive count per player."""
    toks.take("{", "'{' opening the strategy counts or names")
    if toks.next_is("{"):
        names = _read_strategy_names(toks)
        num_actions = tuple(len(s) for s in names)
    else:
        names = ()
        num_actions = _read_strategy_counts(toks)
    if len(num_actions) != num_players:
        raise NFGFormatError(f"{num_players} players but {len(num_actions)} strategy counts")
    if any(a < 1 for a in num_actions):
        raise NFGFormatError(f"every player needs at least one strategy, got {num_actions}")
    return _Strategies(num_actions, names)


def _read_strategy_names(toks: _TokenStream) -> tuple[tuple[str, ...], ...]:
    """Read ``{ "s1" "s2" } ... }`` (the opening brace taken) and return each player's strategy names."""
    names = []
    while toks.next_is("{"):
        toks.take()
        player = tuple(tok[1] for tok in toks.take_all("string"))
        toks.take("}", "'}' closing a player's strategy names")
        names.append(player)
    toks.take("}", "'}' closing the strategy names")
    return tuple(names)


def _read_strategy_counts(toks: _TokenStream) -> tuple[int, ...]:
    """Read ``3 2 }`` (the opening brace taken) and return the counts."""
    counts = toks.take_all("word")
    toks.take("}", "'}' closing the strategy counts")
    num_actions = []
    for tok in counts:
        try:
            num_actions.append(int(tok[1]))
        except ValueError:
            raise NFGFormatError(f"expected a strategy count at offset {tok[2]}, got {tok[1]!r}") from None
    return tuple(num_actions)


def _read_payoff_body(toks: _TokenStream, num_actions: tuple[int, ...]) -> np.ndarray:
    """Read the payoff form's body, every player's payoff of every contingency in Gambit's order,
    and return the payoff tensor ``(N, A_0, ..., A_{N-1})``."""
    n = len(num_actions)
    size = math.prod(num_actions)
    payoffs = np.zeros((n, *num_actions))
    rest = toks.rest()
    if len(rest) != n * size:
        raise NFGFormatError(f"payoff form: expected {n} x {size} = {n * size} payoffs after the header, got {len(rest)} tokens")
    for c, joint in enumerate(_contingencies(num_actions)):
        for i in range(n):
            payoffs[(i, *joint)] = _number(rest[c * n + i])
    return payoffs


def _read_outcome_body(toks: _TokenStream, num_actions: tuple[int, ...]) -> np.ndarray:
    """Read the outcome form's body, the outcome list then one outcome number per contingency in
    Gambit's order, and return the payoff tensor ``(N, A_0, ..., A_{N-1})`` (outcome 0 pays 0)."""
    size = math.prod(num_actions)
    payoffs = np.zeros((len(num_actions), *num_actions))
    outcomes = _read_outcomes(toks, len(num_actions))
    rest = toks.rest()
    if len(rest) != size:
        raise NFGFormatError(f"outcome form: expected {size} outcome numbers (one per contingency), got {len(rest)}")
    for joint, tok in zip(_contingencies(num_actions), rest, strict=True):
        try:
            o = int(tok[1])
        except ValueError:
            raise NFGFormatError(f"expected an outcome number at offset {tok[2]}, got {tok[1]!r}") from None
        if not 0 <= o <= len(outcomes):
            raise NFGFormatError(f"outcome number {o} at offset {tok[2]} is not in 0..{len(outcomes)}")
        if o:
            payoffs[(slice(None), *joint)] = outcomes[o - 1]
    return payoffs


def _read_outcomes(toks: _TokenStream, num_players: int) -> list[list[float]]:
    """Read the outcome list ``{ { "name" u_1, u_2 } ... }`` and return each outcome's payoffs."""
    toks.take("{", "'{' opening the outcome list")
    outcomes: list[list[float]] = []
    while toks.next_is("{"):
        toks.take()
        if toks.next_is("string"):
            toks.take()  # outcome label
        vals = [_number(tok) for tok in toks.take_all("word")]
        toks.take("}", "'}' closing an outcome")
        if len(vals) != num_players:
            raise NFGFormatError(f"outcome {len(outcomes) + 1} has {len(vals)} payoffs, expected {num_players}")
        outcomes.append(vals)
    toks.take("}", "'}' closing the outcome list")
    return outcomes


def read_nfg(path: str | os.PathLike[str]) -> NormalFormGame:
    """Read a Gambit ``.nfg`` file (see `parse_nfg`); errors start with the path."""
    path = Path(path)
    try:
        # A regular file of bounded size, as every game file: a FIFO or a device would hang.
        text = read_bounded(path, DEFAULT_MAX_FILE_BYTES).decode("utf-8")
    except OSError as err:
        raise NFGFormatError(f"{path}: cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise NFGFormatError(f"{path}: not UTF-8 text (invalid byte at offset {err.start})") from None
    try:
        return parse_nfg(text)
    except NFGFormatError as err:
        raise NFGFormatError(f"{path}: {err}") from None


def _quote(s: str) -> str:
    """``s`` as a Gambit string: only a quote is escaped (``\\"``); a backslash stands for itself,
    so a string cannot end with one (Gambit would read its closing quote as escaped)."""
    s = str(s)
    if s.endswith("\\"):
        raise ValueError(f"{s!r}: a .nfg string cannot end with a backslash")
    return '"' + s.replace('"', '\\"') + '"'


def _fmt_number(x: float, exact: bool) -> str:
    x = float(x)
    if x == 0.0:
        return "0"
    if x.is_integer() and abs(x) < 2**53:
        return str(int(x))
    if exact:
        return str(Fraction(x))
    return repr(x)


def format_nfg(game_or_payoffs, *, form: str = "payoff", exact: bool = False) -> str:
    """The text of a Gambit ``.nfg`` file for a game.

    Parameters
    ----------
    game_or_payoffs : NormalFormGame or payoffs ``(N, A_0, ..., A_{N-1})``
    form : ``"payoff"`` (default; also what OpenSpiel's ``pyspiel.load_nfg_game`` reads when there is
        no comment) or ``"outcome"`` (strategy names kept, one named outcome per contingency).
    exact : bool
        Write non-integers as exact rationals ``p/q`` of their binary value instead of the shortest
        decimal that reads back to the same float (both round-trip exactly).
    """
    nfg = _as_normal_form(game_or_payoffs)
    if form not in ("payoff", "outcome"):
        raise ValueError(f"form must be 'payoff' or 'outcome', got {form!r}")
    n, acts = nfg.num_players, nfg.num_actions
    lines = [f"NFG 1 R {_quote(nfg.title)}", "{ " + " ".join(_quote(p) for p in nfg.player_names) + " }"]
    if form == "payoff":
        lines[-1] += " { " + " ".join(str(a) for a in acts) + " }"
        if nfg.comment:
            lines.append(_quote(nfg.comment))
        lines.append("")
        for joint in _contingencies(acts):
            lines.append(" ".join(_fmt_number(nfg.payoffs[(i, *joint)], exact) for i in range(n)))
    else:
        lines.append("")
        lines.append("{")
        for names in nfg.strategy_names:
            lines.append("{ " + " ".join(_quote(s) for s in names) + " }")
        lines.append("}")
        lines.append(_quote(nfg.comment))
        lines.append("")
        lines.append("{")
        order = list(_contingencies(acts))
        for joint in order:
            label = ",".join(nfg.strategy_names[i][a] for i, a in enumerate(joint))
            vals = ", ".join(_fmt_number(nfg.payoffs[(i, *joint)], exact) for i in range(n))
            lines.append("{ " + _quote(label) + " " + vals + " }")
        lines.append("}")
        lines.append(" ".join(str(c + 1) for c in range(len(order))))
    return "\n".join(lines) + "\n"


def write_nfg(path: str | os.PathLike[str], game_or_payoffs, *, form: str = "payoff", exact: bool = False) -> Path:
    """Write `format_nfg`'s text to ``path`` (UTF-8). Returns the path."""
    path = Path(path)
    path.write_text(format_nfg(game_or_payoffs, form=form, exact=exact), encoding="utf-8")
    return path
