r"""What the learners see: full information, or estimates from a generative model.

The paper's dynamics assume **full information** (``full``): at every iteration, step and state,
player ``i``'s learner observes its exact utility vector :math:`u^t_i = [Q^t_i\pi^t_{-i}](s,\cdot)`
and the value update computes the exact Bellman target :math:`r_h + P_h V^t_{h+1}`.

``sampled:K`` (a **generative model**) replaces both expectations by averages of ``K`` independent
samples, drawn afresh at every iteration (every value update):

* **Utilities.** For each player ``i``, step ``h`` and state ``s``: ``K`` profiles of the other
  players' actions :math:`a^{(k)}_{-i} \sim \pi^t_{-i}(\cdot\mid s)` (each player's action drawn
  independently from its own strategy, and independently for every ``i``), and

  .. math:: \hat u^t_i(s, a_i) = \frac1K \sum_{k=1}^K \hat Q^t_i\big(s, a_i, a^{(k)}_{-i}\big),

  an unbiased estimate of :math:`[\hat Q^t_i\pi^t_{-i}](s, a_i)` with variance
  :math:`\frac1K\big([\hat Q^{t\,2}_i\pi^t_{-i}] - [\hat Q^t_i\pi^t_{-i}]^2\big)(s, a_i)`
  (`utility_variance`). The learners see nothing else. Alternating updates sample each player's
  view :math:`(\pi^{t+1}_{<i}, \pi^t_{>i})`; a two-query learner's second query is estimated the
  same way from its own ``K`` profiles.
* **Bellman targets.** For each step ``h < H``, state ``s`` and joint action ``a``: ``K`` next
  states :math:`s'_k \sim P_h(\cdot\mid s, a)` and

  .. math:: \widehat{[P_h V]}(s, a) = \frac1K\sum_{k=1}^K V(s'_k),

  unbiased with variance :math:`\frac1K\big(P_h V^2 - (P_h V)^2\big)(s, a)`
  (`target_variance`): the value update uses the empirical kernel
  :math:`\hat P^t_h = \frac1K\sum_k \delta_{s'_k}` where the full-information one uses
  :math:`P_h`. The smooth update draws them at every iteration, the stage-based one at every
  stage's end (its only value update). The last step has no successor: nothing is drawn there.
  A discounted game (`._discounted`) has one stationary layer, every row of which has successors:
  the discounted smooth update draws ``K`` next states from every row, at every iteration, for
  its target :math:`r + \gamma \hat P^t V^{t-1}`.
  Under ``sampled:K`` the ``Q`` tables are these estimates, :math:`\hat Q^t`; the paper's lemma
  :math:`Q^t_h = r_h + P_h V^t_{h+1}` holds for the exact mode only.

``sampled:exact`` takes expectations instead of samples: it is ``full``, bit for bit.

The output policy (Algorithms 3 and 4) is a function of the policies played alone, so its value
and certified bounds are still computed exactly, with the true game, whatever the learners saw.

**Random draws.** A run has one key, made from its seed (`run_key_data`). Every draw of
iteration ``t`` comes from ``fold_in(fold_in(key, purpose), t)`` (`iteration_uniforms`): the same
seed gives the same draws in a single run, in any run of a batch and in a resumed run, whatever
the chunks. A draw from a distribution ``p`` over ``A`` items takes one uniform number ``u`` and
picks the first ``a`` with :math:`\sum_{b\le a} p_b > u` (inverse CDF; `sample_index`).

The layout of an iteration's uniform numbers (`draw_shapes`): the profiles ``(N, K, N - 1, H, S)``
(estimating player ``i``, sample ``k``, the ``m``-th other player of ``i`` in increasing order,
step, state) for each of the purposes `OTHERS` and `PROPOSALS`; the next states
``(K, H - 1, S, A_0, ..., A_{N-1})`` (`NEXT_STATES`; ``(K, 1, S, A_0, ..., A_{N-1})`` for a discounted
game's layer, whose profiles have ``H = 1``), each drawn over the successor states in
increasing order (a sparse game's successors are sorted before the run, so that two equal games
draw the same states).
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._schedules import smooth_step_size
from ._tensor import joint_product, marginal_expectation, others_expectation
from ._transitions import SparseKernel
from ._value_update import per_player_utilities

__all__ = [
    "FEEDBACK_FORMS",
    "FULL",
    "Feedback",
    "parse_feedback",
    "run_key_data",
    "iteration_uniforms",
    "sample_index",
    "sample_onehot",
    "Estimator",
    "utility_variance",
    "target_variance",
    "smoothed_target_variance",
    "samples_per_iteration",
    "chunk_draws",
    "draws_per_iteration",
    "CHUNK_DRAW_BYTES",
    "draw_shapes",
    "NEXT_STATES",
    "OTHERS",
    "PROPOSALS",
    "VLEARNING_ACTIONS",
    "VLEARNING_STATES",
    "episode_uniforms",
]

#: The feedback models, as written on the command line.
FEEDBACK_FORMS = ("full", "sampled:K", "sampled:exact")

#: The purposes of an iteration's draws (`iteration_uniforms`).
NEXT_STATES, OTHERS, PROPOSALS = 0, 1, 2
#: The purposes of a V-learning episode's draws (`episode_uniforms`): actions, next states.
VLEARNING_ACTIONS, VLEARNING_STATES = 3, 4

#: The most samples per estimate: far beyond where the estimates are full information's to
#: float precision, and small enough that a chunk's draws cannot exhaust memory by themselves.
MAX_SAMPLES = 1 << 20


class Feedback(NamedTuple):
    """A feedback model: ``kind`` ``"full"`` or ``"sampled"``; ``samples`` the ``K`` of
    ``sampled:K`` (``None``: the exact mode, or full information)."""

    kind: str = "full"
    samples: int | None = None

    @property
    def name(self) -> str:
        if self.kind == "full":
            return "full"
        return f"{self.kind}:{'exact' if self.samples is None else self.samples}"

    @property
    def estimates(self) -> bool:
        """Whether the learners see estimates (and the run uses random draws)."""
        return self.kind != "full" and self.samples is not None

    def __str__(self) -> str:
        return self.name


#: Full information (the paper's).
FULL = Feedback()


def parse_feedback(text) -> Feedback:
    """The `Feedback` named ``text`` (``full``, ``sampled:K``, ``sampled:exact``); a
    ``ValueError`` says what is wrong."""
    if isinstance(text, Feedback):
        return text
    if not isinstance(text, str):
        raise ValueError(f"a feedback model is a name such as 'full' or 'sampled:8', got {text!r}")
    if text == "full":
        return FULL
    kind, sep, count = text.partition(":")
    if kind == "bandit":
        raise ValueError(
            f"feedback model {text!r} is online play: the players observe neither the joint action nor the "
            "game, so a LEARNER+UPDATE value update cannot run as it is; bandit feedback runs through "
            "V-learning's per-player value updates: run_vlearning(game, ALGORITHM, episodes, feedback="
            f"{text!r}) (docs/vlearning.md), or 'markovgames vlearn GAME --algorithm ALGORITHM --feedback {text}'"
        )
    if kind != "sampled":
        raise ValueError(f"unknown feedback model {text!r}; choose one of: {', '.join(FEEDBACK_FORMS)}")
    if not sep or not count:
        raise ValueError(f"feedback model {text!r}: give the number of samples, as 'sampled:8', or 'sampled:exact'")
    if count == "exact":
        return Feedback("sampled", None)
    if not count.isdigit() or not 1 <= int(count) <= MAX_SAMPLES:
        raise ValueError(f"feedback model {text!r}: the number of samples must be an integer from 1 to {MAX_SAMPLES}")
    return Feedback("sampled", int(count))


def run_key_data(seed) -> np.ndarray:
    """A run's key (the raw ``uint32[2]`` key of JAX's Philox4x32-10, `KEY_IMPL`) from its seed: a
    non-negative integer, through NumPy's ``SeedSequence`` (so that nearby seeds give unrelated keys)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or int(seed) < 0:
        raise ValueError(f"a seed must be a non-negative integer, got {seed!r}")
    return np.random.SeedSequence(int(seed)).generate_state(2, np.uint32)


