r"""A mediator that plays a correlated policy in an environment by recommending actions (NumPy only).

A correlated policy needs common randomness. For the output policies of Algorithms 3 and 4
([`IndexChainPolicy`][markovgames.policies.IndexChainPolicy]) the mediator draws the hidden index chain
(``t_0``, then ``j_1 ~ mu_{t_0}``, ``j_{h+1} ~ mu_{j_h}``, the index drawn *before* each step) with its
own seeded generator and never reveals it; at step ``h`` in state ``s`` it draws each player's action
from that player's part of ``pi^{j_h}_h(s)`` and hands it to the player as a recommendation. For a
[`MarkovCorrelatedPolicy`][markovgames.policies.MarkovCorrelatedPolicy] it draws a joint action from ``joint[h, s]``.
This is [`PolicyPlayer`][markovgames.policies.PolicyPlayer] behind an agent-facing interface: agents are
named ``"player_0"``, ``"player_1"``, ... as in `MarkovGameParallelEnv`.

`play_episodes` runs a mediator in any PettingZoo-style parallel environment whose
observations carry the step and the state (a ``[h, s]`` array or a ``{"step": h, "state": s}``
dict), optionally with some agents deviating from their recommendations; its returns estimate
[`policy_value`][markovgames.evaluation.policy_value] (their mean is within a few standard errors of it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from ..evaluation import check_policy
from ..policies import IndexChainPolicy, MarkovCorrelatedPolicy, PolicyPlayer, VisitChainPolicy

__all__ = ["Mediator", "EpisodeReturns", "play_episodes", "agent_name", "decode_observation"]


def agent_name(i: int) -> str:
    """The agent name of player ``i``: ``"player_<i>"``."""
    return f"player_{int(i)}"


def decode_observation(observation) -> tuple[int, int]:
    """``(h, s)`` from an observation: a ``{"step": h, "state": s}`` mapping or a ``[h, s]`` array."""
    if isinstance(observation, Mapping):
        return int(observation["step"]), int(observation["state"])
    arr = np.asarray(observation).ravel()
    if arr.size != 2:
        raise ValueError(f"cannot read (step, state) from an observation of shape {np.shape(observation)}")
    return int(arr[0]), int(arr[1])


class Mediator:
    """Plays a correlated policy by recommending an action to every agent at every step.

    Parameters
    ----------
    policy : IndexChainPolicy or MarkovCorrelatedPolicy
    seed : int, numpy.random.SeedSequence or numpy.random.Generator, optional
        The mediator's own randomness (the shared index and the recommended actions).

    Use `reset` at the start of each episode and `recommend` once per step.
    """

    def __init__(self, policy, seed=None) -> None:
        if not isinstance(policy, (IndexChainPolicy, VisitChainPolicy, MarkovCorrelatedPolicy)):
            raise TypeError(
                f"expected an IndexChainPolicy, a VisitChainPolicy or a MarkovCorrelatedPolicy, got {type(policy).__name__}"
            )
        self.policy = policy
        self._player = PolicyPlayer(policy, seed)
        n = policy.num_players
        self.agents = tuple(agent_name(i) for i in range(n))

    @property
    def index(self) -> int | None:
        """The hidden index of the current step (index-chain policies; never shown to the agents)."""
        return self._player.index

    def reset(self, seed=None) -> None:
        """Start an episode (draws ``t_0``); a ``seed`` restarts the mediator's generator."""
        if seed is not None:
            self._player = PolicyPlayer(self.policy, seed)
        self._player.reset()

    def recommend(self, observations) -> dict[str, int]:
        """The recommendations ``{agent: action}`` for the step and state in ``observations``.

        ``observations`` is the environment's ``{agent: observation}`` dict (all agents observe the
        same step and state), or one observation, or a ``(h, s)`` pair.
        """
        if isinstance(observations, tuple) and len(observations) == 2 and all(np.isscalar(v) for v in observations):
            h, s = int(observations[0]), int(observations[1])
        elif isinstance(observations, Mapping) and observations and not {"step", "state"} <= set(observations):
            h, s = decode_observation(next(iter(observations.values())))
        else:
            h, s = decode_observation(observations)
        joint = self._player.act(h, s)
        return {agent: int(a) for agent, a in zip(self.agents, joint, strict=True)}


@dataclass(frozen=True)
class EpisodeReturns:
    """Returns of sampled episodes.

    Attributes
    ----------
    returns : ndarray, shape ``(episodes, N)``
        Each agent's total reward in each episode (agents in the order ``player_0, player_1, ...``).
    """

    returns: np.ndarray

    @property
    def mean(self) -> np.ndarray:
        return self.returns.mean(axis=0)

    @property
    def standard_error(self) -> np.ndarray:
        n = self.returns.shape[0]
        return self.returns.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else np.full(self.returns.shape[1], np.inf)

    def z_scores(self, exact) -> np.ndarray:
        """``(mean - exact) / standard_error`` per agent (0 where both agree exactly)."""
        diff = self.mean - np.asarray(exact, dtype=np.float64)
        se = self.standard_error
        return np.where(se > 0, diff / np.where(se > 0, se, 1.0), np.where(diff == 0, 0.0, np.inf))


def play_episodes(
    env,
    mediator: Mediator,
    num_episodes: int,
    seed=None,
    *,
    deviations: Mapping[str, Callable[[object, int], int]] | None = None,
) -> EpisodeReturns:
    """Play ``num_episodes`` episodes of ``env`` with ``mediator``'s recommendations.

    Parameters
    ----------
    env : a PettingZoo ``ParallelEnv`` (e.g. `MarkovGameParallelEnv`)
        Its observations must carry the step and the state (see `decode_observation`).
    mediator : Mediator
    num_episodes : int
    seed : int, optional
        Seeds the environment (first ``reset``) and the mediator, through independent streams of
        ``numpy.random.SeedSequence(seed)``; ``None`` keeps their current generators.
    deviations : mapping ``agent -> f(observation, recommendation) -> action``, optional
        Agents that do not follow their recommendation (e.g. a strategy modification ``phi``).

    Returns
    -------
    EpisodeReturns
    """
    if isinstance(num_episodes, bool) or not isinstance(num_episodes, (int, np.integer)) or num_episodes < 1:
        raise ValueError(f"num_episodes must be a positive integer, got {num_episodes!r}")
    game = getattr(env, "game", None)  # MarkovGameParallelEnv's; other environments are not checked
    if game is not None:
        check_policy(game, mediator.policy)
    deviations = dict(deviations or {})
    agents = list(getattr(env, "possible_agents", mediator.agents))
    unknown = set(deviations) - set(agents)
    if unknown:
        raise ValueError(f"deviations for unknown agents {sorted(unknown)}")
    env_seed = None
    if seed is not None:
        env_ss, med_ss = np.random.SeedSequence(seed).spawn(2)
        env_seed = int(env_ss.generate_state(1)[0])
        mediator.reset(seed=med_ss)
    out = np.zeros((num_episodes, len(agents)))
    col = {a: k for k, a in enumerate(agents)}
    for e in range(num_episodes):
        obs, _ = env.reset(seed=env_seed if e == 0 else None)
        mediator.reset()
        while env.agents:
            rec = mediator.recommend(obs)
            actions = {
                agent: (deviations[agent](obs[agent], rec[agent]) if agent in deviations else rec[agent]) for agent in env.agents
            }
            obs, rewards, _, _, _ = env.step(actions)
            for agent, r in rewards.items():
                out[e, col[agent]] += r
    return EpisodeReturns(out)
