"""The library's constants that the command line's parsers show (choices, defaults, help texts),
written out: building the parsers, which ``--help``, ``--version`` and every command do, imports
no NumPy, JAX, SciPy, pydantic or rich. ``tests/test_cli_startup.py`` checks that each equals the
library's."""

from __future__ import annotations

__all__ = [
    "DTYPE_NAMES",
    "REWARD_DISTRIBUTIONS",
    "MAX_GAME_ENTRIES",
    "DEFAULT_MAX_FILE_BYTES",
    "GAME_FILE_SUFFIXES",
    "DEFAULT_MAX_WORK",
    "SWEEP_CONFIG_KEYS",
    "VLEARNING_ALGORITHMS",
    "BANDIT_RATES",
    "METRICS",
]

#: ``sorted(markovgames._dtypes.DTYPES)``
DTYPE_NAMES = ("float32", "float64")
#: `markovgames.games.REWARD_DISTRIBUTIONS`
REWARD_DISTRIBUTIONS = ("uniform", "bernoulli")
#: `markovgames.games.MAX_GAME_ENTRIES`
MAX_GAME_ENTRIES = 2**28
#: `markovgames.games.DEFAULT_MAX_FILE_BYTES`
DEFAULT_MAX_FILE_BYTES = 256 * 2**20
#: `markovgames.games.GAME_FILE_SUFFIXES`
GAME_FILE_SUFFIXES = (".json", ".npz")
#: `markovgames.dynamics.BANDIT_RATES`
BANDIT_RATES = ("decaying", "constant")
#: `markovgames.dynamics.VLEARNING_ALGORITHMS`
VLEARNING_ALGORITHMS = ("cce-v", "ce-v", "stage-v")
#: `markovgames.evaluation.DEFAULT_MAX_WORK`
DEFAULT_MAX_WORK = 2 * 10**9
#: A sweep configuration's top-level keys, the fields of ``SweepConfig``: an unknown option of
#: ``sweep`` that means one of them is answered with ``--set KEY=VALUE``.
SWEEP_CONFIG_KEYS = (
    "name",
    "games",
    "algorithms",
    "etas",
    "optimistic",
    "T",
    "checkpoints",
    "seeds",
    "base_seed",
    "dtype",
    "max_retries",
    "max_batch_size",
    "out",
    "exact",
    "last_iterate",
    "weighted_average",
    "orders",
    "eta_schedules",
    "regret",
    "feedbacks",
)
#: `markovgames.experiments.sweeps._summary.METRICS`: what ``plot`` draws and ``summarize`` summarises.
METRICS = (
    "gap",
    "external_regret",
    "swap_regret",
    "duality_gap",
    "last_iterate_duality_gap",
    "last_iterate_nash_gap",
    "weighted_average_duality_gap",
    "weighted_average_nash_gap",
    "uniform_average_duality_gap",
    "uniform_average_nash_gap",
)
