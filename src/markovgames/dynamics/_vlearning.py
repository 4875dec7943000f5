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
* ``stage-v``: Mao and Başar (2022): the visits of each (step, state) in stages of lengths
  :math:`L_1 = H`, :math:`L_{j+1} = \lfloor(1+1/H)L_j\rfloor`; EXP3-IX restarted at each stage
  (:math:`\eta = \sqrt{2\ln A_i/(A_i L_j)}`, :math:`\gamma = \eta/2`); at a stage's end
  :math:`V_h(s) = \min(H-h, \bar y + c\sqrt{H^2A_i/L_j})`, :math:`\bar y` the mean target of the stage.

The whole episode loop is one ``lax.scan`` per chunk of episodes (float64); a batch of seeds is
one ``vmap`` of it. Draws: `vlearning_uniforms` (one key per run, ``fold_in`` by purpose and
episode), public so that a reference implementation can be fed the very same numbers.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._schedules import stage_lengths
from .._suggest import did_you_mean
from ..games import MarkovGame
from ..learners._regularizers import stationary_distribution
from ..policies import VisitChainPolicy
from ._feedback import iteration_uniforms, run_key_data, sample_onehot

__all__ = [
    "VLEARNING_ALGORITHMS",
    "VLEARNING_ACTIONS",
    "VLEARNING_STATES",
    "VLearningResult",
    "run_vlearning",
    "run_vlearning_batch",
    "vlearning_uniforms",
]

#: The V-learning algorithms (docs/vlearning.md).
VLEARNING_ALGORITHMS: tuple[str, ...] = ("cce-v", "ce-v", "stage-v")
#: The purposes of V-learning's draws (``fold_in``; sampled feedback uses 0..2).
VLEARNING_ACTIONS = 3
VLEARNING_STATES = 4
#: The output policy's kernel of each algorithm.
_KERNELS = {"cce-v": "smooth", "ce-v": "smooth", "stage-v": "stage"}
#: Episodes per compiled call (progress is reported between calls).
_CHUNK = 8192
#: Largest record (states, actions, rewards, played policies) a run may keep, in bytes.
MAX_RECORD_BYTES = 8 * 2**30


class _Player(NamedTuple):
    value: jax.Array  # (H + 1, S): V_h(s), row H = 0
    raw: jax.Array  # (H, S): V~ (cce-v, ce-v) or the stage's sum of targets (stage-v)
    weights: jax.Array  # (H, S, A) weighted loss estimates (G or the stage's sum); (H, S, A, A) for ce-v
    theta: jax.Array  # (H, S, A): the bandit's current distribution


class _State(NamedTuple):
    players: tuple[_Player, ...]
    visits: jax.Array  # (H, S) visits
    in_stage: jax.Array  # (H, S) visits in the current stage (stage-v)
    stage: jax.Array  # (H, S) 0-based stage (stage-v)


class _Config(NamedTuple):
    algorithm: str
    horizon: int
    num_states: int
    num_actions: tuple[int, ...]
    initial_state: int
    bonus: float


def _initial_state(config: _Config) -> _State:
    H, S = config.horizon, config.num_states
    players = []
    for a in config.num_actions:
        value = jnp.concatenate([jnp.broadcast_to((H - jnp.arange(H, dtype=jnp.float64))[:, None], (H, S)), jnp.zeros((1, S))])
        wshape = (H, S, a, a) if config.algorithm == "ce-v" else (H, S, a)
        players.append(_Player(value, jnp.zeros((H, S)), jnp.zeros(wshape), jnp.full((H, S, a), 1.0 / a)))
    zeros = jnp.zeros((H, S), jnp.int32)
    return _State(tuple(players), zeros, zeros, zeros)


def _smooth_update(config: _Config, p: _Player, h, s, a, y, t, num_a: int) -> _Player:
    """One visit of CCE-V or CE-V learning at ``(h, s)``: the ``t``-th."""
    H = float(config.horizon)
    tf = t.astype(jnp.float64)
    alpha = (H + 1.0) / (H + tf)
    power = 2.0 if config.algorithm == "ce-v" else 1.0
    beta = config.bonus * jnp.sqrt(H**3 * num_a**power / tf)
    raw = (1.0 - alpha) * p.raw[h, s] + alpha * (y + beta)
    value = jnp.minimum(H - h, raw)
    loss = (H - y) / H
    eta = jnp.sqrt(H * math.log(num_a) / (num_a * tf))
    theta = p.theta[h, s]
    lhat = jnp.where(jnp.arange(num_a) == a, loss / (theta + eta), 0.0)  # gamma_t = eta_t
    rho = (tf - 1.0) / (H + tf - 1.0)  # w_{t-1} / w_t: G = sum_j w_j lhat_j / w_t stays O(1)
    if config.algorithm == "ce-v":
        weights = rho * p.weights[h, s] + theta[:, None] * lhat[None, :]
        new_theta = stationary_distribution(jax.nn.softmax(-eta * weights, axis=-1))
    else:
        weights = rho * p.weights[h, s] + lhat
        new_theta = jax.nn.softmax(-eta * weights)
    return _Player(
        p.value.at[h, s].set(value),
        p.raw.at[h, s].set(raw),
        p.weights.at[h, s].set(weights),
        p.theta.at[h, s].set(new_theta),
    )