#: The counter-based generator of the runs' draws: Philox4x32-10 (Salmon et al., SC 2011), JAX's
#: implementation; about 6 times cheaper per number than threefry2x32 on a CPU.
KEY_IMPL = "philox4x32"


def _uniforms_one(key_data, t, purpose: int, shape: tuple[int, ...], dtype):
    key = jax.random.wrap_key_data(key_data, impl=KEY_IMPL)
    key = jax.random.fold_in(jax.random.fold_in(key, purpose), t)
    return jax.random.uniform(key, shape, dtype)


def iteration_uniforms(key_data, t, purpose: int, shape: tuple[int, ...], dtype, run_axes: int = 0):
    """The uniform numbers in ``[0, 1)`` of iteration ``t``'s draws for ``purpose``, shape ``shape``.

    ``key_data``: a run's ``uint32[2]`` key (`run_key_data`), or with ``run_axes`` one per run
    ``(2, R)``, the draws then ``shape + (R,)``. Public so that a reference implementation can be
    fed the very numbers the compiled loop uses.
    """
    t = jnp.asarray(t).astype(jnp.uint32)
    if not run_axes:
        return _uniforms_one(key_data, t, purpose, shape, dtype)
    return jax.vmap(lambda k: _uniforms_one(k, t, purpose, shape, dtype), in_axes=-1, out_axes=-1)(key_data)


