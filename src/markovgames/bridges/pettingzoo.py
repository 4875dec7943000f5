r"""PettingZoo bridge: any Markov game as a PettingZoo ``ParallelEnv``, and a mediator that plays correlated policies in it.

Needs PettingZoo and Gymnasium (``pip install "markovgames[pettingzoo]"``); importing this module
without them raises `MissingOptionalDependency` naming the extra.

`MarkovGameParallelEnv` — the rules
    * Agents ``"player_0", ..., "player_{N-1}"`` (player ``i`` of the game); ``possible_agents``
      lists them all, ``agents`` the live ones (all during an episode, none after it).
    * Action space of ``player_i``: ``Discrete(A_i)``.
    * Observation (the same for every agent: the game has perfect state information): the step and
      the state, as ``MultiDiscrete([H + 1, S])`` arrays ``[h, s]`` (default), or with
      ``observation="dict"`` as ``Dict({"step": Discrete(H + 1), "state": Discrete(S)})``. After the
      last step the observation has ``h = H`` and the final state.
    * ``step(actions)`` takes one action per live agent, pays ``rewards[h, i, s, a]`` to each agent,
      draws ``s' ~ transitions[h, s, a]`` with the environment's generator (seeded by
      ``reset(seed=...)``), and moves to step ``h + 1``. After ``H`` steps every agent is
      **terminated** (the finite horizon is the end of the episode, not a time-limit truncation;
      ``truncations`` are always ``False``) and removed from ``agents``.
    * ``infos[agent]``: ``{"step": h, "state": s}`` after ``reset``, plus ``"joint_action"`` (the
      joint action just played) after ``step``.
    * ``state()`` / ``state_space``: the global state ``[h, s]`` (``MultiDiscrete([H + 1, S])``).
    * ``render_mode="ansi"``: ``render()`` returns a line with the step, the state and the last joint
      action and rewards.

It passes PettingZoo's ``pettingzoo.test.parallel_api_test`` and ``parallel_seed_test``.

`DiscountedGameParallelEnv` — a [`DiscountedMarkovGame`][markovgames.games.DiscountedMarkovGame]
    The same agents and action spaces; the observation is the state, ``MultiDiscrete([S])`` arrays
    ``[s]`` (or ``{"state": s}`` with ``observation="dict"``); an episode starts in ``s_0`` drawn
    from the game's initial distribution, pays ``rewards[i, s, a]`` and draws ``s' ~
    transitions[s, a]`` at every step, and never terminates (the game is infinite-horizon): with
    ``max_steps`` it is **truncated** after that many steps (a time limit, ``truncations`` true,
    ``terminations`` false). The discount is ``env.discount``: an agent's return is ``sum_t
    gamma^t r_t``. ``parallel_env`` picks the class by the game's kind.

A correlated policy is played by a `Mediator`, which draws the
shared index with its own seed and hands each agent its recommendation (re-exported here with
`play_episodes`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..games import DiscountedMarkovGame, MarkovGame, require_finite_horizon
from ._deps import require
from .mediator import (
    EpisodeReturns,
    Mediator,
    agent_name,
    decode_observation,
    play_episodes,
)

_pettingzoo = require("pettingzoo", extra="pettingzoo")
_gymnasium = require("gymnasium", extra="pettingzoo")

from gymnasium import spaces  # noqa: E402
from gymnasium.utils import seeding  # noqa: E402
from pettingzoo import ParallelEnv  # noqa: E402

__all__ = [
    "MarkovGameParallelEnv",
    "DiscountedGameParallelEnv",
    "parallel_env",
    "Mediator",
    "EpisodeReturns",
    "play_episodes",
    "agent_name",
    "decode_observation",
]


def _joint_action(env, actions) -> tuple[int, ...]:
    """The joint action of ``actions`` (one per agent of ``env``), or the error naming what is wrong."""
    if not env.agents:
        raise RuntimeError("the episode is over: call reset() first")
    missing = [a for a in env.agents if a not in actions]
    if missing:
        raise ValueError(f"step: no action for {missing} (every live agent acts at every step)")
    unknown = sorted(set(actions) - set(env.possible_agents), key=str)
    if unknown:
        raise ValueError(f"step: actions for unknown agents {unknown}; the agents are {list(env.possible_agents)}")
    chosen = []
    for agent in env.possible_agents:
        a = actions[agent]
        try:
            ok = float(a).is_integer() and 0 <= int(a) < env.action_spaces[agent].n
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"step: action {a!r} of {agent} is not in {env.action_spaces[agent]}")
        chosen.append(int(a))
    return tuple(chosen)


def _step_outputs(env, r, joint, step: int, *, terminated: bool, truncated: bool):
    """``step``'s five dictionaries for the live agents of ``env`` (``r``: every player's reward);
    the agents leave once the episode ends."""
    agents = list(env.agents)
    obs = {a: env._observation() for a in agents}
    rewards = {a: float(r[env._index[a]]) for a in agents}
    infos = {a: {"step": step, "state": env.markov_state, "joint_action": joint} for a in agents}
    if terminated or truncated:
        env.agents = []
    return obs, rewards, {a: terminated for a in agents}, {a: truncated for a in agents}, infos


def _render_line(head: str, last) -> str:
    """The ``"ansi"`` line: ``head`` and the last joint action and rewards, if any."""
    if last is not None:
        joint, r = last
        head += f", last joint action {joint}, rewards {tuple(round(float(x), 6) for x in r)}"
    return head


class _SpacesByAgent(ParallelEnv):
    """The PettingZoo accessors of an environment's per-agent spaces (both environments below)."""

    observation_spaces: dict
    action_spaces: dict

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]