def _stage_update(config: _Config, p: _Player, h, s, a, y, length, end, num_a: int) -> _Player:
    """One visit of stage-based V-learning at ``(h, s)``, in a stage of ``length`` visits (``end``: its last)."""
    H = float(config.horizon)
    total = p.raw[h, s] + y
    loss = (H - y) / H
    eta = jnp.sqrt(2.0 * math.log(num_a) / (num_a * length))
    theta = p.theta[h, s]
    lhat = jnp.where(jnp.arange(num_a) == a, loss / (theta + eta / 2.0), 0.0)
    weights = p.weights[h, s] + lhat
    new_theta = jax.nn.softmax(-eta * weights)
    stage_value = jnp.minimum(H - h, total / length + config.bonus * jnp.sqrt(H**2 * num_a / length))
    return _Player(
        p.value.at[h, s].set(jnp.where(end, stage_value, p.value[h, s])),
        p.raw.at[h, s].set(jnp.where(end, 0.0, total)),
        p.weights.at[h, s].set(jnp.where(end, 0.0, weights)),
        p.theta.at[h, s].set(jnp.where(end, 1.0 / num_a, new_theta)),
    )


def _episode(config: _Config, rewards, transitions, lengths, state: _State, ua, us):
    """One episode from the initial state: ``ua`` (H, N) and ``us`` (H,) its uniform numbers."""

    def step(carry, xs):
        st, s = carry
        h, ua_h, us_h = xs
        thetas = [p.theta[h, s] for p in st.players]
        acts = [jnp.argmax(sample_onehot(th, ua_h[i], -1)) for i, th in enumerate(thetas)]
        rew = rewards[h][(slice(None), s) + tuple(acts)]  # (N,)
        s_next = jnp.argmax(sample_onehot(transitions[h][(s,) + tuple(acts)], us_h, -1))
        t = st.visits[h, s] + 1
        players = []
        if config.algorithm == "stage-v":
            m = st.in_stage[h, s] + 1
            length = lengths[st.stage[h, s]]
            end = m == length
            for i, p in enumerate(st.players):
                y = rew[i] + p.value[h + 1, s_next]
                players.append(_stage_update(config, p, h, s, acts[i], y, length.astype(jnp.float64), end, config.num_actions[i]))
            in_stage = st.in_stage.at[h, s].set(jnp.where(end, 0, m))
            stage = st.stage.at[h, s].add(end.astype(jnp.int32))
        else:
            for i, p in enumerate(st.players):
                y = rew[i] + p.value[h + 1, s_next]
                players.append(_smooth_update(config, p, h, s, acts[i], y, t, config.num_actions[i]))
            in_stage, stage = st.in_stage, st.stage
        new = _State(tuple(players), st.visits.at[h, s].set(t), in_stage, stage)
        return (new, s_next), (s, jnp.stack(acts), rew, tuple(thetas))

    xs = (jnp.arange(config.horizon), ua, us)
    (state, _), record = jax.lax.scan(step, (state, jnp.asarray(config.initial_state)), xs)
    return state, record


def _chunk(config: _Config, rewards, transitions, lengths, state: _State, ua, us):
    """Episodes ``ua.shape[0]`` in a row (a ``lax.scan``)."""

    def body(st, draws):
        return _episode(config, rewards, transitions, lengths, st, *draws)

    return jax.lax.scan(body, state, (ua, us))


@partial(jax.jit, static_argnums=0)
def _chunk_batch(config: _Config, rewards, transitions, lengths, state: _State, ua, us):
    """`_chunk` for a batch of runs (leading run axis of ``state``, ``ua`` and ``us``): one ``vmap``."""
    return jax.vmap(lambda st, a, b: _chunk(config, rewards, transitions, lengths, st, a, b))(state, ua, us)


