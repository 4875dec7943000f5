"""``markovgames algorithms list``: the learners, value updates, algorithm names, V-learning's
algorithms and the feedback models, one line each; ``markovgames algorithms show NAME``: one
built-in algorithm and the papers that define or analyse it (the catalogue in `markovgames._papers`).

An algorithm is ``LEARNER+UPDATE`` (any learner with either value update); the paper's three
names are aliases of compositions; installed packages add theirs through the entry-point group
``markovgames.algorithms``; a user's own is ``--algorithm path/to/file.py:NAME``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ._commands import HELP
from ._errors import CliError

__all__ = ["add_algorithms_parser"]


def add_algorithms_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    algorithms = subparsers.add_parser(
        "algorithms",
        help=HELP["algorithms"],
        description="The algorithms that 'run' and sweeps accept: LEARNER+UPDATE compositions, the "
        "paper's names, and those of installed packages.",
    )
    sub = algorithms.add_subparsers(dest="algorithms_command", metavar="SUBCOMMAND", required=True)
    p = sub.add_parser(
        "list",
        help="list learners, value updates, aliases, V-learning, feedback models and installed algorithms, one line each",
        description="List the learners, the value updates, the paper's algorithm names, V-learning's algorithms, "
        "the feedback models and the algorithms of installed packages, one line each with its citation.",
    )
    p.set_defaults(handler=cmd_list)
    show = sub.add_parser(
        "show",
        help="one built-in algorithm and the papers that define or analyse it",
        description="Show what a built-in algorithm is made of, its weighted average and its theory learning rate, "
        "and for each paper that defines or analyses it the setting, the output its theorem is about, the "
        "learning-rate condition and the rate (docs/papers.md lists them all).",
    )
    show.add_argument(
        "name", metavar="NAME", help="LEARNER+UPDATE (e.g. hedge+smooth), an alias (smooth_ce) or a V-learning name (cce-v)"
    )
    show.set_defaults(handler=cmd_show)
    return algorithms


#: V-learning's algorithms: what each bandit is, and its paper (`markovgames.dynamics._vlearning`).
VLEARNING = {
    "cce-v": "CCE-V-learning: Hedge bandits with implicit exploration [Jin, Liu, Wang and Yu 2021, Algorithms 1 and 3]",
    "ce-v": "CE-V-learning: swap-regret (Blum–Mansour) Hedge bandits [Song, Mei and Bai 2021]",
    "stage-v": "stage-based V-learning: EXP3-IX restarted at each stage [Mao, Yang, Zhang and Başar, ICML 2022]",
}

#: The feedback models: what the learners see.
FEEDBACK = {
    "full": "exact utilities and Bellman targets (the paper's; the default)",
    "sampled:K": "estimates from K samples of a generative model, drawn afresh every iteration (--seed)",
    "sampled:exact": "the sampled code with expectations: full's numbers",
    "bandit:M": "from play: rounds of M episodes, each player sees its own rewards and the states visited; "
    "any one-query LEARNER+UPDATE (-T counts rounds; EXP3 is hedge+UPDATE --no-optimism)",
}


def _lines(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Rows of cells aligned in columns (the last cell is free text)."""
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]) - 1)] if rows else []
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1] for r in rows]


def listing() -> str:
    """The text of ``markovgames algorithms list``."""
    from ..dynamics import ALGORITHMS, ENTRY_POINT_GROUP, VALUE_UPDATES, VLEARNING_ALGORITHMS, registered
    from ..dynamics._feedback import FEEDBACK_FORMS
    from ..learners import BUILTIN_LEARNERS

    plugins = registered()
    learners = {**BUILTIN_LEARNERS, **plugins.learners}

    def learner_row(spec, package=""):
        kind = "swap regret" if spec.swap_regret else "external regret"
        cite = f" [{spec.citation}]" if spec.citation else ""
        return (spec.name, kind, f"{spec.description}{cite}{package}")

    out = ["Learners (one copy per player, step and state; bm-NAME is the Blum–Mansour reduction over NAME):"]
    out += _lines(
        [learner_row(s) for s in BUILTIN_LEARNERS.values()] + [learner_row(s, " (installed)") for s in plugins.learners.values()]
    )
    out += ["", "Value updates (each with its output policy):"]
    out += _lines([(u.name, f"{u.description} [{u.citation}]") for u in VALUE_UPDATES.values()])
    out += ["", "Algorithms: any LEARNER+UPDATE, e.g. rm-plus+smooth. The paper's names are aliases:"]
    out += _lines([(a.name, f"= {a.composition}", a.description) for a in ALGORITHMS.values()])
    out += ["", "V-learning, from play (markovgames vlearn GAME --algorithm NAME --episodes K; docs/vlearning.md):"]
    out += _lines([(name, VLEARNING[name]) for name in VLEARNING_ALGORITHMS])
    out += ["", "Feedback models (--feedback MODEL; docs/feedback.md, docs/vlearning.md):"]
    out += _lines([(name, FEEDBACK[name]) for name in (*FEEDBACK_FORMS, "bandit:M")])
    out += ["", f"Installed packages (entry-point group {ENTRY_POINT_GROUP}):"]
    rows = [
        (a.name, f"= {a.composition}", f"{a.description} [{a.source}]".replace(" []", "")) for a in plugins.algorithms.values()
    ]
    if rows:
        out += _lines(rows)
    elif not plugins.learners and not plugins.errors:
        out.append("  none")
    if plugins.learners and not rows:
        out.append(f"  learners only: {', '.join(plugins.learners)} (listed above)")
    for name, package, message in plugins.errors:
        out.append(f"  {name} ({package}): not loaded: {message}")
    out += [
        "",
        "Your own: --algorithm path/to/file.py:NAME or package.module:NAME (an Algorithm, or a",
        "LearnerSpec followed by +UPDATE); see the guide 'Write your own learner'.",
        f"{len(learners)} learners x {len(VALUE_UPDATES)} value updates, each with or without optimism (--no-optimism).",
    ]
    # A two-query learner's prediction is its second utility query: no non-optimistic or alternating form.
    two_query = [name for name, spec in learners.items() if _makes_two_queries(spec)]
    if two_query:
        out.append(f"Two utility queries per iteration ({', '.join(two_query)}): always optimistic, simultaneous updates only.")
    return "\n".join(out)