class MarkovGameParallelEnv(_SpacesByAgent):
    """A [`MarkovGame`][markovgames.MarkovGame] as a PettingZoo ``ParallelEnv`` (rules in the module docstring).

    Parameters
    ----------
    game : MarkovGame
    observation : ``"multidiscrete"`` (default) or ``"dict"``
        ``[h, s]`` arrays in ``MultiDiscrete([H + 1, S])`` or ``{"step": h, "state": s}`` dicts.
    render_mode : ``None`` or ``"ansi"``
    """

    metadata: dict[str, Any] = {"name": "markovgames_parallel_v0", "render_modes": ["ansi"], "is_parallelizable": True}

    def __init__(self, game: MarkovGame, *, observation: str = "multidiscrete", render_mode: str | None = None):
        require_finite_horizon(game, "game")
        if not isinstance(game, MarkovGame):
            raise TypeError(f"expected a MarkovGame, got {type(game).__name__}")
        if observation not in ("multidiscrete", "dict"):
            raise ValueError(f"observation must be 'multidiscrete' or 'dict', got {observation!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.game = game
        self.observation_type = observation
        self.render_mode = render_mode
        H, S = game.horizon, game.num_states
        self.possible_agents = [agent_name(i) for i in range(game.num_players)]
        self.agents: list[str] = []
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        make: Callable[[], spaces.Space[Any]]
        if observation == "dict":
            make = lambda: spaces.Dict({"step": spaces.Discrete(H + 1), "state": spaces.Discrete(S)})  # noqa: E731
        else:
            make = lambda: spaces.MultiDiscrete([H + 1, S])  # noqa: E731
        self.observation_spaces = {a: make() for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(n) for a, n in zip(self.possible_agents, game.num_actions, strict=True)}
        self.state_space = spaces.MultiDiscrete([H + 1, S])
        self._cdf = np.cumsum(game.transitions, axis=-1)
        self.np_random, _ = seeding.np_random(None)
        self.step_index = 0
        self.markov_state = game.initial_state
        self._last: tuple | None = None

    # ------------------------------------------------------------------ helpers
    def _observation(self):
        h, s = self.step_index, self.markov_state
        if self.observation_type == "dict":
            return {"step": h, "state": s}
        return np.array([h, s], dtype=np.int64)

    def state(self) -> np.ndarray:
        """The global state ``[h, s]``."""
        return np.array([self.step_index, self.markov_state], dtype=np.int64)

    # ------------------------------------------------------------------ API
    def reset(self, seed=None, options=None):
        """Start an episode at step 0 in the initial state; ``seed`` reseeds the transition generator."""
        if seed is not None:
            self.np_random, _ = seeding.np_random(seed)
        self.agents = list(self.possible_agents)
        self.step_index = 0
        self.markov_state = self.game.initial_state
        self._last = None
        info = {"step": 0, "state": self.markov_state}
        return {a: self._observation() for a in self.agents}, {a: dict(info) for a in self.agents}

    def step(self, actions):
        """Play one joint action; see the module docstring."""
        joint = _joint_action(self, actions)
        game = self.game
        h, s = self.step_index, self.markov_state
        r = game.rewards[(h, slice(None), s) + joint]
        cdf = self._cdf[(h, s, *joint)]
        nxt = int(np.searchsorted(cdf, self.np_random.random() * cdf[-1], side="right"))
        self.markov_state = min(nxt, game.num_states - 1)
        self.step_index = h + 1
        self._last = (joint, r)
        return _step_outputs(self, r, joint, self.step_index, terminated=self.step_index >= game.horizon, truncated=False)

    def render(self):
        """The ``"ansi"`` text of the current step (``None`` without a render mode)."""
        if self.render_mode is None:
            return None
        return _render_line(f"step {self.step_index}/{self.game.horizon}, state {self.markov_state}", self._last)

    def close(self):
        pass


class DiscountedGameParallelEnv(_SpacesByAgent):
    """A [`DiscountedMarkovGame`][markovgames.games.DiscountedMarkovGame] as a PettingZoo
    ``ParallelEnv`` (rules in the module docstring).

    Parameters
    ----------
    game : DiscountedMarkovGame
    max_steps : int or None
        Truncate an episode after this many steps (``None``: never; the episode then runs until
        the caller stops stepping).
    observation : ``"multidiscrete"`` (default) or ``"dict"``
    render_mode : ``None`` or ``"ansi"``
    """

    metadata: dict[str, Any] = {"name": "markovgames_discounted_parallel_v0", "render_modes": ["ansi"], "is_parallelizable": True}

    def __init__(
        self,
        game: DiscountedMarkovGame,
        *,
        max_steps: int | None = None,
        observation: str = "multidiscrete",
        render_mode: str | None = None,
    ):
        if not isinstance(game, DiscountedMarkovGame):
            raise TypeError(
                f"expected a DiscountedMarkovGame, got {type(game).__name__} (MarkovGameParallelEnv plays finite-horizon games)"
            )
        if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1):
            raise ValueError(f"max_steps must be a positive integer or None, got {max_steps!r}")
        if observation not in ("multidiscrete", "dict"):
            raise ValueError(f"observation must be 'multidiscrete' or 'dict', got {observation!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.game, self.discount, self.max_steps = game, game.discount, max_steps
        self.observation_type, self.render_mode = observation, render_mode
        S = game.num_states
        self.possible_agents = [agent_name(i) for i in range(game.num_players)]
        self.agents: list[str] = []
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        make: Callable[[], spaces.Space[Any]]
        if observation == "dict":
            make = lambda: spaces.Dict({"state": spaces.Discrete(S)})  # noqa: E731
        else:
            make = lambda: spaces.MultiDiscrete([S])  # noqa: E731
        self.observation_spaces = {a: make() for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(n) for a, n in zip(self.possible_agents, game.num_actions, strict=True)}
        self.state_space = spaces.MultiDiscrete([S])
        self._cdf = np.cumsum(game.transitions, axis=-1)  # (S, A..., S); a sparse game's dense form
        self._start_cdf = np.cumsum(game.initial_distribution)
        self.np_random, _ = seeding.np_random(None)
        self.steps = 0
        self.markov_state = 0
        self._last: tuple | None = None

    def _observation(self):
        if self.observation_type == "dict":
            return {"state": self.markov_state}
        return np.array([self.markov_state], dtype=np.int64)

    def state(self) -> np.ndarray:
        """The global state ``[s]``."""
        return np.array([self.markov_state], dtype=np.int64)

    def _draw(self, cdf) -> int:
        return min(int(np.searchsorted(cdf, self.np_random.random() * cdf[-1], side="right")), self.game.num_states - 1)

    def reset(self, seed=None, options=None):
        """Start an episode in ``s_0 ~`` the initial distribution; ``seed`` reseeds the generator."""
        if seed is not None:
            self.np_random, _ = seeding.np_random(seed)
        self.agents = list(self.possible_agents)
        self.steps, self._last = 0, None
        self.markov_state = self._draw(self._start_cdf)
        info = {"step": 0, "state": self.markov_state}
        return {a: self._observation() for a in self.agents}, {a: dict(info) for a in self.agents}

    def step(self, actions):
        """Play one joint action; see the module docstring."""
        joint, s = _joint_action(self, actions), self.markov_state
        r = self.game.rewards[(slice(None), s) + joint]
        self.markov_state = self._draw(self._cdf[(s, *joint)])
        self.steps += 1
        self._last = (joint, r)
        truncated = self.max_steps is not None and self.steps >= self.max_steps
        return _step_outputs(self, r, joint, self.steps, terminated=False, truncated=truncated)

    def render(self):
        """The ``"ansi"`` text of the current step (``None`` without a render mode)."""
        if self.render_mode is None:
            return None
        return _render_line(f"step {self.steps}, state {self.markov_state}", self._last)

    def close(self):
        pass


def parallel_env(game: MarkovGame | DiscountedMarkovGame, **kwargs) -> MarkovGameParallelEnv | DiscountedGameParallelEnv:
    """PettingZoo's conventional constructor name: ``MarkovGameParallelEnv(game, **kwargs)``, or
    ``DiscountedGameParallelEnv(game, **kwargs)`` for a discounted game."""
    if isinstance(game, DiscountedMarkovGame):
        return DiscountedGameParallelEnv(game, **kwargs)
    return MarkovGameParallelEnv(game, **kwargs)