@partial(jax.jit, static_argnums=(2, 3, 4))
def _uniforms(key_data, first, size: int, horizon: int, num_players: int):
    episodes = first + jnp.arange(size, dtype=jnp.uint32)
    ua = jax.vmap(lambda k: iteration_uniforms(key_data, k, VLEARNING_ACTIONS, (horizon, num_players), jnp.float64))(episodes)
    us = jax.vmap(lambda k: iteration_uniforms(key_data, k, VLEARNING_STATES, (horizon,), jnp.float64))(episodes)
    return ua, us


def vlearning_uniforms(seed, episodes: int, game: MarkovGame, first: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The uniform numbers of episodes ``first..first+episodes-1`` of the run with ``seed``: actions
    ``(K, H, N)`` (``[k, h, i]``: player ``i``'s draw at step ``h``) and next states ``(K, H)``.

    Episode ``k`` uses ``iteration_uniforms(run_key_data(seed), k, VLEARNING_ACTIONS, (H, N))`` and
    ``iteration_uniforms(run_key_data(seed), k, VLEARNING_STATES, (H,))`` (docs/vlearning.md)."""
    episodes = _check_count("episodes", episodes)
    with jax.enable_x64(True):
        ua, us = _uniforms(run_key_data(seed), np.uint32(first), episodes, game.horizon, game.num_players)
        return np.asarray(ua), np.asarray(us)


@dataclass(frozen=True, eq=False)
class VLearningResult:
    """What a V-learning run did and produced (docs/vlearning.md).

    Attributes
    ----------
    algorithm, episodes, seed, bonus
        The run's settings (``seed`` is None when the draws were passed in).
    states : ndarray (K, H)
        The state of every episode at every step.
    actions, rewards : ndarray (K, H, N)
        The joint action played and every player's reward.
    played : tuple of ndarray (K, H, A_i)
        Each player's bandit distribution at the visited state (the one it drew from).
    value_estimates : tuple of ndarray (H, S)
        Each player's final (optimistic) value estimates ``V_h(s)``.
    counts : ndarray (H, S)
        Visits of every (step, state).
    """

    algorithm: str
    episodes: int
    seed: int | None
    bonus: float
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
    def samples_used(self) -> int:
        """Transitions sampled: ``H`` per episode."""
        return int(self.episodes * self.horizon)

    @cached_property
    def policy(self) -> VisitChainPolicy:
        """The output policy after all episodes (``.prefix(K)`` for fewer)."""
        return VisitChainPolicy(_KERNELS[self.algorithm], self.num_states, self.states, self.played)


def _check_count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _check(game: MarkovGame, algorithm, episodes, bonus) -> tuple[_Config, int]:
    if not isinstance(game, MarkovGame):
        raise TypeError(f"game must be a MarkovGame, got {type(game).__name__}")
    if algorithm not in VLEARNING_ALGORITHMS:
        raise ValueError(
            f"unknown V-learning algorithm {algorithm!r}; known: {', '.join(VLEARNING_ALGORITHMS)}"
            + did_you_mean(str(algorithm), VLEARNING_ALGORITHMS)
        )
    episodes = _check_count("episodes", episodes)
    if isinstance(bonus, bool) or not isinstance(bonus, numbers.Real) or not (0.0 <= float(bonus) < math.inf):
        raise ValueError(f"bonus must be a finite number >= 0, got {bonus!r}")
    per_episode = game.horizon * (2 * game.num_players * 8 + 8 + 8 * sum(game.num_actions))
    if episodes * per_episode > MAX_RECORD_BYTES:
        raise ValueError(
            f"episodes = {episodes:,}: the run's record would take {episodes * per_episode / 2**30:.1f} GiB, "
            f"above {MAX_RECORD_BYTES / 2**30:.0f} GiB"
        )
    config = _Config(str(algorithm), game.horizon, game.num_states, tuple(game.num_actions), game.initial_state, float(bonus))
    return config, episodes


def _game_arrays(game: MarkovGame, episodes: int):
    lengths = np.asarray(stage_lengths(game.horizon, episodes), dtype=np.int32)
    return (
        jax.device_put(np.asarray(game.rewards, np.float64)),
        jax.device_put(np.asarray(game.transitions, np.float64)),
        jax.device_put(lengths),
    )


def _results(config, episodes, seeds, bonus, state, records, wall) -> list[VLearningResult]:
    states, actions, rewards, played = records
    out = []
    for r, seed in enumerate(seeds):
        out.append(
            VLearningResult(
                algorithm=config.algorithm,
                episodes=episodes,
                seed=seed,
                bonus=float(bonus),
                num_states=config.num_states,
                states=states[r].astype(np.int64),
                actions=actions[r].astype(np.int64),
                rewards=rewards[r],
                played=tuple(p[r] for p in played),
                value_estimates=tuple(np.asarray(p.value[r, :-1]) for p in state.players),
                counts=np.asarray(state.visits[r]).astype(np.int64),
                wall_time_s=wall,
            )
        )
    return out


def _run(game, algorithm, episodes, bonus, seeds: Sequence[int | None], draws, progress) -> list[VLearningResult]:
    config, episodes = _check(game, algorithm, episodes, bonus)
    runs = len(seeds)
    start = time.perf_counter()
    with jax.enable_x64(True):
        rewards, transitions, lengths = _game_arrays(game, episodes)
        state = jax.tree.map(lambda x: jnp.broadcast_to(x, (runs,) + x.shape), _initial_state(config))
        keys = [run_key_data(s) for s in seeds] if draws is None else None
        parts = []
        done = 0
        while done < episodes:
            size = min(_CHUNK, episodes - done)
            if draws is None:
                assert keys is not None
                drawn = [_uniforms(k, np.uint32(done + 1), size, config.horizon, len(config.num_actions)) for k in keys]
                ua = jnp.stack([d[0] for d in drawn])
                us = jnp.stack([d[1] for d in drawn])
            else:
                ua = jnp.asarray(draws[0][done : done + size])[None]
                us = jnp.asarray(draws[1][done : done + size])[None]
            state, rec = _chunk_batch(config, rewards, transitions, lengths, state, ua, us)
            parts.append(jax.device_get(rec))
            done += size
            if progress is not None:
                progress(done)
        records = jax.tree.map(lambda *xs: np.concatenate(xs, axis=1), *parts)
        state = jax.device_get(state)
    return _results(config, episodes, seeds, bonus, state, records, time.perf_counter() - start)


def _check_draws(game: MarkovGame, episodes: int, draws):
    try:
        ua, us = (np.asarray(d, dtype=np.float64) for d in draws)
    except (TypeError, ValueError):
        raise ValueError("draws must be a pair of arrays (action uniforms (K, H, N), state uniforms (K, H))") from None
    want = ((episodes, game.horizon, game.num_players), (episodes, game.horizon))
    if (ua.shape, us.shape) != want:
        raise ValueError(f"draws: expected shapes {want[0]} and {want[1]}, got {ua.shape} and {us.shape}")
    if not (np.all((ua >= 0) & (ua < 1)) and np.all((us >= 0) & (us < 1))):
        raise ValueError("draws: every uniform number must be in [0, 1)")
    return ua, us


def run_vlearning(
    game: MarkovGame,
    algorithm: str,
    episodes: int,
    *,
    seed: int = 0,
    bonus: float = 1.0,
    draws: tuple | None = None,
    progress: Callable[[int], None] | None = None,
) -> VLearningResult:
    """Run V-learning for ``episodes`` episodes (docs/vlearning.md).

    Parameters
    ----------
    game : MarkovGame
    algorithm : ``"cce-v"``, ``"ce-v"`` or ``"stage-v"`` (`VLEARNING_ALGORITHMS`).
    episodes : int
    seed : int
        The run's seed (one key, `vlearning_uniforms`).
    bonus : float
        ``c`` of the optimism bonus (``0`` switches it off).
    draws : pair of arrays, optional
        The uniform numbers to use instead of the seed's, as `vlearning_uniforms` returns them (for
        reference implementations and tests).
    progress : called with the number of finished episodes after each chunk.
    """
    if draws is not None:
        episodes = _check_count("episodes", episodes)
        draws = _check_draws(game, episodes, draws)
        return _run(game, algorithm, episodes, bonus, [None], draws, progress)[0]
    run_key_data(seed)  # checks the seed
    return _run(game, algorithm, episodes, bonus, [int(seed)], None, progress)[0]


def run_vlearning_batch(
    game: MarkovGame,
    algorithm: str,
    episodes: int,
    seeds: Sequence[int],
    *,
    bonus: float = 1.0,
    progress: Callable[[int], None] | None = None,
) -> list[VLearningResult]:
    """Runs of V-learning for several seeds in one compiled call; run ``r`` equals
    ``run_vlearning(..., seed=seeds[r])``."""
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds: need at least one seed")
    for s in seeds:
        run_key_data(s)
    return _run(game, algorithm, episodes, bonus, [int(s) for s in seeds], None, progress)