def _makes_two_queries(spec) -> bool:
    """Whether a learner proposes a second utility query per iteration (an installed one that
    cannot be built is not said to)."""
    try:
        return spec.learner().propose is not None
    except Exception:  # noqa: BLE001 - an installed package's learner: listed, never fatal here
        return False


def cmd_list(args) -> int:
    from .._text import printable

    # Installed packages name their entry points and their errors: each line is shown literally.
    print("\n".join(printable(line) for line in listing().splitlines()))
    return 0


def _builtin_names() -> tuple[dict, dict, list[str]]:
    """The built-in learners and value updates by name, and every built-in algorithm's name: the
    aliases, every ``LEARNER+UPDATE`` and V-learning's names."""
    from .._papers import ALIASES, VLEARNING_NAMES
    from ..dynamics import VALUE_UPDATES
    from ..learners import BUILTIN_LEARNERS

    compositions = [f"{learner}+{update}" for learner in BUILTIN_LEARNERS for update in VALUE_UPDATES]
    return BUILTIN_LEARNERS, VALUE_UPDATES, [*ALIASES, *compositions, *VLEARNING_NAMES]


def catalogue_entries() -> list[tuple[str, str, str]]:
    """``(name, learner, value update)`` of every built-in algorithm, for `markovgames._papers.catalogue_markdown`."""
    from .._papers import ALIASES

    learners, updates, names = _builtin_names()
    out = []
    for name in names:
        composition = ALIASES.get(name, name)
        if "+" not in composition:  # V-learning: its own learners and value update
            out.append((name, "", ""))
            continue
        learner, update = learners[composition.split("+")[0]], updates[composition.split("+")[1]]
        out.append((name, f"`{learner.name}` ({learner.citation})", f"`{update.name}` ({update.citation})"))
    return out


def _theory_line(composition: str, update) -> str:
    """``algorithms show``'s line on ``--eta theory`` for a composition."""
    from .._papers import DEFAULT_THEORY

    if update.stationary:
        return (
            f"  --eta theory   none: theory:{DEFAULT_THEORY}'s rates are proved for finite-horizon games, and no paper's "
            "rate is implemented for a discounted update; give a number"
        )
    if update.per_iteration_metrics:
        proved, rate = "bm-logbarrier+smooth", "Theorem 1's 1/(256 N H sqrt(H A_max))"
    else:
        proved, rate = "hedge+stage", "Theorem 2's Theta(1/(N log^4 L_tau)) per stage as 1/(N max(1, ln L_tau)^4)"
    where = "proved for it" if composition == proved else f"proved for {proved}; used here as a choice"
    if composition == proved and not update.per_iteration_metrics:
        where += ", up to the constant, which Theorem 2 does not give"
    return f"  --eta theory   theory:{DEFAULT_THEORY} (the default): {rate} ({where})"


def show_text(name: str) -> str:
    """The text of ``markovgames algorithms show NAME``; a ``CliError`` for an unknown name."""
    from .._papers import ALIASES, AVERAGING_WORDS, VLEARNING_NAMES, describe_algorithm
    from .._suggest import did_you_mean

    learners, updates, names = _builtin_names()
    if name not in names:
        raise CliError(
            f"algorithms show: unknown algorithm {name!r}{did_you_mean(name, names)}; give a built-in one: LEARNER+UPDATE "
            f"(see 'markovgames algorithms list'), an alias ({', '.join(ALIASES)}) or a V-learning name "
            f"({', '.join(VLEARNING_NAMES)})"
        )
    composition = ALIASES.get(name, name)
    if name in VLEARNING_NAMES:
        lines = ["  V-learning from play (docs/vlearning.md): runs with its papers' rates; no --eta, no weighted average"]
        return describe_algorithm(name, *lines)
    learner, update = learners[composition.split("+")[0]], updates[composition.split("+")[1]]
    return describe_algorithm(
        name,
        f"  learner        {learner.name}: {learner.description} [{learner.citation}]",
        f"  value update   {update.name}: {update.description} [{update.citation}]\n"
        f"  weighted avg.  {AVERAGING_WORDS[update.name]} (run --weighted-average)",
        _theory_line(composition, update),
    )


def cmd_show(args) -> int:
    print(show_text(args.name))
    return 0
