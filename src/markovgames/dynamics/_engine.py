r"""The compiled iteration loop: ``jit``-compiled chunks of iterations of any algorithm, for one run or a batch.

An algorithm is a learner and a value update ([`Algorithm`][markovgames.dynamics.Algorithm]); the value
update owns the loop body ([`run_chunk`][markovgames.dynamics.ValueUpdate.run_chunk]: a
``jax.lax.scan`` over iterations for the smooth update, a loop over stage segments for the
stage-based one) and calls the learner's pure functions inside it, so built-in and user-written
learners compile into the same loop. Every player runs its own learner on its own utility
vectors only (uncoupled): the loop computes ``u^t_i = [Q_i pi_{-i}]`` for each player and hands
player ``i``'s learner nothing else.

The loop emits, for every prefix ``T' = t``, the output policy's exact value and certified CE and
CCE bounds at ``s_1`` for every player (or records them per stage for the stage-based output
policy), and, optionally, the policies ``pi^t`` (the trajectory).

Layout: inside the compiled loop every array of a batch ends with the run axis ``R`` (the runs
side by side), so that XLA vectorises over the runs rather than over the tiny action axes
(benchmarks/README.md); `compiled_chunk` moves it there from the first axis, where its
callers keep it. A single run's arrays have no run axis: ``run_axes`` (0 or 1, static) tells
every function which layout it gets (`._tensor`).
"""

from __future__ import annotations

from functools import cache

import jax
import jax.numpy as jnp

from .._waiting import in_background
from ..learners import LearnerSpec
from ._interplay import SIMULTANEOUS, Interplay
from ._value_update import SEQUENTIAL_BUFFER_BYTES, GameArrays, ValueUpdate

__all__ = ["compiled_chunk", "compiled_certify", "compile_for", "run_work"]


def _runs_last(x):
    return jnp.moveaxis(x, 0, -1)


def _runs_first(x):
    return jnp.moveaxis(x, -1, 0)


@cache
def compiled_chunk(
    learner: LearnerSpec,
    value_update: ValueUpdate,
    optimistic: bool,
    record: bool,
    batched: bool,
    size: int,
    last_iterate: bool = False,
    interplay: Interplay = SIMULTANEOUS,
    average_how: str = "marked",
):
    """The jitted function ``(game, carry, sched, masks) -> (carry, outputs)`` running ``size`` iterations.

    ``sched`` is the value update's [`chunk_inputs`][markovgames.dynamics.ValueUpdate.chunk_inputs];
    ``masks`` is ``(last, average)``: with ``last_iterate``, ``last`` is the ``(size,)`` boolean
    mask of the iterations whose last iterate is evaluated, and with ``interplay.average``,
    ``average`` that of the iterations whose weighted average is (each ``None`` otherwise);
    ``average_how``: how the loop evaluates it ([`ValueUpdate.run_chunk`][markovgames.dynamics.ValueUpdate.run_chunk]).
    ``game`` and ``carry`` have one run's shapes, or with ``batched`` a leading run axis; so do
    the outputs (after the chunk axis). Inside, a batch's run axis is moved last (see the module
    docstring); ``sched`` is shared by all runs, so loop bounds are the same for all. Cached per
    learner and value update (not per algorithm name: the paper's names and their compositions
    share one compilation).
    """
    run_axes = 1 if batched else 0

    def fn(game, carry, sched, masks):
        if batched:
            game, carry = jax.tree_util.tree_map(_runs_last, (game, carry))
        last, average = masks
        carry, out = value_update.run_chunk(
            learner,
            optimistic,
            record,
            size,
            game,
            carry,
            sched,
            last if last_iterate else None,
            run_axes,
            interplay,
            average if interplay.average else None,
            average_how,
        )
        if batched:
            # The outputs are (chunk, ..., R): the run axis goes before the chunk axis.
            carry, out = jax.tree_util.tree_map(_runs_first, (carry, out))
        return carry, out

    return jax.jit(fn, donate_argnums=(1,), compiler_options=_compiler_options())


@cache
def compiled_certify(value_update: ValueUpdate, batched: bool, size: int):
    """The jitted ``(game, carry, sched, policies) -> (carry, outputs)``: the output policy's
    recursions over ``size`` given policies (per player ``(size, H, S, A_i)``, or with
    ``batched`` ``(B, size, H, S, A_i)``)."""
    run_axes = 1 if batched else 0

    def fn(game, carry, sched, policies):
        if batched:
            game, carry = jax.tree_util.tree_map(_runs_last, (game, carry))
            policies = jax.tree_util.tree_map(lambda p: jnp.moveaxis(p, 0, -1), policies)
        carry, out = value_update.certify_chunk(size, game, carry, sched, policies, run_axes)
        if batched:
            carry, out = jax.tree_util.tree_map(_runs_first, (carry, out))
        return carry, out

    return jax.jit(fn, donate_argnums=(1,), compiler_options=_compiler_options())


def compile_for(fn, batched: bool, game: GameArrays, *args, work: int):
    """``fn`` (a `compiled_chunk` or `compiled_certify`) lowered and compiled for these arguments,
    with the options the run's size calls for (`_size_options`; ``work``: `run_work`)."""
    lowered = fn.lower(game, *args)  # tracing: Python, here (a user's learner's code runs in this thread)
    # XLA's compilation, which can take seconds on a large game, waits interruptibly (`_waiting`).
    return in_background(lowered.compile, compiler_options=_size_options(game, batched, work))


def run_work(T: int, game: GameArrays) -> int:
    """A run's work for `_size_options`: its ``T`` times the entries of its game arrays (every run
    of a batch, whichever group of runs a compiled call gets)."""
    return T * sum(leaf.size for leaf in jax.tree_util.tree_leaves(game))