@partial(jax.jit, static_argnums=(2, 3, 4))
def episode_uniforms(key_data, first, size: int, horizon: int, num_players: int):
    """The uniform numbers of V-learning's episodes ``first..first+size-1`` (`iteration_uniforms`
    with the episode as ``t``): actions ``(size, H, N)`` and next states ``(size, H)``."""
    episodes = first + jnp.arange(size, dtype=jnp.uint32)
    ua = jax.vmap(lambda k: iteration_uniforms(key_data, k, VLEARNING_ACTIONS, (horizon, num_players), jnp.float64))(episodes)
    us = jax.vmap(lambda k: iteration_uniforms(key_data, k, VLEARNING_STATES, (horizon,), jnp.float64))(episodes)
    return ua, us


def sample_onehot(probs, u, axis: int):
    """The one-hot vectors of the items drawn by inverse CDF: ``probs`` has the items along
    ``axis`` (negative), ``u`` the same shape without it; the result has ``probs``' shape.

    The item is the number of cumulative sums at most ``u``, capped at the last item of positive
    probability (rounding may leave a cumulative sum short of 1): `sample_index`'s, computed with
    few kernels (the loop body of a tiny game pays per kernel, not per number).
    """
    size = probs.shape[axis]
    index = jnp.arange(size, dtype=jnp.int32).reshape((size,) + (1,) * (-1 - axis))
    u = jnp.expand_dims(u, axis)
    count = jnp.sum(jnp.cumsum(probs, axis=axis) <= u, axis=axis, keepdims=True, dtype=jnp.int32)
    last = jnp.max(jnp.where(probs > 0, index, 0), axis=axis, keepdims=True)
    return (index == jnp.minimum(count, last)).astype(probs.dtype)


