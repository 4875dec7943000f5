r"""The learner interface: three pure functions (optax style), and a named specification of them.

A [`Learner`][markovgames.learners.Learner] runs one independent copy per entry of its arrays other than the action
axis: per step ``h`` and state ``s`` of a Markov game, and per run of a batch in the compiled
loop. Its state is a pytree (a ``NamedTuple`` of arrays) that its functions return and never
mutate, so it jits, vectorises and is saved and resumed like any other array.

The compiled loop calls, at every iteration ``t`` and for every player ``i`` separately (each
learner sees only its own player's utilities: the dynamics are uncoupled):

1. ``strategy, state = play(state, prediction, eta, decay)``: the strategy :math:`\pi^t_i`,
   from the prediction :math:`m^t` of the next utility (the last utility :math:`u^{t-1}` for
   optimistic dynamics, ``0`` without optimism), the learning rate ``eta`` and the decay
   :math:`\rho_t` of the value update's weights (``markovgames.dynamics``: the smooth update
   weighs utility ``j`` by :math:`w_j` and feeds :math:`\rho_t = w_{t-1}/w_t`, so a learner that
   keeps its sums as :math:`G^t = \rho_t G^{t-1} + u^t` keeps :math:`\sum_{j\le t} w_j u^j / w_t`;
   the stage-based update feeds ``decay = 1``). ``play`` may record in the state what it needs
   of its own play (regret matching its strategy, the Blum–Mansour reduction its rows).
2. ``state = observe(state, utility, decay)``: the utility vector
   :math:`u^t_i = [Q^t_i \pi^t_{-i}]` of the strategy just played (with ``observe_takes_eta``,
   ``observe(state, utility, decay, eta)``: the learning rate of the iteration, for learners whose
   update of the state uses it, as a projected-gradient step does).

**Optional parts** (fields with defaults: a learner without them keeps the protocol above):

* ``propose(state, eta, decay) -> strategy``: a learner that makes **two utility queries per
  iteration** (extragradient, ExRM+). Before ``play``, the loop asks every player's learner for the
  strategy at which to query, evaluates each player's utility there against the others' proposed
  strategies, :math:`m^t_i = [Q^{t-1}_i \hat x^t_{-i}]`, and hands it to ``play`` as its
  ``prediction`` (extragradient's extrapolation); ``observe`` then gets the utility of the strategy
  played, as always. On a normal-form game (one state, ``H = 1``) this is the extragradient method
  exactly; in a Markov game the query uses the current estimate ``Q^{t-1}`` (the rewards at
  ``t = 1``, where there is no estimate yet).
* ``init_at(strategy, dtype) -> state``: the state whose first ``play`` with no prediction
  returns ``strategy`` (a given initial strategy, ``run(..., initial_strategy=...)``); a learner
  without it starts where ``init`` does (uniform for every built-in).

The stage-based update restarts every learner (``init``) at the start of each stage.

Shapes: ``init(shape, dtype)`` receives the shape of a strategy; strategies, predictions and
utilities all have that shape; the action axis is the learner's ``axis`` (negative; ``-1`` for a
single run, ``-2`` inside a batch, whose run axis is last) and every other axis holds an
independent copy. ``eta`` is a scalar or broadcasts against a strategy (one rate per run: shape
``(R,)`` against the trailing run axis); ``decay`` is a scalar.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import jax

from .._errors import MarkovGamesError
from .._usercode import UserCode

__all__ = ["Learner", "LearnerError", "LearnerSpec", "insert_axis", "runs_user_code"]


class LearnerError(MarkovGamesError, ValueError):
    """A user's learner does not keep the learner protocol: ``build`` raised, or ``init``, ``play`` or
    ``observe`` returned the wrong shapes, types or state structure, or raised (see
    ``markovgames.dynamics``: a learner that is not built in is checked when the loop starts, and
    every strategy it plays inside the loop)."""


class Learner(NamedTuple):
    """A no-regret learner as pure functions (see the module docstring for the protocol).

    ``init(shape, dtype) -> state``
        The state before iteration 1 (or at the start of a stage), for strategies of ``shape``.
    ``play(state, prediction, eta, decay) -> (strategy, state)``
        The strategy :math:`\\pi^t` (a probability vector along the action axis) and the state
        with whatever ``play`` records of its own play.
    ``observe(state, utility, decay) -> state``
        Feed the utility vector :math:`u^t` of the strategy the last ``play`` returned.
    ``propose(state, eta, decay) -> strategy`` (optional)
        The strategy at which a two-query learner's second utility query is made; its utility is
        ``play``'s prediction (see the module docstring).
    ``observe_takes_eta`` (default ``False``)
        Whether ``observe`` takes the learning rate: ``observe(state, utility, decay, eta)``.
    ``init_at(strategy, dtype) -> state`` (optional)
        The state before iteration 1 whose first ``play`` (with prediction 0) returns ``strategy``.
    """

    init: Callable[..., NamedTuple]
    play: Callable[..., tuple[jax.Array, NamedTuple]]
    observe: Callable[..., NamedTuple]
    propose: Callable[..., jax.Array] | None = None
    observe_takes_eta: bool = False
    init_at: Callable[..., NamedTuple] | None = None

    def observe_with(self, state, utility, decay, eta):
        """``observe`` called as this learner takes it (with ``eta`` where ``observe_takes_eta``)."""
        if self.observe_takes_eta:
            return self.observe(state, utility, decay, eta)
        return self.observe(state, utility, decay)


#: A learner's name: letters, digits, ``-``, ``_`` and ``.``, starting with a letter (it is
#: joined to a value update's name by ``+`` and must not look like a file reference ``path:NAME``).
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*")


@dataclass(frozen=True)
class LearnerSpec:
    """A named per-state learner: how to build its pure functions, and what it is.

    Built-in and user-written learners are the same kind of object; combine one with a value
    update in [`markovgames.dynamics.Algorithm`][markovgames.dynamics.Algorithm] to run it.

    Parameters
    ----------
    name : str
        Its name in listings and in ``LEARNER+UPDATE`` (letters, digits, ``-``, ``_``, ``.``).
    build : callable
        ``build(axis) -> Learner``: the learner whose action axis is ``axis`` (negative). It is
        called once per compilation, outside the compiled code.
    description : str
        One line for ``markovgames algorithms list``.
    citation : str
        Where the learner comes from.
    swap_regret : bool
        Whether it minimises swap regret (its dynamics aim at a correlated equilibrium, so the CE
        gap is its headline number) rather than external regret (coarse correlated equilibrium).
    """

    name: str
    build: Callable[[int], Learner]
    description: str = ""
    citation: str = ""
    swap_regret: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(f"learner name {self.name!r}: use letters, digits, '-', '_' and '.', starting with a letter")
        if not callable(self.build):
            raise TypeError(f"learner {self.name!r}: build must be callable build(axis) -> Learner, got {self.build!r}")
        if not isinstance(self.swap_regret, bool):
            raise TypeError(f"learner {self.name!r}: swap_regret must be True or False, got {self.swap_regret!r}")

    def learner(self, axis: int = -1) -> Learner:
        """The learner's functions for action axis ``axis``, checked to be a [`Learner`][markovgames.learners.Learner]."""
        with UserCode(lambda text: LearnerError(f"learner {self.name!r}: build(axis) raised {text}")):
            built = self.build(axis)
        if not isinstance(built, Learner):
            raise LearnerError(
                f"learner {self.name!r}: build(axis) must return a markovgames.learners.Learner "
                f"(init, play, observe), got {type(built).__name__}"
            )
        return _guarded(self.name, built) if runs_user_code(self) else built