#: A run whose work (`run_work`) is at most this compiles with XLA's classic emitters.
#: The most expensive work per entry measured, smooth_ce on the medium game (3 players, 5 steps,
#: 20 states, 4 actions each: 147,200 entries at 382 us per iteration), does 10^8 in 0.26 s
#: with the default emitters and about 0.36 s with the classic ones: a tenth of a second lost
#: where compiling with them saves 0.35 s. Cheaper work per entry (the stage-based update, the
#: batches, smaller games) loses less in the same 10^8 (benchmarks/README.md, "Compile time").
SHORT_RUN_WORK = 10**8

#: A run whose work (`run_work`) is at most this is also compiled at LLVM's optimisation level 0
#: (`_QUICK_OPTIONS`): XLA's own passes (fusion, simplification) still run, only the machine code
#: is less optimised. On the CPU, a first call (compiling and running) then takes 1.1-1.8 times
#: less; compiling saves 0.1 s on the paper's game and 0.5-0.7 s on batches and three-player games,
#: and the loop runs 0.2-0.8 times as fast: at most 4e-8 s more per unit of work measured, about
#: 0.08 s at this threshold (benchmarks/README.md, "Quick runs compile at LLVM's level 0").
#: The numbers differ from level 2's in the last bits only, and the whole run's work picks the
#: level, as it picks the emitters, and how the loop evaluates the weighted average (`._loop`).
QUICK_RUN_WORK = 2 * 10**6


def _size_options(game: GameArrays, batched: bool, work: int) -> dict | None:
    """XLA options that depend on the run's size (``game``: one compiled call's arrays; ``work``:
    the whole run's, `run_work`).

    On the CPU, XLA's classic emitters compile the loop instead of its MLIR fusion emitters
    wherever that saves time in all. A loop body is dozens of small kernels, each compiled on its
    own; the classic emitters compile it in 0.55-0.9 times the time, and their loops run:

    * as fast for a single run of a tiny game (every array at most `SEQUENTIAL_BUFFER_BYTES`,
      as the paper's game): 0.97-1.00x, within this machine's spread; so at any ``T``;
    * slower for batches and larger games (a batch of two paper games 0.93-0.99x, of 64
      0.66-0.82x, the medium game 0.71-0.79x); so only for short runs (`SHORT_RUN_WORK`), where
      the compile time saved outweighs the slower loop.

    The two emitters' numbers can differ in the last bits. The whole run's work picks them, so
    every chunk and every group of runs of a run, and its resumption, use the same ones
    (benchmarks/README.md, "Compile time").

    Only float64 runs take the classic emitters: with them, smooth_cce's float32 values on the
    paper's game were 5.9e-5 from float64's at ``T = 10^4`` (2.0e-6 with the default ones),
    beyond the documented float32 tolerance (docs/numerics.md, "float32").
    """
    if jax.default_backend() != "cpu":
        return None
    leaves = jax.tree_util.tree_leaves(game)
    if any(jnp.issubdtype(leaf.dtype, jnp.floating) and leaf.dtype != jnp.float64 for leaf in leaves):
        return None
    tiny = not batched and all(leaf.size * leaf.dtype.itemsize <= SEQUENTIAL_BUFFER_BYTES for leaf in leaves)
    short = work <= SHORT_RUN_WORK
    if not (tiny or short):
        return None
    wanted = dict(_CLASSIC_EMITTER_OPTIONS, **(dict(_QUICK_OPTIONS) if work <= QUICK_RUN_WORK else {}))
    return {key: value for key, value in _cpu_options() if key in wanted} or None


def _compiler_options() -> dict:
    """Per-function XLA options (the caller's global flags stay untouched); each is probed first.

    On the CPU:

    * XLA's concurrency-optimised scheduler is off: it spreads the loop body's many tiny kernels
      over threads, which for this sequential loop costs CPU time and gains nothing.
    * XLA's YNNPACK fusions are off: they slowed every game size we measured, or made no
      difference (the numbers are in benchmarks/README.md, "Where the time goes").

    An option this jaxlib does not know is left out (other backends know neither).
    """
    if jax.default_backend() != "cpu":
        return {}
    return {key: value for key, value in _cpu_options() if key in dict(_LOOP_OPTIONS)}


_LOOP_OPTIONS = (("xla_cpu_enable_concurrency_optimized_scheduler", False), ("xla_cpu_experimental_ynn_fusion_type", ""))
_CLASSIC_EMITTER_OPTIONS = (("xla_cpu_use_fusion_emitters", False),)
_QUICK_OPTIONS = (("xla_backend_optimization_level", 0),)


def _cpu_options() -> tuple[tuple[str, object], ...]:
    """Every CPU option of the loops that this jaxlib knows, probed together (one small
    compilation per process where it knows them all)."""
    return _supported_options(_LOOP_OPTIONS + _CLASSIC_EMITTER_OPTIONS + _QUICK_OPTIONS)


@cache
def _supported_options(wanted: tuple[tuple[str, object], ...]) -> tuple[tuple[str, object], ...]:
    """The options of ``wanted`` this jaxlib accepts: all of them in one probe where it knows
    them all (one small compilation per process), else each probed alone."""
    if _accepts(dict(wanted)):
        return wanted
    return tuple((key, value) for key, value in wanted if _accepts({key: value}))


def _accepts(options: dict) -> bool:
    try:
        jax.jit(lambda x: x + 1, compiler_options=options).lower(1.0).compile()
    except Exception:  # noqa: BLE001 - any refusal means "not supported here"
        return False
    return True
