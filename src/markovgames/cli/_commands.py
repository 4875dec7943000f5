"""The commands of ``markovgames``, in the order of ``markovgames --help``: the module and function
that build each one's parser, and the line that ``--help`` shows for it.

`markovgames.cli.build_parser` builds, for a command line, only the parser of the command it
names; the others are listed by name and this line. ``markovgames --help`` and ``--version`` so
import none of the commands' modules, and a command imports only its own.
"""

from __future__ import annotations

__all__ = ["COMMANDS", "HELP"]

#: name -> (module in markovgames.cli, the function that adds its parser to a subparsers object).
COMMANDS = {
    "reproduce": ("_reproduce", "add_reproduce_parser"),
    "games": ("_games", "add_games_parser"),
    "run": ("_run_bandit", "add_run_parser"),
    "vlearn": ("_vlearn", "add_vlearn_parser"),
    "algorithms": ("_algorithms", "add_algorithms_parser"),
    "evaluate": ("_evaluate", "add_evaluate_parser"),
    "certify": ("_certify", "add_certify_parser"),
    "solve": ("_solve", "add_solve_parser"),
    "sweep": ("_sweep", "add_sweep_parser"),
    "plot": ("_sweep", "add_plot_parser"),
    "summarize": ("_sweep", "add_summarize_parser"),
}

#: name -> the command's line in ``markovgames --help`` (each parser is added with it).
HELP = {
    "reproduce": "reproduce the paper's Section 5: Figures 1 to 3 with exact gaps and a report",
    "games": "list, show, validate, export and generate games",
    "run": "run a learning dynamic and write metrics.json, the curve and the trajectory",
    "vlearn": "run V-learning from play and write its output policy with exact values and certified gaps",
    "algorithms": "list the learners, value updates and algorithm names",
    "evaluate": "evaluate a run's output policy: certified and exact gaps, Monte Carlo",
    "certify": "the value and certified CE/CCE gaps of a policy sequence made anywhere, for every prefix",
    "solve": "compute an exact Markov CE or CCE by linear programming (HiGHS)",
    "sweep": "run a grid of games x algorithms x learning rates x seeds (batched, parallel, resumable)",
    "plot": "convergence figures of a sweep (median and IQR over seeds, log-log, fitted slopes)",
    "summarize": "a table of final gaps, gap x T and log-log slopes of a sweep (median over seeds)",
}
