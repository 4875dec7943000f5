r"""What a value update is to the engine, and the pieces every value update's loop shares.

A value update (Mao et al. 2024: smooth, Algorithm 1; stage-based, Algorithm 2) owns

* its **schedule**: the step sizes or stages, known before the run (NumPy, [`ValueUpdate.schedule`][markovgames.dynamics.ValueUpdate.schedule]);
* its **step**: the compiled iterations that play every player's learner, update the ``Q``
  estimates, and carry the output policy's value and certified bounds for every prefix
  ([`ValueUpdate.run_chunk`][markovgames.dynamics.ValueUpdate.run_chunk]), and the same recursions over a given policy sequence
  ([`ValueUpdate.certify_chunk`][markovgames.dynamics.ValueUpdate.certify_chunk]);
* its **output policy**: the index kernel of Algorithm 3 or 4 (`ValueUpdate.index_kernel`,
  see [`markovgames.policies.IndexKernel`][markovgames.policies.IndexKernel]).

The two built-in ones are `markovgames.dynamics.SMOOTH` and `markovgames.dynamics.STAGE`.

Layout: inside the compiled loop every array of a batch ends with the run axis ``R``; a single
run's arrays have none (``run_axes`` 0 or 1, static; `._tensor`). Loop states ("carries")
are built with one run's shapes and no run axis; the engine moves a batch's leading run axis
last around the compiled call (`._engine`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._schedules import average_weights
from .._small_axes import small_sum
from ..learners import Learner, LearnerSpec
from ._tensor import others_expectation
from ._transitions import SparseKernel

__all__ = [
    "device_zeros",
    "ValueUpdate",
    "GameArrays",
    "per_player_utilities",
    "at_initial_state",
    "at_distribution",
    "learner_for",
    "sequential_block",
    "blocked_scan",
    "segment_ends",
    "segmented_scan",
]

#: XLA's CPU runtime runs a loop body's kernels one after the other on the calling thread when
#: every buffer they touch has at most this many bytes (or the body has at most 8 kernels, or each
#: kernel depends on the one before); a body of dozens of kernels that touches a larger buffer (a
#: chunk's stacked outputs, a trajectory buffer) goes through its concurrent executor, which costs
#: about half a microsecond of scheduling per iteration: more than a whole paper-game iteration's
#: arithmetic (benchmarks/README.md). These thresholds are constants of XLA's ThunkExecutor.
SEQUENTIAL_BUFFER_BYTES = 512

#: The most iterations an inner loop of `blocked_scan` runs.
_MAX_BLOCK = 16


class GameArrays(NamedTuple):
    """The per-run inputs of the compiled loop (shapes of one run; a batch adds a run axis)."""

    rewards: jax.Array  # (H, N, S, A...)
    transitions: jax.Array | SparseKernel  # (H, S, A..., S), or sparse (H, S, A..., K) pairs
    initial_state: jax.Array  # () int
    eta: jax.Array  # (N,) learning-rate scale per player
    key: jax.Array | None = None  # (2,) uint32: the run's key, where the feedback draws samples (`._feedback`)
    # A discounted game (one stationary layer, ``H = 1`` above): its discount ``gamma`` () and
    # initial distribution ``rho`` (S,); ``None`` for a finite-horizon game.
    discount: jax.Array | None = None
    initial_distribution: jax.Array | None = None


def learner_for(spec: LearnerSpec, run_axes: int) -> Learner:
    """The learner of ``spec`` whose action axis comes before the ``run_axes`` trailing run axes."""
    return spec.learner(-1 - run_axes)


def per_player_utilities(q, policies, run_axes: int):
    """``u_i = [Q_i pi_{-i}]`` for every player over all ``(h, s)``: player ``i`` sees only its own."""
    utilities = tuple(others_expectation(q[:, i], policies, i, run_axes) for i in range(len(policies)))
    if run_axes:
        return utilities
    # In a single run, ``+ 0 * pi_i`` adds an exact zero (policies are finite; a NaN policy makes
    # its player's utilities NaN too) but makes u_i depend on player i's own policy. The learners'
    # new arrays depend on u_i, so XLA can then order their writes after player i's play has read
    # the old ones and update them in place; without it, it copies them in and out of every
    # iteration. On the paper game the stage-based loops ran 1.03-1.21x as fast with it; a batch
    # of 64 ran 0.90x, so batches go without (benchmarks/README.md, "Copies in the loop bodies").
    return tuple(u + 0.0 * p for u, p in zip(utilities, policies, strict=True))


def at_initial_state(x, initial_state, run_axes: int):
    """``x[:, s_1]`` of every run: ``(N, S, R) -> (N, R)``."""
    if not run_axes:
        return jax.lax.dynamic_index_in_dim(x, initial_state, axis=1, keepdims=False)
    if x.shape[-1] == 1:
        return jax.lax.dynamic_index_in_dim(x, initial_state[0], axis=1, keepdims=False)
    # A masked sum rather than a gather: elementwise over the runs, so it vectorises.
    mask = jnp.arange(x.shape[1])[:, None] == initial_state[None, :]  # (S, R)
    return small_sum(jnp.where(mask, x, 0.0), 1)


def at_distribution(x, distribution, run_axes: int):
    """``sum_s rho(s) x[:, s]`` of every run: ``(N, S[, R]) -> (N[, R])`` (``distribution``: ``(S[, R])``)."""
    return small_sum(x * distribution[None], 1)


def device_zeros(shape: tuple[int, ...], dtype) -> jax.Array:
    """Zeros on the device, made on the host and transferred: ``jnp.zeros`` outside a compiled
    function compiles a small program for every shape, which a short command notices."""
    return jax.device_put(np.zeros(shape, dtype))


def sequential_block(game: GameArrays, carry, per_iteration_bytes: int) -> int:
    """How many iterations an inner loop may stack its outputs for and stay on XLA's sequential
    path: 1 where that path is out of reach anyway (a game array or a loop-state array above
    `SEQUENTIAL_BUFFER_BYTES`, as on larger games and in batches), else the most iterations
    whose stacked outputs of ``per_iteration_bytes`` (the largest output's) fit in it."""
    leaves = jax.tree_util.tree_leaves((game, carry))
    if any(leaf.size * leaf.dtype.itemsize > SEQUENTIAL_BUFFER_BYTES for leaf in leaves):
        return 1
    return max(1, min(_MAX_BLOCK, SEQUENTIAL_BUFFER_BYTES // max(per_iteration_bytes, 1)))


def blocked_scan(step, carry, xs, block: int):
    """``jax.lax.scan(step, carry, xs)`` as an outer scan over blocks of ``block`` iterations, each
    an inner scan: the same iterations in the same order (the same numbers), but the inner loop,
    whose stacked outputs are small, runs on XLA's sequential path (`sequential_block`).

    The block is the largest divisor of the scan's length up to ``block``, so that every block is
    whole and ``step`` is compiled once: a separate scan for a partial last block would compile
    it a second time (about a quarter more compile time for a short run), to save a fraction of
    a microsecond per iteration of that block."""
    size = jax.tree_util.tree_leaves(xs)[0].shape[0]
    # At least two blocks: a single one would only add a loop around the same iterations.
    block = next((b for b in range(min(block, size // 2), 1, -1) if size % b == 0), 1)
    if block == 1:
        return jax.lax.scan(step, carry, xs)
    blocks = size // block

    def outer(c, xb):
        return jax.lax.scan(step, c, xb)

    blocked = jax.tree_util.tree_map(lambda x: x.reshape(blocks, block, *x.shape[1:]), xs)
    carry, out = jax.lax.scan(outer, carry, blocked)
    return carry, jax.tree_util.tree_map(lambda o: o.reshape(size, *o.shape[2:]), out)


#: `segmented_scan`'s loops of a static trip count where its outputs are written in place.
_STATIC_TRIPS = 16


def segment_ends(rows: np.ndarray, size: int, capacity: int) -> np.ndarray:
    """`segmented_scan`'s ``ends`` for a chunk of ``size`` iterations that evaluates after its
    ``rows`` (sorted, unique): those rows, then the chunk's last row, repeated to ``capacity``
    entries (static: it sizes the outputs, at least ``len(rows) + 1`` unless ``rows`` ends with
    the last row)."""
    rows = np.asarray(rows, np.int64)
    segments = len(rows) + int(not len(rows) or rows[-1] != size - 1)
    if segments > capacity:  # unreachable: the loop sizes the capacity to its prefixes
        raise AssertionError(f"{segments} segments do not fit in a capacity of {capacity}")
    ends = np.full(capacity, size - 1, np.int32)
    ends[: len(rows)] = rows
    return ends


def segmented_scan(step, carry, xs, ends, at_end, block: int):
    """``jax.lax.scan(step, carry, xs)`` that also evaluates ``at_end(carry)`` after the iterations
    at the rows ``ends`` (`segment_ends`: ``(capacity,)`` int32, increasing, the chunk's last row
    last and repeated), with no test in the iterations.

    A loop over the segments of iterations that end at those rows, each an inner loop with no
    branch, and ``at_end`` once per segment. The same iterations in the same order: the same
    numbers as the scan. The ends come from the host, which knows them, as a short array: the
    same as a ``(size,)`` mask, searched on the device and answered with ``(size, ...)`` outputs
    that are mostly zeros, added about 8% to a two-state discounted game's run
    (benchmarks/README.md, "The discounted average in one array").

    Where ``block > 1`` (`sequential_block`), the inner loop writes ``block`` iterations' outputs
    into small buffers, so that it stays on XLA's sequential path, and an outer loop copies each
    into the chunk's (padded by a block: a segment's partial last block writes rows that the next
    segment, which starts there, writes again, or that fall in the padding). A segment runs its
    whole blocks in a loop of a static trip count and its rest in one of a dynamic count: ``step``
    appears twice in the program, which compiles for longer, and at LLVM's level 0 the two copies
    can round differently (so the loops use it beyond the quick runs only: `._loop`).

    Returns ``(carry, out, values)``: ``out`` as the scan's, ``values`` the results of ``at_end``
    (an array or a tuple of them) stacked, ``(capacity, ...)``: row ``k`` after the ``k``-th
    segment, zeros past the last.
    """
    size = jax.tree_util.tree_leaves(xs)[0].shape[0]
    capacity = ends.shape[0]
    # Unlike a scan's, these loops' blocks of inputs count among the buffers their body touches:
    # a block of the discounted update's six-column rows (16 x 48 bytes) took its inner loop off
    # XLA's sequential path, and the run 2.2x as long.
    row_bytes = max(x[0].size * x.dtype.itemsize for x in jax.tree_util.tree_leaves(xs))
    block = max(1, min(block, SEQUENTIAL_BUFFER_BYTES // max(row_bytes, 1)))
    first = jax.tree_util.tree_map(lambda x: x[0], xs)
    out_shapes = jax.eval_shape(lambda c, x: step(c, x)[1], carry, first)
    value_shapes = jax.eval_shape(at_end, carry)
    pad = block if block > 1 else 0
    buffers = jax.tree_util.tree_map(lambda s: jnp.zeros((size + pad, *s.shape), s.dtype), out_shapes)
    padded = jax.tree_util.tree_map(lambda x: jnp.concatenate([x, jnp.zeros((pad, *x.shape[1:]), x.dtype)]), xs)

    # The rows are never negative: without JAX's wrapping of negative indices, the iteration's
    # row is its counter, and not one more kernel per iteration.
    def put(buffer, value, row):
        start = (row,) + (jnp.int32(0),) * (buffer.ndim - 1)
        return jax.lax.dynamic_update_slice(buffer, value, start, allow_negative_indices=False)

    def body_for(base, inputs):
        """Iteration ``j`` reads its inputs at row ``j - base`` of ``inputs`` and writes its
        outputs there in the buffers it is given."""

        def body(j, state):
            c, written = state
            row = lambda x: jax.lax.dynamic_index_in_dim(x, j - base, keepdims=False, allow_negative_indices=False)  # noqa: E731
            c, out = step(c, jax.tree_util.tree_map(row, inputs))
            return c, jax.tree_util.tree_map(lambda b, v: put(b, v[None], j - base), written, out)

        return body

    def through_small_buffers(start, loop, c, written):
        """``loop(inputs, (c, small))`` over a block of inputs from row ``start``, writing into
        small buffers, which are then copied into the chunk's at ``start``."""
        small = jax.tree_util.tree_map(lambda b: jnp.zeros((block, *b.shape[1:]), b.dtype), written)
        inputs = jax.tree_util.tree_map(lambda x: jax.lax.dynamic_slice_in_dim(x, start, block), padded)
        c, small = loop(inputs, (c, small))
        return c, jax.tree_util.tree_map(lambda b, s: put(b, s, start), written, small)

    def iterations(lo, hi, c, written):
        # Whole blocks with a static trip count (int32 bounds, as the rows): XLA's loop then tests
        # no condition per iteration, a tenth of a paper-game iteration (more where the body runs
        # on XLA's concurrent executor). Then the segment's rest.
        if block == 1:  # the outputs written in place, in groups of _STATIC_TRIPS iterations

            def whole_group(k, state):
                start = lo + k * _STATIC_TRIPS
                return jax.lax.fori_loop(jnp.int32(0), jnp.int32(_STATIC_TRIPS), body_for(-start, padded), state)

            whole = (hi - lo) // _STATIC_TRIPS
            c, written = jax.lax.fori_loop(0, whole, whole_group, (c, written))
            return jax.lax.fori_loop(lo + whole * _STATIC_TRIPS, hi, body_for(0, padded), (c, written))

        def whole_block(k, state):
            loop = lambda inputs, st: jax.lax.fori_loop(jnp.int32(0), jnp.int32(block), body_for(0, inputs), st)  # noqa: E731
            return through_small_buffers(lo + k * block, loop, *state)

        whole = (hi - lo) // block
        c, written = jax.lax.fori_loop(0, whole, whole_block, (c, written))
        start = lo + whole * block
        rest = lambda inputs, st: jax.lax.fori_loop(start, hi, body_for(start, inputs), st)  # noqa: E731
        return through_small_buffers(start, rest, c, written)

    def segment(state):
        k, lo, c, written, values = state
        hi = ends[k] + 1
        c, written = iterations(lo, hi, c, written)
        return k + 1, hi, c, written, jax.tree_util.tree_map(lambda v, x: put(v, x[None], k), values, at_end(c))

    def more(state):  # (the segment count bounded too: ends that never reached the last row would loop forever)
        return (state[1] < size) & (state[0] < capacity)

    values = jax.tree_util.tree_map(lambda s: jnp.zeros((capacity, *s.shape), s.dtype), value_shapes)
    state = (jnp.int32(0), jnp.int32(0), carry, buffers, values)
    _, _, carry, buffers, values = jax.lax.while_loop(more, segment, state)
    return carry, jax.tree_util.tree_map(lambda b: b[:size], buffers), values


class ValueUpdate:
    """A value update: its schedule, its compiled step and its output policy (see the module docstring).

    Subclasses are stateless singletons, cached per value update in compiled loops; a value
    update compares equal to itself and to its name (``SMOOTH == "smooth"``).

    Attributes
    ----------
    name : its name in ``LEARNER+UPDATE``.
    index_kernel : the output policy's index kernel, ``"smooth"`` (Algorithm 3) or ``"stage"`` (Algorithm 4).
    description, citation : for listings.
    per_iteration_metrics : whether the chunks emit every prefix's metrics.
    """

    name: str
    index_kernel: str
    description: str
    citation: str
    #: Whether `run_chunk` emits the per-prefix metrics of every iteration (else it emits
    #: `prefix_records`, from which `prefix_metrics` assembles them).
    per_iteration_metrics: bool
    #: The rows of the per-prefix metrics (before the regret rows): value, certified CCE bound,
    #: certified CE bound of the output policy.
    metric_rows: int = 3
    #: Whether the update runs on discounted games (one stationary layer) rather than finite-horizon ones.
    stationary: bool = False

    def schedule_horizon(self, game) -> float:
        """The horizon ``schedule`` is computed for: the game's ``H`` (a discounted update: the
        effective horizon of its step sizes)."""
        return game.horizon

    def theory_rate_for(self, game, paper: str) -> tuple[float, bool]:
        """`theory_rate` for ``game``, from ``paper`` (a key of `markovgames._papers.THEORY_RATES`,
        each of whose rates covers every finite-horizon update)."""
        return self.theory_rate(game.num_players, game.horizon, max(game.num_actions))

    def average_weights(self, T: int, horizon) -> np.ndarray:
        """The weights ``(T,)`` of the state-wise weighted average of the first ``T`` iterates that
        this update carries (`markovgames._schedules.average_weights`: its own value estimate's
        weights on the iterates), for ``horizon`` = `schedule_horizon` of the game (its ``H``; a
        discounted update's: the order ``k`` of its step sizes)."""
        return average_weights(self.name, T, horizon)

    def theory_rate(self, num_players: int, horizon: int, max_actions: int) -> tuple[float, bool]:
        """``(eta_scale, per_stage)`` for the learning rate ``"theory"``: a constant rate, or
        ``(1.0, True)`` when the rate changes per stage (the schedule then carries it)."""
        raise NotImplementedError

    def schedule(self, T: int, horizon, num_players: int, per_stage_theory: bool, step_schedule=None) -> Any:
        """What the loop needs to know of the iterations ``1..T`` before it starts (NumPy);
        ``horizon``: `schedule_horizon` (the game's ``H``; a float for a discounted update);
        ``step_schedule`` is the learning rate's `StepSchedule` (``None``: constant)."""
        raise NotImplementedError

    def chunk_inputs(self, schedule, done: int, size: int, dtype) -> Any:
        """The compiled chunk's ``sched`` argument for iterations ``done + 1 .. done + size``."""
        raise NotImplementedError

    def init_carry(self, learner: LearnerSpec, shape_key, dtype, schedule, interplay=None, initial=None) -> NamedTuple:
        """One run's loop state before iteration 1 (no run axis); ``interplay`` as for `run_chunk`;
        ``initial``: per player the ``(H, S, A_i)`` strategies the learners start at (their
        ``init_at``), or ``None`` (their ``init``)."""
        raise NotImplementedError

    def run_chunk(
        self,
        learner: LearnerSpec,
        optimistic: bool,
        record: bool,
        size: int,
        game: GameArrays,
        carry,
        sched,
        last_iterate,
        run_axes: int,
        interplay=None,
        average=None,
        average_how: str = "marked",
    ):
        """``size`` iterations inside the compiled loop: ``(carry, outputs)``.

        ``interplay`` is the `Interplay` of the run (update order, regret curves; ``None``: the
        paper's simultaneous updates), see `markovgames.dynamics._interplay`.

        ``outputs`` holds ``"metrics"`` (``(size, 3, N[, R])``: value, certified CCE bound and
        certified CE bound at ``s_1`` after each iteration; with ``interplay.regret`` two more rows,
        the players' largest average external and swap regret, `._regret`) or ``"prefix_records"`` (see
        `prefix_records`), and, with ``record``, ``"policies"``
        (per player ``(size, H, S, A_i[, R])``). ``last_iterate`` is ``None`` or a ``(size,)``
        boolean mask: at the iterations it marks, ``outputs["last_iterate"]`` (``(size, 2, N[, R])``)
        holds the value and the best-response values of the product policy ``pi^t`` itself
        (`product_policy_values`; zeros elsewhere). With ``interplay.average`` the carry holds the
        state-wise weighted average of the iterates with this update's weights
        (`markovgames._schedules.average_weights`), and ``average`` is a ``(size,)`` boolean mask:
        ``outputs["weighted_average"]`` (``(size, 2, N[, R])``) holds the same values of that
        average after the iterations it marks (zeros elsewhere). ``average_how`` (static, the run's):
        ``"every"``, the mask marks every iteration of the run; ``"segments"``, evaluate after the
        marked iterations only, in stretches of iterations that test nothing (`segmented_scan`,
        where `average_in_segments`): ``average`` is then not a mask but those rows as
        `segment_ends` gives them, and the output has one row per stretch, ``(capacity, 2, N[, R])``;
        ``"marked"``, each iteration tests its mark.
        """
        raise NotImplementedError

    #: Whether `run_chunk` can take ``average_how="segments"``.
    average_in_segments: bool = False

    def evaluate_iterates(self, outputs, games, batched: bool):
        """The ``(..., L, 2, N)`` host array (values, best-response values) of a chunk's
        ``outputs["last_iterate"]`` or ``outputs["weighted_average"]`` rows at the evaluated
        prefixes (already copied to the host): the outputs themselves where the loop evaluates in
        place; a discounted update emits the iterates and evaluates them here (`._discounted`)."""
        return outputs

    def prefix_records(self, carry):
        """What `prefix_metrics` assembles the per-prefix metrics from: the part of ``carry`` that
        holds them for every prefix up to the iterations done, or ``None`` when the chunks emit
        every prefix's metrics. A value update that records them emits ``outputs["prefix_records"]``
        from `run_chunk` (the loop assembles each chunk's prefixes while the next chunk runs)."""
        return None

    def prefix_metrics(self, records, schedule, prefixes):
        """The metrics ``(..., P, 3, N)`` of ``prefixes`` (1-based, increasing, at most the
        iterations done) assembled from ``records`` (`prefix_records` of a carry, or a chunk's
        ``outputs["prefix_records"]``; NumPy, leading run axes allowed), or ``None`` when the
        chunks emit every prefix's metrics."""
        raise NotImplementedError

    def identity_residual(self, carry):
        """The run's largest ``|Q^t_h - (r_h + P_h V^t_{h+1})|`` where the update promises 0, else ``None``."""
        return None

    def init_certify_carry(self, shape_key, dtype, schedule) -> NamedTuple:
        """One run's state for `certify_chunk` before the first policy."""
        raise NotImplementedError

    def certify_chunk(self, size: int, game: GameArrays, carry, sched, policies, run_axes: int):
        """The output policy's recursions over ``size`` given policies (per player
        ``(size, H, S, A_i[, R])``): ``(carry, outputs)`` as `run_chunk`, without learners."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<value update {self.name!r}>"

    def __eq__(self, other) -> bool:
        # A value update equals its name, so that ``algorithm.value_update == "smooth"`` reads as it should.
        if isinstance(other, str):
            return other == self.name
        return self is other

    def __hash__(self) -> int:
        return hash(self.name)