def runs_user_code(spec: LearnerSpec) -> bool:
    """Whether ``spec`` runs a user's code: anything but a built-in learner or the Blum–Mansour
    reduction over one."""
    build: Callable = spec.build
    while isinstance(build, tuple(BUILD_WRAPPERS)):
        build = build.base  # type: ignore[attr-defined]  # every wrapper in BUILD_WRAPPERS has a base
    return not any(build is trusted for trusted in BUILTIN_BUILDS)


#: The ``build`` functions of the built-in learners (`._builtin` lists them as it defines them):
#: their code is markovgames's, not a user's.
BUILTIN_BUILDS: list[Callable] = []
#: The built-in builds that wrap another learner's build (its ``base``: the Blum–Mansour
#: reduction, `._swap` lists it): such a learner runs user code exactly when its base does.
BUILD_WRAPPERS: list[type] = []


def _guarded(name: str, built: Learner) -> Learner:
    """``built`` with each of its functions behind the guard on user code (`markovgames._usercode`):
    whatever the user's ``init``, ``play``, ``observe``, ``propose`` or ``init_at`` raises when it
    is traced (``sys.exit()`` included) is a `LearnerError` naming the learner, the function and
    the file and line. The functions run only while the loop is traced, so the guard costs nothing
    in the compiled loop."""

    def wrap(what: str, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def call(*args, **kwargs):
            with UserCode(lambda text: LearnerError(f"learner {name!r}: {what} raised {text}")):
                return fn(*args, **kwargs)

        return call

    return built._replace(
        init=wrap("init", built.init),
        play=wrap("play", built.play),
        observe=wrap("observe", built.observe),
        propose=None if built.propose is None else wrap("propose", built.propose),
        init_at=None if built.init_at is None else wrap("init_at", built.init_at),
    )


def insert_axis(shape: tuple[int, ...], axis: int, size: int) -> tuple[int, ...]:
    """``shape`` with a new axis of ``size`` just before the axis ``axis`` (negative) of ``shape``.

    For a learner that keeps a matrix per strategy (the Blum–Mansour reduction keeps one row per
    recommended action): ``insert_axis((S, A, R), -2, A) == (S, A, A, R)``.
    """
    if not isinstance(axis, int) or axis >= 0 or -axis > len(shape):
        raise ValueError(f"axis must be a negative axis of a shape of {len(shape)} dimensions, got {axis!r}")
    cut = len(shape) + axis
    return (*shape[:cut], size, *shape[cut:])
