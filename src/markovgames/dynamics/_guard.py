r"""The guard on a user's learner: its functions checked when first traced, its strategies in the loop.

A learner that is not one of the built-in ones (a user's file, package or entry point, or the
Blum–Mansour reduction over one) is user code running inside the compiled loop. What it returns
is checked where it is used, so that a wrong learner stops the run with a message naming it
rather than giving numbers that look like results:

* **When the loop starts** (`validate_learner`), ``init``, ``play`` and ``observe`` are traced
  once, abstractly (`jax.eval_shape`: no arithmetic), with the shapes and dtypes the loop will
  use. ``play`` must return a ``(strategy, state)`` pair whose strategy has the strategy's shape
  and dtype, and ``play`` and ``observe`` must return a state of ``init``'s structure, shapes and
  dtypes. An exception raised in the user's code is reported with its file and line.
* **At every iteration** (`strategy_violation`, inside the compiled loop), every strategy played
  at every step, state and run must be a probability vector: finite, every entry at least
  ``-tol`` and the entries summing to ``1`` within ``tol`` (`STRATEGY_TOLERANCE`: ``1e-9`` in
  float64, ``1e-4`` in float32). The first violation ends the run (`LearnerOutputError`) with the
  learner, player, iteration, step and state; nothing is kept as a result.

The built-in learners are checked by the test suite instead (their strategies stay on the
simplex: property tests), so their compiled loops carry no guard and their numbers and speed are
those of an unguarded run.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._usercode import UserCode
from ..learners import Learner, LearnerError, LearnerSpec
from ..learners._learner import runs_user_code

__all__ = [
    "LearnerError",
    "LearnerOutputError",
    "STRATEGY_TOLERANCE",
    "is_guarded",
    "guard_tolerance",
    "validate_learner",
    "check_learner",
    "strategy_violation",
    "ViolationWatch",
    "raise_violation",
]

#: How far from a probability vector a user learner's strategy may be: entries down to ``-tol``,
#: sums within ``tol`` of 1. Rounding in a softmax or a projection is far inside (1e-15 in
#: float64); an unnormalised strategy, a sign error or a NaN is far outside.
STRATEGY_TOLERANCE = {"float64": 1e-9, "float32": 1e-4}

_REASONS = ("is not finite", "has a negative entry", "does not sum to 1")


class LearnerOutputError(LearnerError):
    """A user's learner played something that is not a probability vector, inside the loop."""


def is_guarded(spec: LearnerSpec) -> bool:
    """Whether ``spec`` runs user code: anything but a built-in learner or the reduction over one."""
    return runs_user_code(spec)


def guard_tolerance(spec: LearnerSpec, dtype) -> float | None:
    """`STRATEGY_TOLERANCE` for ``dtype`` where ``spec`` is guarded, else ``None`` (no check compiled)."""
    return STRATEGY_TOLERANCE[jnp.dtype(dtype).name] if is_guarded(spec) else None


def _describe(tree) -> str:
    """``a float64 array of shape [2, 3]``, or a pytree's structure and its leaves' types and shapes."""
    if isinstance(tree, jax.ShapeDtypeStruct):
        return f"a {tree.dtype} array of shape {list(tree.shape)}"
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return f"{treedef} of " + (", ".join(f"{leaf.dtype}{list(leaf.shape)}" for leaf in leaves) or "no arrays")


def _same_structure(a, b) -> bool:
    leaves_a, def_a = jax.tree_util.tree_flatten(a)
    leaves_b, def_b = jax.tree_util.tree_flatten(b)
    return str(def_a) == str(def_b) and all(
        x.shape == y.shape and x.dtype == y.dtype for x, y in zip(leaves_a, leaves_b, strict=True)
    )


def _call(spec: LearnerSpec, what: str, fn, *args):
    # The user's functions are guarded themselves (`LearnerSpec.learner`); this guard catches what
    # tracing them raises outside them (an output JAX cannot trace, say).
    with UserCode(lambda text: LearnerError(f"learner {spec.name!r}: {what} raised {text}")):
        return jax.eval_shape(fn, *args)


