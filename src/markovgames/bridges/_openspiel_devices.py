"""OpenSpiel bridge, correlation devices: a correlated policy as ``[(weight, pyspiel.TabularPolicy), ...]``.

`policy_components` writes an output policy as a mixture of per-step product policies;
`correlation_device` keys them by the information states of an exported game (or its turn-based
form). What the device of each kind of policy is, is in the docstring of
`markovgames.bridges.openspiel`.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..evaluation import check_policy
from ..policies import IndexChainPolicy, MarkovCorrelatedPolicy
from ._openspiel_export import _INFO_RE, _exported_markov_game, _pyspiel

__all__ = ["policy_components", "correlation_device"]


# =======================================================================================
# Correlation devices
# =======================================================================================
def policy_components(policy, *, cells: Iterable[tuple[int, int]] | None = None, max_size: int = 10_000):
    """A correlated policy as a mixture of per-step product policies.

    Returns a list of ``(weight, per_player)`` with ``per_player[i]`` of shape ``(H, S, A_i)``:
    under that component player ``i`` plays ``per_player[i][h, s]`` at step ``h`` in state ``s``,
    independently of the others. The weights sum to 1.

    * [`IndexChainPolicy`][markovgames.policies.IndexChainPolicy]: one component per index sequence
      ``(j_1, ..., j_H)`` of positive probability, ``per_player[i][h] = pi^{j_h}_{h,i}``.
    * [`MarkovCorrelatedPolicy`][markovgames.policies.MarkovCorrelatedPolicy]: one deterministic component per
      choice of a joint action in the support of ``joint[h, s]`` for every cell ``(h, s)`` in
      ``cells`` (default: all), independently across cells.

    Raises ``ValueError`` when there would be more than ``max_size`` components.
    """
    if isinstance(policy, IndexChainPolicy):
        first = policy.first_index_distribution()
        seqs: list[tuple[tuple[int, ...], float]] = [((j + 1,), float(w)) for j, w in enumerate(first) if w > 0.0]
        for _ in range(1, policy.horizon):
            rows: dict[int, np.ndarray] = {}
            nxt = []
            for seq, w in seqs:
                row = rows.get(seq[-1])
                if row is None:
                    row = rows[seq[-1]] = policy.kernel_row(seq[-1])
                for j in np.flatnonzero(row > 0.0):
                    nxt.append((seq + (int(j) + 1,), w * float(row[j])))
                if len(nxt) > max_size:
                    break
            seqs = nxt
            if len(seqs) > max_size:
                raise ValueError(
                    f"the output policy mixes more than max_size = {max_size} index sequences "
                    f"(T = {policy.T}, H = {policy.horizon}); use a shorter prefix or raise max_size"
                )
        steps = np.arange(policy.horizon)
        out = []
        for seq, w in seqs:
            idx = np.asarray(seq) - 1
            out.append((w, [np.asarray(p[idx, steps], dtype=np.float64) for p in policy.policies]))
    elif isinstance(policy, MarkovCorrelatedPolicy):
        H, S = policy.horizon, policy.num_states
        cell_list = (
            sorted(set((int(h), int(s)) for h, s in cells)) if cells is not None else [(h, s) for h in range(H) for s in range(S)]
        )
        supports = []
        total = 1
        for h, s in cell_list:
            dist = policy.joint[h, s]
            supp = [tuple(int(a) for a in np.unravel_index(k, dist.shape)) for k in np.flatnonzero(dist.ravel() > 0.0)]
            supports.append([(j, float(dist[j])) for j in supp])
            total *= len(supp)
            if total > max_size:
                raise ValueError(
                    f"the Markov correlated policy is a mixture of more than max_size = {max_size} deterministic "
                    "joint policies; raise max_size"
                )
        out = []
        for choice in np.ndindex(*(len(s) for s in supports)):
            w = 1.0
            per_player = [np.zeros((H, S, a)) for a in policy.num_actions]
            for (h, s), support, c in zip(cell_list, supports, choice, strict=True):
                joint, p = support[c]
                w *= p
                for i, a in enumerate(joint):
                    per_player[i][h, s, a] = 1.0
            out.append((w, per_player))
    else:
        raise TypeError(f"expected an IndexChainPolicy or a MarkovCorrelatedPolicy, got {type(policy).__name__}")
    total_w = sum(w for w, _ in out)
    return [(w / total_w, comp) for w, comp in out]


def _decision_infostates(os_game, max_nodes: int) -> dict[str, tuple[int, int, int]]:
    """``info state -> (player, step, state)`` for every decision of an exported game (or its turn-based form)."""
    found: dict[str, tuple[int, int, int]] = {}
    stack = [os_game.new_initial_state()]
    nodes = 0
    while stack:
        st = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            raise ValueError(f"more than {max_nodes} OpenSpiel states: the game is too large for a correlation device")
        if st.is_terminal():
            continue
        if st.is_chance_node():
            stack.extend(st.child(o) for o, p in st.chance_outcomes() if p > 0.0)
            continue
        players = range(os_game.num_players()) if st.is_simultaneous_node() else [st.current_player()]
        for p in players:
            info = st.information_state_string(p)
            m = _INFO_RE.search(info + " ")
            if m is None or int(m.group(1)) != p:
                raise ValueError(f"information state {info!r} is not one of a game made by export_game")
            found[info] = (p, int(m.group(2)), int(m.group(3)))
        if st.is_simultaneous_node():
            acts = [st.legal_actions(p) for p in range(os_game.num_players())]
            for joint in np.ndindex(*(len(a) for a in acts)):
                child = st.clone()
                child.apply_actions([acts[p][a] for p, a in enumerate(joint)])
                stack.append(child)
        else:
            stack.extend(st.child(a) for a in st.legal_actions())
    return found


def correlation_device(os_game, policy, *, max_size: int = 10_000, max_nodes: int = 1_000_000) -> list:
    """A correlated policy as an OpenSpiel correlation device: ``[(weight, pyspiel.TabularPolicy), ...]``.

    Parameters
    ----------
    os_game : pyspiel.Game
        A game made by `export_game` or its turn-based form
        (``pyspiel.convert_to_turn_based``, which ``pyspiel.cce_dist`` / ``ce_dist`` need): the
        tabular policies are keyed by *its* information-state strings.
    policy : IndexChainPolicy or MarkovCorrelatedPolicy
        Of the exported game's shape.
    max_size : int
        Refuse devices with more entries (see `policy_components`).
    max_nodes : int
        Refuse games whose tree has more states.

    Returns
    -------
    list of ``(float, pyspiel.TabularPolicy)``
        Weights summing to 1; each joint policy sets every player's action probabilities at every
        information state (``player i`` at step ``h`` in state ``s`` plays ``per_player[i][h, s]``).
    """
    pyspiel = _pyspiel()
    exported = _exported_markov_game(os_game)
    if exported is not None:
        check_policy(exported, policy)
    infos = _decision_infostates(os_game, max_nodes)
    cells = {(h, s) for _, h, s in infos.values()}
    comps = policy_components(policy, cells=cells if isinstance(policy, MarkovCorrelatedPolicy) else None, max_size=max_size)
    device = []
    for w, per_player in comps:
        table = {}
        for info, (p, h, s) in infos.items():
            probs = per_player[p][h, s]
            table[info] = [(int(a), float(q)) for a, q in enumerate(probs)]
        device.append((float(w), pyspiel.TabularPolicy(table)))
    return device
