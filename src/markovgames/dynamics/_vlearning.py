r"""V-learning, compiled: CCE-V, CE-V and stage-based V-learning from play (docs/vlearning.md).

Every player runs its own copy and sees only its own rewards and the states visited (bandit
feedback on the game's episodes); one adversarial bandit and one value estimate per (step, state):

* ``cce-v``: Jin, Liu, Wang and Yu (2021), Algorithms 1 and 3 (CCE-V-learning of Song, Mei and Bai
  2021): :math:`\tilde V \leftarrow (1-\alpha_t)\tilde V + \alpha_t(r + V_{h+1}(s') + \beta_t)`,
  :math:`V_h(s) = \min(H-h, \tilde V)`, :math:`\alpha_t = (H+1)/(H+t)`,
  :math:`\beta_t = c\sqrt{H^3 A_i/t}`; the bandit is FTRL with implicit exploration and the
  weights :math:`w_t` of :math:`\alpha_t`: :math:`\hat\ell_t(b) = \ell_t 1\{b=a_t\}/(\theta_t(b)+\gamma_t)`,
  :math:`\theta_{t+1} \propto \exp(-(\eta_t/w_t)\sum_{j\le t} w_j\hat\ell_j)`,
  :math:`\eta_t=\gamma_t=\sqrt{H\ln A_i/(A_i t)}`, loss :math:`\ell_t = (H - r - V_{h+1}(s'))/H`.
* ``ce-v``: Song, Mei and Bai (2021), CE-V-learning: the same with :math:`\beta_t = c\sqrt{H^3A_i^2/t}`
  and a swap-regret bandit, one such FTRL per recommended action ``a`` fed
  :math:`\theta_t(a)\hat\ell_t` (Blum and Mansour), played through the stationary distribution.
* ``stage-v``: Mao, Yang, Zhang and Başar (ICML 2022), stage-based V-learning: the visits of each
  (step, state) in stages of lengths :math:`L_1 = H`, :math:`L_{j+1} = \lfloor(1+1/H)L_j\rfloor`;
  EXP3-IX restarted at each stage
  (:math:`\eta = \sqrt{2\ln A_i/(A_i L_j)}`, :math:`\gamma = \eta/2`); at a stage's end
  :math:`V_h(s) = \min(H-h, \bar y + c\sqrt{H^2A_i/L_j})`, :math:`\bar y` the mean target of the stage.

The bandits are the library's learners (``hedge``, ``bm-hedge``) under the learner protocol, fed
the utility estimate :math:`H(1-\hat\ell)`; so any composition ``LEARNER+UPDATE`` runs the same
way on **bandit feedback** (``feedback="bandit:M"``): rounds of ``M`` episodes of the current
policies, a clock per (step, state) counting the rounds that visit it, the round's visits pooled
into one update there (its mean target and mean loss estimate), the learner's rate ``eta`` and
the update's averaging. V-learning is ``bandit:1`` with its papers' rates.

The whole loop is one ``lax.scan`` over the rounds of a chunk (float64): a round is a scan over
its episodes (each a scan over the steps) and then one over its visits; a batch of seeds is one
``vmap`` of it. Draws: `vlearning_uniforms` (one key per run, ``fold_in`` by purpose and
episode), public so that a reference implementation can be fed the very same numbers.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from typing import NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import ArgumentError
from .._schedules import oftrl_decay, smoothing_order, stage_lengths
from .._suggest import did_you_mean
from ..games import MarkovGame, require_finite_horizon
from ..learners import BM_HEDGE, HEDGE, LearnerSpec
from ..policies import VisitChainPolicy
from ._algorithms import Algorithm, get_algorithm
from ._feedback import MAX_SAMPLES, episode_uniforms, run_key_data, sample_onehot
from ._guard import STRATEGY_TOLERANCE, LearnerOutputError, check_learner, is_guarded
from ._ix import BANDIT_RATES, DEFAULT_BANDIT_RATE, DEFAULT_IX, IX_SCHEDULES, bandit_estimate_moments, parse_bandit_rate, parse_ix
from ._run import max_learning_rate

__all__ = [
    "VLEARNING_ALGORITHMS",
    "VLearningResult",
    "run_vlearning",
    "run_vlearning_batch",
    "vlearning_uniforms",
    "parse_bandit",
    "bandit_estimate_moments",
    "IX_SCHEDULES",
    "DEFAULT_IX",
    "BANDIT_RATES",
    "DEFAULT_BANDIT_RATE",
]

#: The V-learning algorithms (docs/vlearning.md).
VLEARNING_ALGORITHMS: tuple[str, ...] = ("cce-v", "ce-v", "stage-v")
#: Episodes per compiled call (progress is reported between calls). A run's chunks all have this
#: length in rounds, the last one padded with rounds that do nothing, except that a run (or its
#: last part) of at most `_SHORT_CHUNK` episodes takes a chunk of that length: so every run of a
#: configuration uses at most two compiled programs, whatever its number of episodes.
_CHUNK = 8192
_SHORT_CHUNK = 512
#: The stage lengths given to the compiled round cover this many visits of a (step, state),
#: whatever the run's length: their array has one shape for every run (a run of ``K`` rounds
#: reads only the stages its ``K`` visits reach, a prefix of the same sequence).
_STAGE_VISITS = 2**31 - 1
#: Pool a round's visits by comparing its episodes pairwise where ``M^2 <= S * _PAIRS_FACTOR``.
_PAIRS_FACTOR = 1.0
#: Largest record (states, actions, rewards, played policies) a run may keep, in bytes.
MAX_RECORD_BYTES = 8 * 2**30


class _Spec(NamedTuple):
    """What a bandit run does (static for the compiled round; hashable)."""

    name: str
    learner: LearnerSpec
    kernel: str  # the output policy's kernel kind (IndexKernel's)
    order: int  # the smooth update's averaging order k (alpha_c = (k+1)/(k+c)); unused by "stage"
    rates: str  # "vlearning" (cce-v, ce-v), "stage-v", or "constant" (a composition's eta)
    bonus_power: int  # the exponent of A_i in the smooth update's bonus
    optimistic: bool
    per_round: int  # M, episodes per round
    horizon: int
    num_states: int
    num_actions: tuple[int, ...]
    initial_state: int

    @property
    def stage(self) -> bool:
        return self.kernel == "stage"


class _Params(NamedTuple):
    """The run's numbers that are arguments of the compiled round, not constants of it: another
    value does not compile the round again (float64 scalars)."""

    eta: jax.Array  # a composition's learning rate (unused by the papers' schedules)
    gamma: jax.Array  # its IX scale gamma_1
    ix_power: jax.Array  # gamma_c = gamma_1 c^(-ix_power): 0 (constant) or 1/2 (decaying)
    bonus: jax.Array  # c of the optimism bonus
    eta_decaying: jax.Array  # 1: eta_c = min(eta, M / sqrt(c)) (decaying); 0: eta (constant)


class _Player(NamedTuple):
    learner: object  # the learner's state, leading axes (H, S)
    prediction: jax.Array  # (H, S, A): the last utility estimate (optimistic learners' prediction)
    value: jax.Array  # (H + 1, S): V_h(s), row H = 0
    raw: jax.Array  # (H, S): V~ (smooth) or the stage's sum of round targets (stage)


class _State(NamedTuple):
    players: tuple[_Player, ...]
    visits: jax.Array  # (H, S): rounds that visited (h, s)
    in_stage: jax.Array  # (H, S): of them, in the current stage (stage)
    stage: jax.Array  # (H, S): 0-based stage (stage)


def _learners(spec: _Spec) -> list:
    return [spec.learner.learner(-1) for _ in spec.num_actions]


def _initial_state(spec: _Spec) -> _State:
    # NumPy's arrays, but the learners' own states (jax.numpy outside a compiled function compiles
    # a program per operation and shape); the compiled round takes them as device arrays.
    H, S = spec.horizon, spec.num_states
    values = np.vstack([np.broadcast_to((H - np.arange(H, dtype=np.float64))[:, None], (H, S)), np.zeros((1, S))])  # V_H = 0
    value, raw, counts = cast(tuple[jax.Array, ...], (values, np.zeros((H, S)), np.zeros((H, S), np.int32)))
    players = [
        _Player(learner.init((H, S, a), jnp.float64), cast(jax.Array, np.zeros((H, S, a))), value, raw)
        for learner, a in zip(_learners(spec), spec.num_actions, strict=True)
    ]
    return _State(tuple(players), counts, counts, counts)


def _rates(spec: _Spec, params: _Params, c, num_a: int, length):
    """``(eta, decay, gamma)`` of the ``c``-th round that visits a state (``length``: its stage's).

    ``eta`` and ``decay`` are what the learner's ``play`` and ``observe`` get; ``gamma`` is the IX
    parameter of the round's loss estimates. Utilities are in the game's units, ``H (1 - lhat)``.
    """
    H = float(spec.horizon)
    cf = c.astype(jnp.float64)
    log_a = math.log(num_a)
    if spec.rates == "stage-v":
        # EXP3-IX over the stage: eta = sqrt(2 ln A / (A L)) on losses in [0, 1], gamma = eta / 2.
        rate = jnp.sqrt(2.0 * log_a / (num_a * length.astype(jnp.float64)))
        return rate / H, jnp.ones_like(cf), rate / 2.0
    # rho_c = w_{c-1} / w_c = (c-1)/(k+c-1), rho_1 = 0 (w_0 = 0); smooth-uniform's k = 0 too,
    # where the formula reads 0/0 at c = 1 (`oftrl_decay`, as the compiled loop of full feedback).
    decay = oftrl_decay(cf, int(spec.order), int(spec.order))
    if spec.rates == "vlearning":
        # Jin et al.'s FTRL plays softmax(-(eta_{c-1} / w_{c-1}) sum_{j<c} w_j lhat_j); the learner
        # protocol normalises the sum by w_c instead (play gets rho_c G^{c-1}), so the rate it gets
        # is eta_{c-1} / (H rho_c) (in the game's units); at the first visit G = 0 and any rate plays uniformly.
        previous = jnp.maximum(cf - 1.0, 1.0)
        eta_prev = jnp.sqrt(H * log_a / (num_a * previous))
        eta = jnp.where(cf > 1.0, eta_prev / (H * jnp.where(cf > 1.0, decay, 1.0)), 0.0)
        return eta, decay, jnp.sqrt(H * log_a / (num_a * cf))
    # IX: gamma_c = gamma_1 c^(-p), p = 1/2 for the decaying rule (`IX_SCHEDULES`), 0 for a constant.
    gamma = params.gamma * cf ** (-params.ix_power)
    # The rate: eta, or eta_c = min(eta, M / sqrt(c)) (`BANDIT_RATES`); the constant's numbers are
    # those of a run without the schedule, bit for bit (the same value selected). Play weighs an
    # earlier estimate u_j by eta_c w_j / w_c (rho_c G_{c-1}, the smooth update's normalisation by
    # w_c): the step on the sum of equal estimates is eta_c / (k+1), the stage update's eta_c, so
    # eta_c itself is the schedule the effective step follows under either update.
    eta = jnp.full_like(cf, params.eta)
    eta = jnp.where(params.eta_decaying > 0, jnp.minimum(eta, spec.per_round / jnp.sqrt(cf)), eta)
    return eta, (jnp.ones_like(cf) if spec.stage else decay), gamma


def _at(tree, h, s):
    return jax.tree.map(lambda x: x[h, s], tree)


def _play(spec: _Spec, params: _Params, learner, st: _State, i: int, h, s, lengths):
    p, a = st.players[i], spec.num_actions[i]
    eta, decay, gamma = _rates(spec, params, st.visits[h, s] + 1, a, lengths[st.stage[h, s]])
    prediction = p.prediction[h, s] if spec.optimistic else jnp.zeros(a)
    theta, state = learner.play(_at(p.learner, h, s), prediction, eta, decay)
    return theta, state, eta, decay, gamma


def _simulate(spec: _Spec, params: _Params, learners, rewards, transitions, lengths, st: _State, ua, us):
    """The round's ``M`` episodes with the policies fixed: per episode and step the state, the
    joint action, the rewards, the next state and each player's strategy."""

    def episode(_, draws):
        ua_m, us_m = draws

        def step(s, xs):
            h, ua_h, us_h = xs
            thetas = [_play(spec, params, lr, st, i, h, s, lengths)[0] for i, lr in enumerate(learners)]
            acts = [jnp.argmax(sample_onehot(th, ua_h[i], -1)) for i, th in enumerate(thetas)]
            rew = rewards[h][(slice(None), s) + tuple(acts)]  # (N,)
            s_next = jnp.argmax(sample_onehot(transitions[h][(s,) + tuple(acts)], us_h, -1))
            return s_next, (s, jnp.stack(acts), rew, s_next, tuple(thetas))

        _, rec = jax.lax.scan(step, jnp.asarray(spec.initial_state), (jnp.arange(spec.horizon), ua_m, us_m))
        return None, rec

    return jax.lax.scan(episode, None, (ua, us))[1]


def _round(spec: _Spec, params: _Params, rewards, transitions, lengths, st: _State, ua, us):
    """One round: ``M`` episodes, then every visited ``(h, s)`` updated once with the round's means."""
    learners = _learners(spec)
    H, M = spec.horizon, spec.per_round
    states, acts, rews, nexts, thetas = _simulate(spec, params, learners, rewards, transitions, lengths, st, ua, us)
    steps = jnp.arange(H)[None, :]
    # Episodes of the round at the same (h, s): their visits are pooled into one update. Pairs of
    # episodes are compared where M^2 is small against S; otherwise sums go through (H, S) tables.
    pairwise = M * M <= spec.num_states * _PAIRS_FACTOR
    if pairwise:
        same = states[:, None, :] == states[None, :, :]  # (M, M, H)
        count = same.sum(axis=1).astype(jnp.float64)
        earlier = jnp.tril(jnp.ones((M, M), bool), -1)[:, :, None]
        first = ~jnp.any(same & earlier, axis=1)  # (M, H): the round's first visit of its (h, s)

        def pooled(x):  # (M, H, ...) -> the mean over the round's visits of the same (h, s)
            return jnp.einsum("mnh,nh...->mh...", same, x) / count.reshape(count.shape + (1,) * (x.ndim - 2))
    else:
        rows = jnp.broadcast_to(steps, (M, H))
        table_count = jnp.zeros((H, spec.num_states)).at[rows, states].add(1.0)
        count = table_count[rows, states]
        first_episode = jnp.full((H, spec.num_states), M).at[rows, states].min(jnp.broadcast_to(jnp.arange(M)[:, None], (M, H)))
        first = first_episode[rows, states] == jnp.arange(M)[:, None]

        def pooled(x):
            sums = jnp.zeros((H, spec.num_states) + x.shape[2:]).at[rows, states].add(x)
            return sums[rows, states] / count.reshape(count.shape + (1,) * (x.ndim - 2))

    means = []
    for i, p in enumerate(st.players):
        a = spec.num_actions[i]
        y = rews[..., i] + p.value[steps + 1, nexts]  # (M, H): targets with the round's V_{h+1}
        loss = (H - y) / H
        gamma = jax.vmap(jax.vmap(lambda h, s, a=a: _rates(spec, params, st.visits[h, s] + 1, a, lengths[st.stage[h, s]])[2]))(
            jnp.broadcast_to(steps, (M, H)), states
        )
        own = jax.nn.one_hot(acts[..., i], a, dtype=jnp.float64)
        played = jnp.sum(own * thetas[i], axis=-1)
        lhat = own * (loss / (played + gamma))[..., None]  # IX: only the action played is estimated
        means.append((pooled(y), pooled(lhat)))

    def update(cur: _State, slot):
        m, h = slot // H, slot % H
        s = states[m, h]
        keep = first[m, h]  # a later visit of the same (h, s) in this round was pooled into the first

        def kept(new, old):  # the slot writes only where it is its (h, s)'s first visit
            return jax.tree.map(lambda x, y: jnp.where(keep, x, y), new, old)

        c = cur.visits[h, s] + 1
        players = []
        end = jnp.zeros((), bool)
        for i, (lr, p) in enumerate(zip(learners, cur.players, strict=True)):
            a = spec.num_actions[i]
            ybar, lbar = means[i][0][m, h], means[i][1][m, h]
            _, ls, eta, decay, _ = _play(spec, params, lr, cur, i, h, s, lengths)
            utility = H * (1.0 - lbar)  # an estimate of [Q_i pi_-i](s, .) in the game's units (IX)
            ls = lr.observe_with(ls, utility, decay, eta)
            prediction = utility
            if spec.stage:
                length = lengths[cur.stage[h, s]]
                end = cur.in_stage[h, s] + 1 == length
                total = p.raw[h, s] + ybar
                lf = length.astype(jnp.float64)
                v_end = jnp.minimum(H - h, total / lf + params.bonus * jnp.sqrt(float(H) ** 2 * a / lf))
                value = jnp.where(end, v_end, p.value[h, s])
                raw = jnp.where(end, 0.0, total)
                fresh = lr.init((a,), jnp.float64)  # the stage-based update restarts the learner
                ls = jax.tree.map(lambda x, y, end=end: jnp.where(end, x, y), fresh, ls)
                prediction = jnp.where(end, 0.0, prediction)
            else:
                cf = c.astype(jnp.float64)
                alpha = (spec.order + 1.0) / (spec.order + cf)
                beta = params.bonus * jnp.sqrt(float(H) ** 3 * a**spec.bonus_power / cf)
                raw = (1.0 - alpha) * p.raw[h, s] + alpha * (ybar + beta)
                value = jnp.minimum(H - h, raw)
            players.append(
                _Player(
                    jax.tree.map(lambda x, y: x.at[h, s].set(y), p.learner, kept(ls, _at(p.learner, h, s))),
                    p.prediction.at[h, s].set(kept(prediction, p.prediction[h, s])),
                    p.value.at[h, s].set(kept(value, p.value[h, s])),
                    p.raw.at[h, s].set(kept(raw, p.raw[h, s])),
                )
            )
        end = end & keep
        in_stage = cur.in_stage.at[h, s].set(kept(jnp.where(end, 0, cur.in_stage[h, s] + 1), cur.in_stage[h, s]))
        new = _State(
            tuple(players),
            cur.visits.at[h, s].set(kept(c, cur.visits[h, s])),
            in_stage,
            cur.stage.at[h, s].add(end.astype(jnp.int32)),
        )
        return new, None

    st, _ = jax.lax.scan(update, st, jnp.arange(M * H))
    return st, (states, acts, rews, thetas)


def _chunk(spec: _Spec, params: _Params, rewards, transitions, lengths, state: _State, ua, us, active):
    """Rounds ``ua.shape[0]`` in a row (a ``lax.scan``); ``ua`` (C, M, H, N), ``us`` (C, M, H);
    ``active`` (C,): the rounds that are played (the chunk's padding does nothing: the state
    stays, its records are zeros)."""

    def body(st, xs):
        draws, on = xs

        def played(s):
            return _round(spec, params, rewards, transitions, lengths, s, *draws)

        def padding(s):
            records = jax.eval_shape(played, s)[1]
            return s, jax.tree.map(lambda r: jnp.zeros(r.shape, r.dtype), records)

        return jax.lax.cond(on, played, padding, st)

    return jax.lax.scan(body, state, ((ua, us), active))


@partial(jax.jit, static_argnums=0)
def _chunk_batch(spec: _Spec, params: _Params, rewards, transitions, lengths, state: _State, ua, us, active):
    """`_chunk` for a batch of runs (leading run axis of ``state``, ``ua`` and ``us``): one ``vmap``;
    ``active`` is shared by the runs, so the padding's branch stays a branch."""
    return jax.vmap(lambda st, a, b: _chunk(spec, params, rewards, transitions, lengths, st, a, b, active))(state, ua, us)


def vlearning_uniforms(seed, episodes: int, game: MarkovGame, first: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The uniform numbers of episodes ``first..first+episodes-1`` of the run with ``seed``: actions
    ``(K, H, N)`` (``[k, h, i]``: player ``i``'s draw at step ``h``) and next states ``(K, H)``.

    Episode ``k`` uses ``iteration_uniforms(run_key_data(seed), k, VLEARNING_ACTIONS, (H, N))`` and
    ``iteration_uniforms(run_key_data(seed), k, VLEARNING_STATES, (H,))`` (docs/vlearning.md)."""
    episodes = _check_count("episodes", episodes)
    with jax.enable_x64(True):
        ua, us = episode_uniforms(run_key_data(seed), np.uint32(first), episodes, game.horizon, game.num_players)
        return np.asarray(ua), np.asarray(us)


@dataclass(frozen=True, eq=False)
class VLearningResult:
    """What a V-learning (or bandit-feedback) run did and produced (docs/vlearning.md).

    Attributes
    ----------
    algorithm : str
        ``cce-v``, ``ce-v``, ``stage-v`` or a composition ``LEARNER+UPDATE``.
    episodes, feedback, seed, bonus, eta, bandit_rate, ix, ix_schedule, optimistic
        The run's settings (``seed`` is None when the draws were passed in). ``bandit_rate`` is
        the learning rate's rule (`BANDIT_RATES`): ``"decaying"``, ``eta_c = min(eta, M / sqrt(c))``
        at a state's ``c``-th visiting round (the default), or ``"constant"``. ``ix`` is the implicit
        exploration's scale ``gamma_1`` and ``ix_schedule`` its rule (`IX_SCHEDULES`):
        ``"decaying"``, ``gamma_c = ix / sqrt(c)`` at a state's ``c``-th visiting round (the default,
        ``ix = eta H / 2``), or ``"constant"``, ``gamma_c = ix``. ``eta``, ``bandit_rate``, ``ix``
        and ``ix_schedule`` are None where the papers' schedules set the rates.
    states : ndarray (E, H)
        The state of every episode at every step.
    actions, rewards : ndarray (E, H, N)
        The joint action played and every player's reward.
    played : tuple of ndarray (E, H, A_i)
        Each player's strategy at the visited state (the one it drew from).
    value_estimates : tuple of ndarray (H, S)
        Each player's final (optimistic) value estimates ``V_h(s)``.
    counts : ndarray (H, S)
        Rounds that visited every (step, state).
    """

    algorithm: str
    episodes: int
    feedback: str
    seed: int | None
    bonus: float
    eta: float | None
    bandit_rate: str | None
    ix: float | None
    ix_schedule: str | None
    optimistic: bool
    kernel: str
    num_states: int
    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    played: tuple[np.ndarray, ...]
    value_estimates: tuple[np.ndarray, ...]
    counts: np.ndarray
    wall_time_s: float = 0.0

    @property
    def horizon(self) -> int:
        return int(self.states.shape[1])

    @property
    def episodes_per_round(self) -> int:
        """``M`` of ``bandit:M``."""
        return int(self.feedback.partition(":")[2])

    @property
    def rounds(self) -> int:
        """The learners' updates: ``episodes / M`` (the output policy's index runs over them)."""
        return self.episodes // self.episodes_per_round

    @property
    def samples_used(self) -> int:
        """Transitions sampled: ``H`` per episode."""
        return int(self.episodes * self.horizon)

    @cached_property
    def policy(self) -> VisitChainPolicy:
        """The output policy after all rounds (``.prefix(K)`` after ``K`` rounds)."""
        return VisitChainPolicy.from_episodes(self.kernel, self.num_states, self.states, self.played, self.episodes_per_round)


def _check_count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def parse_bandit(text) -> int:
    """``M`` of the feedback model ``bandit:M`` (``M`` episodes per round, 1..2^20)."""
    kind, sep, count = str(text).partition(":") if isinstance(text, str) else ("", "", "")
    if kind != "bandit" or not sep or not count.isdigit() or not 1 <= int(count) <= MAX_SAMPLES:
        raise ValueError(
            f"feedback must be 'bandit:M' with M (episodes per round) an integer from 1 to {MAX_SAMPLES}, got {text!r}"
        )
    return int(count)


def _number(name: str, value, low: float, low_open: bool) -> float:
    bad = isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value))
    if bad or float(value) < low or (low_open and float(value) == low):
        raise ValueError(f"{name} must be a finite number {'>' if low_open else '>='} {low:g}, got {value!r}")
    return float(value)


class _Numbers(NamedTuple):
    """The run's settings that `_Params` carries into the compiled round, as the result records them."""

    eta: float | None  # None: the papers' schedules
    ix: float | None  # gamma_1, the IX scale (None: the papers' schedules)
    ix_schedule: str | None  # a key of IX_SCHEDULES (None: the papers' schedules)
    bonus: float
    bandit_rate: str | None = None  # one of BANDIT_RATES (None: the papers' schedules)

    def params(self) -> _Params:
        eta = 0.0 if self.eta is None else self.eta
        gamma = 0.0 if self.ix is None else self.ix
        power = 0.0 if self.ix_schedule is None else IX_SCHEDULES[self.ix_schedule]
        decaying = float(self.bandit_rate == "decaying")
        return _Params(*(jnp.asarray(x, jnp.float64) for x in (eta, gamma, power, self.bonus, decaying)))


def _make_spec(
    game: MarkovGame, algorithm, episodes, feedback, bonus, eta, ix, optimistic, bandit_rate=None
) -> tuple[_Spec, _Numbers, int]:
    require_finite_horizon(game, "game")
    if not isinstance(game, MarkovGame):
        raise TypeError(f"game must be a MarkovGame, got {type(game).__name__}")
    episodes = _check_count("episodes", episodes)
    per_round = parse_bandit(feedback)
    if episodes % per_round:
        raise ValueError(f"episodes = {episodes} is not a multiple of the {per_round} episodes per round of {feedback!r}")
    H = game.horizon
    if algorithm in VLEARNING_ALGORITHMS:
        if eta is not None or ix is not None or bandit_rate is not None:
            raise ValueError(
                f"{algorithm} uses its paper's rates (docs/vlearning.md); eta, bandit_rate and ix are for compositions "
                "LEARNER+UPDATE"
            )
        learner = BM_HEDGE if algorithm == "ce-v" else HEDGE
        kernel = "stage" if algorithm == "stage-v" else "smooth"
        rates = "stage-v" if algorithm == "stage-v" else "vlearning"
        bonus = 1.0 if bonus is None else bonus
        optimistic = False if optimistic is None else optimistic
        power, name = (2 if algorithm == "ce-v" else 1), str(algorithm)
        eta_value = 0.0
    else:
        try:
            composition = get_algorithm(algorithm)
        except ValueError as err:
            # A composition's own error says which part is wrong ("mwu+stage" is not "stage-v").
            hint = "" if "+" in str(algorithm) else did_you_mean(str(algorithm), VLEARNING_ALGORITHMS)
            if hint:
                raise ValueError(
                    f"unknown algorithm {algorithm!r}{hint}; the V-learning algorithms are "
                    f"{', '.join(VLEARNING_ALGORITHMS)}, or give a composition LEARNER+UPDATE"
                ) from None
            raise ValueError(f"{err}; or a V-learning algorithm: {', '.join(VLEARNING_ALGORITHMS)}") from None
        learner = composition.learner
        if learner.learner().propose is not None:
            raise ValueError(
                f"learner {learner.name!r} makes two utility queries per iteration; under bandit feedback "
                "each round's episodes answer one"
            )
        check_learner(learner, (game.num_players, H, game.num_states, tuple(game.num_actions)), np.float64)
        kernel = composition.value_update.index_kernel
        rates, power, name = "constant", 1, composition.name
        eta_value = 0.2 if eta is None else _number("eta", eta, 0.0, True)
        # The limit of run's rates (max_learning_rate) with T the rounds: a learner's logits are
        # eta times sums of at most that many utilities of each state.
        largest = max_learning_rate(episodes // per_round, H, "float64")
        if eta_value > largest:
            raise ArgumentError.for_argument(
                "eta",
                f"{eta_value:g} is too large for {episodes // per_round:,} rounds in float64; at most {largest:.3g} (the "
                "learners' logits eta (T + H) must stay where float64 resolves them; markovgames.dynamics.max_learning_rate)",
            )
        ix_value, ix_schedule = parse_ix(ix, eta_value, H)
        eta_rule = parse_bandit_rate(bandit_rate)
        bonus = 0.0 if bonus is None else bonus
        optimistic = True if optimistic is None else optimistic
    bonus = _number("bonus", bonus, 0.0, False)
    if not isinstance(optimistic, bool):
        raise ValueError(f"optimistic must be True or False, got {optimistic!r}")
    per_episode = H * (2 * game.num_players * 8 + 16 + 8 * sum(game.num_actions))
    if episodes * per_episode > MAX_RECORD_BYTES:
        raise ValueError(
            f"episodes = {episodes:,}: the run's record would take {episodes * per_episode / 2**30:.1f} GiB, "
            f"above {MAX_RECORD_BYTES / 2**30:.0f} GiB"
        )
    order = smoothing_order(kernel, H) if kernel != "stage" else H
    spec = _Spec(
        name,
        learner,
        kernel,
        order,
        rates,
        power,
        optimistic,
        per_round,
        H,
        game.num_states,
        tuple(game.num_actions),
        game.initial_state,
    )
    if rates == "constant":  # the IX used: by default EXP3-IX's eta / 2 in loss units, decaying
        numbers = _Numbers(eta_value, ix_value, ix_schedule, bonus, eta_rule)
    else:
        numbers = _Numbers(None, None, None, bonus)
    return spec, numbers, episodes


def _game_arrays(game: MarkovGame):
    lengths = np.asarray(stage_lengths(game.horizon, _STAGE_VISITS), dtype=np.int32)
    return (
        jax.device_put(np.asarray(game.rewards, np.float64)),
        jax.device_put(np.asarray(game.transitions, np.float64)),
        jax.device_put(lengths),
    )


def _check_played(spec: _Spec, played, states, first: int, seeds) -> None:
    """A learner that is not built in is checked where it runs: every strategy it played (``played``
    and ``states``: a chunk's record, whose first episode is episode ``first + 1``)."""
    if not is_guarded(spec.learner):
        return
    tol = STRATEGY_TOLERANCE["float64"]
    for i, p in enumerate(played):
        bad = ~np.isfinite(p).all(axis=-1) | (p.min(axis=-1) < -tol) | (np.abs(p.sum(axis=-1) - 1) > tol)
        if bad.any():
            r, e, h = (int(x) for x in np.argwhere(bad)[0])
            run = f", the run of seed {seeds[r]}" if len(seeds) > 1 else ""
            raise LearnerOutputError(
                f"learner {spec.learner.name!r} played a strategy that is not a probability vector at episode "
                f"{first + e + 1}, step {h}, state {int(states[r, e, h])} (player {i}{run}): {p[r, e, h]}"
            )


def _chunks(rounds: int, per_round: int) -> list[tuple[int, int]]:
    """``(rounds played, chunk length)`` of each compiled call of a run of ``rounds`` rounds: chunks
    of `_CHUNK` episodes, the last one padded, or of `_SHORT_CHUNK` episodes where what is left fits
    (two chunk lengths in all, whatever ``rounds``: another number of episodes compiles nothing new)."""
    long = max(1, _CHUNK // per_round)
    short = min(long, max(1, _SHORT_CHUNK // per_round))
    plan = []
    while rounds > 0:
        length = short if rounds <= short else long
        size = min(rounds, length)
        plan.append((size, length))
        rounds -= size
    return plan


def _run(
    game, spec: _Spec, numbers: _Numbers, episodes: int, seeds: Sequence[int | None], draws, progress
) -> list[VLearningResult]:
    runs, M = len(seeds), spec.per_round
    rounds = episodes // M
    start = time.perf_counter()
    with jax.enable_x64(True):
        rewards, transitions, lengths = _game_arrays(game)
        params = numbers.params()
        # On the CPU NumPy makes the chunks' inputs (the uniforms' arrays are views of the host's
        # memory) rather than a small program per operation and shape; elsewhere the device does.
        on_host = jax.default_backend() == "cpu"
        xp = np if on_host else jnp
        state = jax.tree.map(lambda x: xp.broadcast_to(xp.asarray(x), (runs,) + x.shape), _initial_state(spec))
        keys = [run_key_data(s) for s in seeds] if draws is None else None
        parts = []
        done = 0  # rounds
        H, N = spec.horizon, len(spec.num_actions)
        for size, length in _chunks(rounds, M):
            first, count = done * M, size * M  # episodes first + 1 .. first + count are played
            if draws is None:
                assert keys is not None
                drawn = [episode_uniforms(k, np.uint32(first + 1), length * M, H, N) for k in keys]
                ua = xp.stack([xp.asarray(d[0]) for d in drawn])
                us = xp.stack([xp.asarray(d[1]) for d in drawn])
            else:
                pad = ((0, (length - size) * M), (0, 0))
                ua = xp.asarray(np.pad(draws[0][first : first + count], pad + ((0, 0),))[None])
                us = xp.asarray(np.pad(draws[1][first : first + count], pad)[None])
            ua = ua.reshape((runs, length, M, H, N))
            us = us.reshape((runs, length, M, H))
            active = np.arange(length) < size
            state, rec = _chunk_batch(spec, params, rewards, transitions, lengths, state, ua, us, active)
            # (runs, rounds, M, H, ...) -> (runs, episodes, H, ...), the padding's rounds left out
            rec = jax.tree.map(
                lambda x, size=size, count=count: np.asarray(x)[:, :size].reshape((runs, count) + x.shape[3:]),
                jax.device_get(rec),
            )
            _check_played(spec, rec[3], rec[0], first, seeds)
            parts.append(rec)
            done += size
            if progress is not None:
                progress(done * M)
        states, actions, rews, played = jax.tree.map(lambda *xs: np.concatenate(xs, axis=1), *parts)
        state = jax.device_get(state)
    wall = time.perf_counter() - start
    out = []
    for r, seed in enumerate(seeds):
        out.append(
            VLearningResult(
                algorithm=spec.name,
                episodes=episodes,
                feedback=f"bandit:{M}",
                seed=seed,
                bonus=numbers.bonus,
                eta=numbers.eta,
                bandit_rate=numbers.bandit_rate,
                ix=numbers.ix,
                ix_schedule=numbers.ix_schedule,
                optimistic=spec.optimistic,
                kernel=spec.kernel,
                num_states=spec.num_states,
                states=states[r].astype(np.int64),
                actions=actions[r].astype(np.int64),
                rewards=rews[r],
                played=tuple(p[r] for p in played),
                value_estimates=tuple(np.asarray(p.value[r, :-1]) for p in state.players),
                counts=np.asarray(state.visits[r]).astype(np.int64),
                wall_time_s=wall,
            )
        )
    return out


def _check_draws(game: MarkovGame, episodes: int, draws):
    try:
        ua, us = (np.asarray(d, dtype=np.float64) for d in draws)
    except (TypeError, ValueError):
        raise ValueError("draws must be a pair of arrays (action uniforms (E, H, N), state uniforms (E, H))") from None
    want = ((episodes, game.horizon, game.num_players), (episodes, game.horizon))
    if (ua.shape, us.shape) != want:
        raise ValueError(f"draws: expected shapes {want[0]} and {want[1]}, got {ua.shape} and {us.shape}")
    if not (np.all((ua >= 0) & (ua < 1)) and np.all((us >= 0) & (us < 1))):
        raise ValueError("draws: every uniform number must be in [0, 1)")
    return ua, us


def run_vlearning(
    game: MarkovGame,
    algorithm: str | Algorithm,
    episodes: int,
    *,
    seed: int = 0,
    feedback: str = "bandit:1",
    bonus: float | None = None,
    eta: float | None = None,
    bandit_rate: str | None = None,
    ix: float | str | None = None,
    optimistic: bool | None = None,
    draws: tuple | None = None,
    progress: Callable[[int], None] | None = None,
) -> VLearningResult:
    """Run V-learning, or a composition on bandit feedback, for ``episodes`` episodes (docs/vlearning.md).

    Parameters
    ----------
    game : MarkovGame
    algorithm : ``"cce-v"``, ``"ce-v"``, ``"stage-v"`` (`VLEARNING_ALGORITHMS`, with their papers'
        rates), or a composition ``LEARNER+UPDATE`` (any learner of one utility query; its update's
        averaging and output kernel, on per-state visit counts), by name or as an ``Algorithm``.
    episodes : int
        A multiple of ``M``.
    seed : int
        The run's seed (one key, `vlearning_uniforms`).
    feedback : ``"bandit:M"``
        ``M`` episodes per round (the learners update once per round, with the round's means).
    bonus : float
        ``c`` of the optimism bonus (default 1 for V-learning, 0 for compositions; 0 switches it off).
    eta : float
        A composition's learning rate, in the game's units (default 0.2, the paper's).
    bandit_rate : ``"decaying"`` or ``"constant"``
        A composition's rate at a state's ``c``-th visiting round: ``"decaying"`` (the default),
        ``eta_c = min(eta, M / sqrt(c))``, the constant ``eta`` until ``c = (M / eta)^2``, then
        EXP3's anytime ``1/sqrt(c)`` decay; ``"constant"``, ``eta_c = eta``. See `BANDIT_RATES`.
    ix : float or ``"decaying"``
        A composition's implicit exploration ``gamma_c`` at a state's ``c``-th visiting round:
        ``"decaying"`` (the default), ``gamma_c = (eta H / 2) / sqrt(c)``, EXP3-IX's ``eta_t / 2``
        with rates decreasing like ``1/sqrt(t)`` (Neu 2015), whose bias vanishes; a number ``G``,
        the constant ``gamma_c = G`` (``0``: unbiased estimates). See `IX_SCHEDULES`.
    optimistic : bool
        Whether a learner's prediction is its last utility estimate at the state (default: True
        for compositions, False for V-learning).
    draws : pair of arrays, optional
        The uniform numbers to use instead of the seed's, as `vlearning_uniforms` returns them.
    progress : called with the number of finished episodes after each chunk.
    """
    spec, numbers, episodes = _make_spec(game, algorithm, episodes, feedback, bonus, eta, ix, optimistic, bandit_rate)
    if draws is not None:
        return _run(game, spec, numbers, episodes, [None], _check_draws(game, episodes, draws), progress)[0]
    run_key_data(seed)  # checks the seed
    return _run(game, spec, numbers, episodes, [int(seed)], None, progress)[0]


def check_vlearning_settings(
    game: MarkovGame,
    algorithm: str,
    episodes: int,
    *,
    feedback: str = "bandit:1",
    bonus: float | None = None,
    eta: float | None = None,
    ix: float | str | None = None,
    optimistic: bool | None = None,
    bandit_rate: str | None = None,
) -> None:
    """Raise the ``ValueError`` that `run_vlearning` would raise for these settings, without running
    (a command checks its options before it writes anything)."""
    _make_spec(game, algorithm, episodes, feedback, bonus, eta, ix, optimistic, bandit_rate)


def run_vlearning_batch(
    game: MarkovGame,
    algorithm: str | Algorithm,
    episodes: int,
    seeds: Sequence[int],
    *,
    feedback: str = "bandit:1",
    bonus: float | None = None,
    eta: float | None = None,
    bandit_rate: str | None = None,
    ix: float | str | None = None,
    optimistic: bool | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[VLearningResult]:
    """Runs for several seeds in one compiled call; run ``r`` equals ``run_vlearning(..., seed=seeds[r])``
    (its draws, states and actions exactly; its strategies to rounding)."""
    spec, numbers, episodes = _make_spec(game, algorithm, episodes, feedback, bonus, eta, ix, optimistic, bandit_rate)
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds: need at least one seed")
    for s in seeds:
        run_key_data(s)
    return _run(game, spec, numbers, episodes, [int(s) for s in seeds], None, progress)