def validate_learner(
    spec: LearnerSpec, learner: Learner, shapes: list[tuple[int, ...]], dtype, eta_shape: tuple[int, ...]
) -> None:
    """Trace ``learner``'s three functions abstractly with each player's strategy shape (see the
    module docstring); raise `LearnerError` naming the learner, the function and what was expected."""
    dtype = jnp.dtype(dtype)
    eta = jax.ShapeDtypeStruct(eta_shape, dtype)
    decay = jax.ShapeDtypeStruct((), dtype)
    for shape in dict.fromkeys(shapes):
        vector = jax.ShapeDtypeStruct(shape, dtype)
        state = _call(spec, "init", lambda shape=shape: learner.init(shape, dtype))
        if not jax.tree_util.tree_leaves(state) and state != ():
            raise LearnerError(f"learner {spec.name!r}: init must return a pytree of arrays, got {state!r}")
        played = _call(spec, "play", learner.play, state, vector, eta, decay)
        if not (isinstance(played, tuple) and len(played) == 2):
            raise LearnerError(f"learner {spec.name!r}: play must return a pair (strategy, state), got {_describe(played)}")
        strategy, after_play = played
        if not (isinstance(strategy, jax.ShapeDtypeStruct) and strategy.shape == shape and strategy.dtype == dtype):
            raise LearnerError(
                f"learner {spec.name!r}: play returned as its strategy {_describe(strategy)}; expected a {dtype} array of shape "
                f"{list(shape)}, the shape of init's argument (the action axis at {learner_axis(shape, eta_shape)})"
            )
        if not _same_structure(after_play, state):
            raise LearnerError(
                f"learner {spec.name!r}: play returned a state {_describe(after_play)}; expected init's {_describe(state)}"
            )
        if eta_shape:
            # A batch starts from init's state for one run with the run axis appended (a stage
            # restarts with init's state for the batch): the two must agree.
            single = _call(spec, "init", lambda shape=shape: learner.init(shape[:-1], dtype))
            runs = shape[-1]
            appended = jax.tree_util.tree_map(
                lambda leaf, runs=runs: jax.ShapeDtypeStruct((*leaf.shape, runs), leaf.dtype), single
            )
            if not _same_structure(appended, state):
                raise LearnerError(
                    f"learner {spec.name!r}: init's state for a batch of runs must be its state for one run with the run "
                    f"axis appended to every array (every array holds a copy per step, state and run); got "
                    f"{_describe(single)} for one run and {_describe(state)} for {shape[-1]} runs"
                )
        if learner.propose is not None:
            proposed = _call(spec, "propose", learner.propose, state, eta, decay)
            if not (isinstance(proposed, jax.ShapeDtypeStruct) and proposed.shape == shape and proposed.dtype == dtype):
                raise LearnerError(
                    f"learner {spec.name!r}: propose returned {_describe(proposed)}; expected a {dtype} array of shape "
                    f"{list(shape)}, a strategy"
                )
        observed = _call(spec, "observe", learner.observe_with, after_play, vector, decay, eta)
        if not _same_structure(observed, state):
            raise LearnerError(
                f"learner {spec.name!r}: observe returned a state {_describe(observed)}; expected init's {_describe(state)}"
            )


def check_init_at(spec: LearnerSpec, strategies, dtype) -> None:
    """``init_at`` of ``spec``'s learner traced with each initial strategy: it must return a state of
    ``init``'s structure, shapes and dtypes (a `LearnerError` naming the learner otherwise)."""
    learner = spec.learner(-1)
    init_at = learner.init_at
    if init_at is None:  # unreachable: run() checks for it first
        raise AssertionError(f"learner {spec.name!r} has no init_at")
    dtype = jnp.dtype(dtype)
    with jax.enable_x64(dtype == jnp.float64):
        for x in strategies:
            shape = tuple(np.shape(x))
            expected = _call(spec, "init", lambda shape=shape: learner.init(shape, dtype))
            strategy = jax.ShapeDtypeStruct(shape, dtype)
            got = _call(spec, "init_at", lambda s: init_at(s, dtype), strategy)
            if not _same_structure(got, expected):
                raise LearnerError(
                    f"learner {spec.name!r}: init_at returned a state {_describe(got)}; expected init's {_describe(expected)}"
                )


#: What `check_learner` has passed in this process: (learner, game shape, dtype, batch size).
_CHECKED: set[tuple] = set()


def check_learner(spec: LearnerSpec, shape_key, dtype, runs: int | None = None) -> None:
    """`validate_learner` for a game of ``shape_key`` ``(N, H, S, A)`` and one run, or a batch of
    ``runs`` (the shapes the compiled loop gives it); nothing for a built-in learner."""
    if not is_guarded(spec):
        return
    key: tuple | None = (spec, tuple(shape_key), np.dtype(dtype).name, runs)
    try:
        if key in _CHECKED:  # the command line checks before its lock, the loop again: trace once
            return
    except TypeError:  # a user's build that cannot be hashed: checked every time
        key = None
    _, horizon, num_states, num_actions = shape_key
    batch = () if runs is None else (runs,)
    shapes = [(horizon, num_states, a, *batch) for a in num_actions]
    # In the run's precision (JAX's 64-bit mode is scoped; a caller outside the loop has not set it).
    with jax.enable_x64(np.dtype(dtype) == np.float64):
        validate_learner(spec, spec.learner(learner_axis(shapes[0], batch)), shapes, dtype, batch)
    if key is not None:
        _CHECKED.add(key)


