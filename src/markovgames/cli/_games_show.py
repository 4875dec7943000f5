"""``games show`` for a discounted game: its discount, sizes, a summary, and for small games one table per state."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from .._text import markup_safe

if TYPE_CHECKING:
    from rich.console import Console

    from ..games import DiscountedMarkovGame

__all__ = ["show_discounted"]

# As for finite-horizon games (`_games`): tables only below these sizes unless --full.
_MAX_JOINT_ACTIONS = 36
_MAX_TABLES = 12
_MAX_STATES_COLUMNS = 8


def show_discounted(console: Console, game: DiscountedMarkovGame, digits: int, full: bool) -> None:
    """Print a discounted game: the discount and effective horizon, the initial state or
    distribution, reward and kernel summaries, and (small games, or ``full``) per state the
    rewards ``r(s, a)`` and next-state distribution ``P(. | s, a)`` of every joint action."""
    from rich.table import Table

    def num(x: float) -> str:
        return f"{x:.{digits}g}"

    title = f"[bold]{markup_safe(game.name)}[/bold]" + (f": {markup_safe(game.description)}" if game.description else "")
    console.print(title, markup=True)
    start = (
        f"initial state {game.initial_state}"
        if game.initial_state is not None
        else "initial distribution [" + ", ".join(num(x) for x in game.initial_distribution) + "]"
    )
    console.print(
        f"{game.num_players} players, discounted: gamma={num(game.discount)} (effective horizon "
        f"1/(1-gamma) = {num(game.effective_horizon)}), {game.num_states} states, "
        f"actions A={'x'.join(str(a) for a in game.num_actions)} ({game.num_joint_actions} joint), {start}",
        markup=False,
    )
    r = game.rewards
    console.print("rewards: stationary (one reward function for every step)", markup=False)
    for i in range(game.num_players):
        console.print(f"  player {i}: min {num(r[i].min())}, mean {num(r[i].mean())}, max {num(r[i].max())}", markup=False)
    p = game.sparse_transitions.probabilities if game.is_sparse else game.transitions
    support = (p > 0).sum(axis=-1)
    console.print(
        f"transitions: stationary; {int((support == 1).sum())} of {support.size} rows deterministic; "
        f"successor states per row: mean {num(support.mean())}, max {int(support.max())}; "
        f"smallest positive probability {num(p[p > 0].min())}"
        + (f"; stored sparse, {game.sparse_transitions.num_successors} entries per row" if game.is_sparse else ""),
        markup=False,
    )
    small = (
        game.num_joint_actions <= _MAX_JOINT_ACTIONS and game.num_states <= _MAX_TABLES and game.num_states <= _MAX_STATES_COLUMNS
    )
    if not (small or full):
        console.print("(game too large for per-state tables; use --full to print them)", markup=False)
        return
    dense = game.transitions if game.num_states <= _MAX_STATES_COLUMNS else None
    sparse = game.sparse_transitions if dense is None else None
    for s in range(game.num_states):
        table = Table(title=f"state s={s}", title_justify="left")
        for i in range(game.num_players):
            table.add_column(f"a_{i}", justify="right")
        for i in range(game.num_players):
            table.add_column(f"r_{i}", justify="right")
        if dense is not None:
            for s_next in range(game.num_states):
                table.add_column(f"P(s'={s_next})", justify="right")
        else:
            table.add_column("P(s' | s, a) (nonzero)")
        for a in itertools.product(*(range(k) for k in game.num_actions)):
            row = [str(k) for k in a] + [num(r[(i, s, *a)]) for i in range(game.num_players)]
            if dense is not None:
                row += [num(x) for x in dense[(s, *a)]]
            elif sparse is not None:
                pairs = sorted(
                    (int(k), float(x))
                    for k, x in zip(sparse.successors[(s, *a)], sparse.probabilities[(s, *a)], strict=True)
                    if x > 0
                )
                row.append(", ".join(f"{k}: {num(x)}" for k, x in pairs))
            table.add_row(*row)
        console.print(table)