def sample_index(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """NumPy, literally: the item drawn from each distribution ``probs[..., :]`` by the uniform
    number ``u[...]``: the first ``a`` whose cumulative probability exceeds ``u``, counting the
    cumulative sum as 1 from the last item of positive probability on (as `sample_onehot`)."""
    probs = np.asarray(probs, np.float64)
    cdf = np.cumsum(probs, axis=-1)
    index = np.arange(probs.shape[-1])
    last = np.max(np.where(probs > 0, index, -1), axis=-1, keepdims=True)
    cdf = np.where(index >= last, 1.0, cdf)
    return np.argmax(cdf > np.asarray(u)[..., None], axis=-1)


def _profile_uniforms_shape(num_players: int, samples: int, horizon: int, num_states: int) -> tuple[int, ...]:
    # (estimating player i, sample k, m-th other player of i in increasing order, h, s).
    return (num_players, samples, num_players - 1, horizon, num_states)


def _next_state_uniforms_shape(samples: int, transitions_shape: tuple[int, ...], stationary: bool = False) -> tuple[int, ...]:
    # (sample k, h < H - 1, s, a...): the rows of steps 0..H-2 (the last step has no successor);
    # a discounted game's one stationary layer has a successor from every row.
    return (samples, transitions_shape[0] - (0 if stationary else 1), *transitions_shape[1:-1])


#: The samples of an estimate are one-hot vectors computed side by side (a leading sample axis)
#: while that intermediate has at most this many entries, else one after the other in a loop
#: (bounded memory). Their sums count 0s and 1s: every way gives the same numbers exactly.
_VECTORISED_SAMPLE_ENTRIES = 1 << 22


def _sample_sum(term, samples: int, entries: int):
    """``sum_{k < samples} term(k)``, with ``term(k)`` of ``entries`` entries: ``term(slice(None))``
    with the samples along a leading axis where that is small (`_VECTORISED_SAMPLE_ENTRIES`),
    else a loop over ``k``."""
    if samples * entries <= _VECTORISED_SAMPLE_ENTRIES:
        return jnp.sum(term(slice(None)), axis=0)
    return jax.lax.fori_loop(1, samples, lambda k, acc: acc + term(k), term(0))


class Estimator:
    """The feedback of one iteration inside the compiled loop: what the learners observe and
    which kernel the value update applies (see the module docstring).

    ``game`` is the loop's `GameArrays` (``game.key`` holds the run's key under ``sampled:K``);
    ``t`` the (traced) iteration whose draws it makes. ``drawn``: the iteration's draws made
    beforehand by purpose (`chunk_draws`), the same numbers; a purpose not in it is drawn here.
    """

    def __init__(self, feedback: Feedback, game, t, run_axes: int, drawn: dict | None = None, stationary: bool = False):
        self.feedback, self.game, self.t, self.run_axes = feedback, game, t, run_axes
        #: A discounted game's one stationary layer: every row's next states are drawn.
        self.stationary = stationary
        self.dtype = game.rewards.dtype
        self.drawn = drawn or {}
        self.samples = int(feedback.samples or 0)  # K (0: no draws)

    @property
    def estimates(self) -> bool:
        return self.feedback.estimates

    def _uniforms(self, purpose: int, shape: tuple[int, ...]):
        if purpose in self.drawn:
            return self.drawn[purpose]
        return iteration_uniforms(self.game.key, self.t, purpose, shape, self.dtype, self.run_axes)

    def utilities(self, q, policies, purpose: int = OTHERS):
        """Every player's observed utility ``(H, S, A_i[, R])`` under ``q`` ``(H, N, S, A...[, R])``
        and the profile ``policies``: exact, or estimated from the profiles drawn for ``purpose``."""
        if not self.estimates:
            return per_player_utilities(q, policies, self.run_axes)
        draws = self._draws(purpose, q)
        return tuple(self._estimate(q, policies, i, draws) for i in range(len(policies)))

    def utility(self, q, view, player: int, draws=None):
        """Player ``player``'s observed utility against the profile ``view`` (its own entry unused);
        ``draws``: `profile_draws` of the iteration (estimates only)."""
        if not self.estimates:
            return others_expectation(q[:, player], tuple(view), player, self.run_axes)
        return self._estimate(q, view, player, draws)

    def profile_draws(self, q, purpose: int = OTHERS):
        """The uniform numbers of the iteration's profiles for ``purpose`` (``None`` when exact)."""
        return self._draws(purpose, q) if self.estimates else None

    def _draws(self, purpose: int, q):
        horizon, num_players, num_states = q.shape[:3]
        return self._uniforms(purpose, _profile_uniforms_shape(num_players, self.samples, horizon, num_states))

    def _estimate(self, q, view, player: int, draws):
        """``(1/K) sum_k Q_i(s, a_i, a^k_{-i})`` with ``a^k_j`` drawn from ``view[j]`` by ``draws[player, k, j]``."""
        run_axes = self.run_axes
        num_players = len(view)
        samples = self.samples
        q_i = q[:, player]
        axis = -1 - run_axes

        others = [j for j in range(num_players) if j != player]

        def onehots(k):
            # Sample k (an index, or a slice: the samples along a leading axis) of each other
            # player's action; player i's own entry is its strategy, which no estimate reads.
            def drawn(j):
                probs = view[j][None] if isinstance(k, slice) else view[j]
                return sample_onehot(probs, draws[player, k, others.index(j)], axis)

            own = view[player][None] if isinstance(k, slice) else view[player]
            return tuple(own if j == player else drawn(j) for j in range(num_players))

        if num_players == 2:
            # One other player: the average of its one-hot actions is the samples' distribution.
            other = others[0]
            counts = _sample_sum(lambda k: onehots(k)[other], samples, view[other].size)
            empirical = tuple(counts / samples if j == other else view[j] for j in range(2))
            return others_expectation(q_i, empirical, player, run_axes)
        # The samples' joint distribution of the others' actions (not a product): player i's own
        # axis holds its strategy, which the marginal over the others' axes sums out.
        joint = _sample_sum(lambda k: joint_product(onehots(k), run_axes), samples, q_i.size)
        return marginal_expectation(q_i, joint / samples, player, num_players, run_axes)

    def kernel(self, transitions):
        """The transition kernel of the value update's Bellman targets: ``transitions`` itself
        (exact), or the empirical kernel of ``K`` next states per row of steps ``0..H-2`` (the last
        step's rows are ``transitions``', which no target reads: nothing follows step ``H``)."""
        if not self.estimates:
            return transitions
        samples = self.samples
        sparse = isinstance(transitions, SparseKernel)
        probs = transitions.probabilities if sparse else transitions
        run_axes = self.run_axes
        item_axis = -1 - run_axes
        core = probs.shape[: probs.ndim - run_axes]
        draws = self._uniforms(NEXT_STATES, _next_state_uniforms_shape(samples, core, self.stationary))
        head = probs if self.stationary else probs[:-1]

        def onehot(k):
            return sample_onehot(head[None] if isinstance(k, slice) else head, draws[k], item_axis)

        counts = _sample_sum(onehot, samples, head.size)
        empirical = counts / samples if self.stationary else jnp.concatenate([counts / samples, probs[-1:]], axis=0)
        return SparseKernel(transitions.successors, empirical) if sparse else empirical


#: A chunk's draws are made before its loop, all at once, when they take at most this many bytes
#: (else each iteration makes its own): generating them vectorised over the iterations is what
#: keeps sampled feedback within a small factor of full information on tiny games (the
#: generator's rounds cost a fixed time per call, more than a whole paper-game iteration's arithmetic).
CHUNK_DRAW_BYTES = 32 << 20


def draw_shapes(feedback: Feedback, game, run_axes: int, purposes, stationary: bool = False) -> dict[int, tuple[int, ...]]:
    """The shape of one iteration's uniforms for each purpose of ``purposes`` (without a run axis;
    ``stationary``: a discounted game's layer, `Estimator`)."""
    rewards = game.rewards
    horizon, num_players, num_states = rewards.shape[:3]
    samples = int(feedback.samples)  # type: ignore[arg-type]
    shapes = {}
    for purpose in purposes:
        if purpose == NEXT_STATES:
            probs = game.transitions.probabilities if isinstance(game.transitions, SparseKernel) else game.transitions
            shapes[purpose] = _next_state_uniforms_shape(samples, probs.shape[: probs.ndim - run_axes], stationary)
        else:
            shapes[purpose] = _profile_uniforms_shape(num_players, samples, horizon, num_states)
    return shapes


def draws_per_iteration(feedback: Feedback, shape_key, two_query: bool, smooth: bool, stationary: bool = False) -> int:
    """The uniform numbers one run draws per iteration in its chunk's draws (`chunk_draws`): the
    profiles (twice for a two-query learner) and, for the smooth updates, the next states
    (``shape_key``: ``(N, H, S, A)``, ``H = 1`` for a discounted game's ``stationary`` layer)."""
    if not feedback.estimates:
        return 0
    num_players, horizon, num_states, num_actions = shape_key
    samples = int(feedback.samples)  # type: ignore[arg-type]
    profiles = math.prod(_profile_uniforms_shape(num_players, samples, horizon, num_states)) * (2 if two_query else 1)
    rows = horizon if stationary else horizon - 1
    next_states = samples * rows * num_states * math.prod(num_actions) if smooth else 0
    return profiles + next_states


def chunk_draws(feedback: Feedback, game, first_t, size: int, run_axes: int, purposes, stationary: bool = False) -> dict | None:
    """Every draw of iterations ``first_t .. first_t + size - 1`` for ``purposes``, by purpose
    ``(size, *shape[, R])`` (`iteration_uniforms`'s numbers), or ``None`` when they would take
    more than `CHUNK_DRAW_BYTES`."""
    shapes = draw_shapes(feedback, game, run_axes, purposes, stationary)
    runs = math.prod(game.rewards.shape[game.rewards.ndim - run_axes :])
    itemsize = game.rewards.dtype.itemsize
    if size * runs * itemsize * sum(math.prod(shape) for shape in shapes.values()) > CHUNK_DRAW_BYTES:
        return None
    ts = first_t + jnp.arange(size, dtype=jnp.int32)
    dtype = game.rewards.dtype
    return {
        purpose: jax.vmap(lambda t, p=purpose, sh=shape: iteration_uniforms(game.key, t, p, sh, dtype, run_axes))(ts)
        for purpose, shape in shapes.items()
    }


def utility_variance(q_i: np.ndarray, policies, player: int, samples: int) -> np.ndarray:
    """NumPy: the variance of one ``sampled:K`` utility estimate of player ``player`` given ``Q``
    and the profile: ``([Q_i^2 pi_{-i}] - [Q_i pi_{-i}]^2) / K`` (``q_i`` ``(S, A...)``, ``policies[j]`` ``(S, A_j)``)."""
    return (_others_np(q_i**2, policies, player) - _others_np(q_i, policies, player) ** 2) / samples


def target_variance(p_h: np.ndarray, v_next: np.ndarray, samples: int) -> np.ndarray:
    """NumPy: the variance of one ``sampled:K`` estimate of ``[P_h V](s, a)``:
    ``(P_h V^2 - (P_h V)^2) / K`` (``p_h`` ``(S, A..., S')``, ``v_next`` ``(S',)``)."""
    return (p_h @ v_next**2 - (p_h @ v_next) ** 2) / samples


def smoothed_target_variance(one_draw: np.ndarray, horizon: int, order: int | None = None) -> np.ndarray:
    r"""NumPy: the mean square of the sampled targets' error in the smooth update's ``Q_hat^t``
    after ``t = len(one_draw)`` iterations (docs/feedback.md, "What a learner's utility carries"):

    .. math:: \sum_{j \le t} (\alpha_t^j)^2 \sigma_j^2, \qquad
              \alpha_t^j = \alpha_j \prod_{i = j+1}^{t} (1 - \alpha_i), \quad \alpha_i = \frac{k+1}{k+i}

    (Mao et al. 2024, Algorithm 1's value update ``Q^t = (1 - alpha_t) Q^{t-1} + alpha_t target^t``,
    whose ``Q^t`` is ``sum_j alpha_t^j target^j``), where ``one_draw[j-1]`` is the variance of
    iteration ``j``'s target, ``target_variance`` of that iteration's values (already divided by
    ``K``; leading axis over the iterations, any trailing axes), ``k = order`` (default ``H``)."""
    sigma2 = np.asarray(one_draw, dtype=np.float64)
    t = sigma2.shape[0]
    alpha = smooth_step_size(np.arange(1, t + 1, dtype=np.float64), horizon, order)
    # alpha_t^j = alpha_j prod_{i > j} (1 - alpha_i), as a reversed cumulative product.
    keep = np.concatenate([np.cumprod((1.0 - alpha)[::-1])[::-1][1:], [1.0]])
    weights = alpha * keep
    return np.tensordot(weights**2, sigma2, axes=(0, 0))


def _others_np(q_i: np.ndarray, policies, player: int) -> np.ndarray:
    num_players = len(policies)
    out = np.asarray(q_i, np.float64)
    # Contract the others' axes from the last one down, so the earlier axes keep their positions.
    for j in range(num_players - 1, -1, -1):
        if j == player:
            continue
        p = np.asarray(policies[j], np.float64)  # (S, A_j)
        shape = [p.shape[0]] + [p.shape[1] if k == j else 1 for k in range(num_players)]
        out = (out * p.reshape(shape)).sum(axis=1 + j, keepdims=True)
    return out.reshape(out.shape[0], out.shape[1 + player])


def samples_per_iteration(feedback: Feedback, shape_key, two_query: bool, stationary: bool = False) -> dict[str, int]:
    """What ``sampled:K`` draws: per iteration, the other players' action profiles
    (``K N H S``, twice for a two-query learner); per value update, the next states
    (``K (H - 1) S prod(A)``; a discounted game's ``stationary`` layer, ``H = 1``: ``K S prod(A)``).
    Zeros for full information and the exact mode."""
    num_players, horizon, num_states, num_actions = shape_key
    if not feedback.estimates:
        return {"profiles": 0, "next_states": 0}
    samples = int(feedback.samples)  # type: ignore[arg-type]
    profiles = samples * num_players * horizon * num_states * (2 if two_query else 1)
    next_states = samples * (horizon if stationary else horizon - 1) * num_states * math.prod(num_actions)
    return {"profiles": profiles, "next_states": next_states}