def learner_axis(shape: tuple[int, ...], eta_shape: tuple[int, ...]) -> int:
    """The action axis of a strategy of ``shape`` (negative): before the run axis in a batch."""
    return -1 - len(eta_shape)


def strategy_violation(policies, run_axes: int, tol: float) -> jax.Array:
    """`locate_violation` where a strategy is off the simplex, ``-1`` (cheaply) where none is.

    Every iteration computes one number per player, the largest of ``|sum_a x_a - 1|`` and
    ``-x_a`` over every copy, which is NaN or infinite where a strategy is not finite (both
    propagate through the sum and the maximum): a couple of reductions that fuse. Only an
    iteration whose number exceeds ``tol`` (or is NaN) runs `locate_violation`, behind a branch.
    """
    action = -1 - run_axes
    worst = jnp.stack([jnp.maximum(jnp.max(jnp.abs(jnp.sum(x, axis=action) - 1)), jnp.max(-x)) for x in policies]).max()
    return jax.lax.cond(worst <= tol, lambda: jnp.int32(-1), lambda: locate_violation(policies, run_axes, tol))


def locate_violation(policies, run_axes: int, tol: float) -> jax.Array:
    """Where the first strategy of ``policies`` (per player, ``(H, S, A_i, *runs)``) is not a
    probability vector: ``-1`` if none, else ``4 * flat + reason`` with ``flat`` the index of
    ``(player, h, s, *runs)`` in row-major order and ``reason`` an index into the reasons
    (not finite, negative, not summing to 1). Run only at an iteration `strategy_violation` flags."""
    action = -1 - run_axes
    code = jnp.int32(-1)
    for i in reversed(range(len(policies))):
        x = policies[i]
        reason = jnp.where(
            ~jnp.all(jnp.isfinite(x), axis=action),
            0,
            jnp.where(jnp.any(x < -tol, axis=action), 1, jnp.where(jnp.abs(jnp.sum(x, axis=action) - 1) <= tol, -1, 2)),
        )
        bad = reason >= 0
        first = jnp.argmax(bad.ravel()).astype(jnp.int32)
        flat = jnp.int32(i * bad.size) + first
        code = jnp.where(jnp.any(bad), 4 * flat + reason.ravel()[first].astype(jnp.int32), code)
    return code


class ViolationWatch:
    """A loop's record of its first strategy off the simplex, ``[row, code]`` (``[-1, -1]`` if none),
    for a loop that carries it through its iterations; with ``tol = None`` (a built-in learner)
    it records nothing and compiles to nothing."""

    def __init__(self, tol: float | None, run_axes: int) -> None:
        self.tol, self.run_axes = tol, run_axes

    def initial(self):
        return () if self.tol is None else jnp.full(2, -1, jnp.int32)

    def __call__(self, record, row, policies):
        """``record`` after the strategies ``policies`` were played at the chunk's ``row``."""
        if self.tol is None:
            return record
        code = strategy_violation(policies, self.run_axes, self.tol)
        return jnp.where((record[0] < 0) & (code >= 0), jnp.stack([row, code]).astype(jnp.int32), record)

    def output(self, record) -> dict:
        return {} if self.tol is None else {"violation": record}


def raise_violation(
    spec: LearnerSpec,
    iteration: int,
    code: int,
    copy_shape: tuple[int, ...],
    tol: float,
    run_offset: int = 0,
    num_players: int | None = None,
    stationary: bool = False,
) -> None:
    """Raise `LearnerOutputError` for the `strategy_violation` ``code`` at ``iteration``;
    ``copy_shape`` is ``(H, S, *runs)``, the runs counted from ``run_offset``; ``num_players``,
    for a two-query learner: the first ``num_players`` strategies checked are its proposals;
    ``stationary``: a discounted game's one layer, whose step is not named."""
    flat, reason = divmod(int(code), 4)
    player, rest = divmod(flat, int(np.prod(copy_shape)))
    # A two-query learner's proposals are checked before the strategies played (a proposal off the
    # simplex makes the prediction, and so the strategy, wrong too): "players" 0..N-1 are them.
    function = "play"
    if num_players is not None:
        function, player = ("propose", player) if player < num_players else ("play", player - num_players)
    index = np.unravel_index(rest, copy_shape)
    run = f", run {run_offset + int(index[2])}" if len(copy_shape) > 2 else ""
    step = "" if stationary else f"step {int(index[0])}, "
    raise LearnerOutputError(
        f"learner {spec.name!r}: {function} returned a strategy that {_REASONS[reason]} at iteration {iteration}, "
        f"player {player}, {step}state {int(index[1])}{run}; a strategy must be a probability "
        f"vector (finite, entries >= -{tol:g}, summing to 1 within {tol:g}); the run was stopped and nothing kept"
    )
