"""What a user most likely meant by a name that is not one of ours: an option, a command, a game,
an algorithm, a configuration key, a choice.

`suggestion` tries, in order:

1. the same name up to case, ``-``, ``_`` and spaces (``--Eta``, ``rm_plus``, ``smooth-ce``);
2. `SYNONYMS`: the names that other tools and papers use for the same thing (``--learning-rate``
   and ``--lr`` for ``--eta``, ``--iterations`` for ``-T``, ``--output-dir`` for ``--out``,
   ``mwu`` for ``hedge``), each mapped to whichever of our names the caller accepts, so that a
   name means the option that the command at hand has (``--steps`` is ``-T`` for ``run`` and
   ``--horizon`` for ``games random``);
3. spelling: the most similar accepted name, if similar enough (`difflib`'s ratio at least 0.6).

Where nothing comes close the caller lists the accepted names. `nearest_path` does the same for
a path that does not exist: the existing one it most likely means, found one component at a time
among the entries of the directories that do exist. Importing this module imports nothing beyond
the standard library: the command line uses it before any other part of the package is loaded.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["SYNONYMS", "suggestion", "did_you_mean", "normalized", "nearest_path", "did_you_mean_path"]

#: The table, one group a line: ``OURS...: THEIRS...``. ``OURS`` are our names for one thing, in
#: order of preference: option names without their dashes, configuration keys, commands, choices
#: (a command accepts the first of them that it has); ``THEIRS`` are names that others use for it.
#: Names are compared `normalized`. A name may be in several groups: the first group with one of
#: the caller's names decides.
_TABLE = """
# options and configuration keys
eta etas: learning-rate learning-rates lr lrs step-size step-sizes alpha rate eta0
T: iterations num-iterations n-iterations iters num-iters n-iter max-iter max-iters max-iterations
T: steps num-steps n-steps total-steps rounds num-rounds n-rounds epochs timesteps total-timesteps horizon time-horizon
horizon: h episode-length episode-len length stages num-stages n-stages steps num-steps depth
players num-players: n-players agents num-agents n-agents player-count
states num-states: n-states state-count state-space
actions num-actions: n-actions action-counts action-space actions-per-player
seed base-seed: random-state random-seed rng rng-seed seed-value prng-key
seeds: runs num-runs n-runs repeats repetitions trials num-trials replicates num-seeds n-seeds
out markdown: output o output-dir output-directory out-dir output-file out-file output-path
out markdown: dest destination save save-dir save-to save-path log-dir results-dir run-dir directory dir
algorithm algorithms value-update: algo algos alg method methods dynamics dynamic learner learners learning-algorithm solver agent
game games: env envs environment environments env-id game-file task problem instance
file: path filename filepath game-file json npz
name label: title game-name display-name
description: desc doc docstring comment notes
value-update: update value output-policy value-updates averaging
concept: solution-concept equilibrium eq equilibrium-type kind
dtype: precision float floating-point data-type float-type fp
checkpoints: eval-at eval-every evaluate-at log-every log-at report-at report-every prefixes record-at metrics-at eval-points
checkpoint-every: save-every checkpoint-interval save-interval checkpoint-freq save-freq checkpoint-frequency ckpt-every
resume: continue restore restart reload from-checkpoint load-checkpoint resume-from
overwrite force: clobber replace yes y f exist-ok overwrite-ok force-overwrite
quiet: q silent no-progress no-output no-progress-bar mute no-verbose
no-optimism: no-optimistic non-optimistic not-optimistic vanilla no-prediction without-optimism
optimistic: optimism optimisms optimistic-learning
no-trajectory: no-traj metrics-only no-policies no-history discard-trajectory no-iterates
last-iterate: last final-iterate last-iterates final-policy last-policy
exact: exact-gaps exact-gap compute-exact exact-eval exact-evaluation
no-exact: certified-only skip-exact no-exact-gaps
no-baselines: no-baseline skip-baselines without-baselines
monte-carlo: mc samples num-samples n-samples episodes num-episodes n-episodes rollouts num-rollouts simulations sample
max-work: work-limit max-cost budget work-budget
max-runs: run-limit max-grid limit-runs
max-bytes: max-size max-file-size size-limit byte-limit
max-entries: entry-limit max-elements max-array-size
max-batch-size: batch batch-size max-batch num-envs n-envs
max-retries: retries num-retries retry attempts max-attempts
workers: jobs j n-jobs num-jobs num-workers n-workers processes procs nproc num-processes num-procs
workers: parallel cpus num-cpus threads num-threads
executor: backend launcher runner scheduler executer parallel-backend
address: ray-address cluster cluster-address head head-address url
dry-run: dry plan simulate what-if no-run
set: override overrides config-override define d param params config-set
x: x-axis axis by against vs versus group-by
window: range tail fit-window decades
concentration transition-concentration: dirichlet dirichlet-concentration
rewards reward-distribution: reward-law reward reward-dist
successors: num-successors n-successors sparse sparsity branching branching-factor
zero-sum: constant-sum competitive two-player-zero-sum
initial-state: init-state start-state s0 initial start
full: all verbose v tables show-all
debug: traceback verbose-errors tb trace
version: v ver about
# commands
run: train learn simulate fit start execute exec play iterate
evaluate: eval evaluation score assess metrics measure test
certify: verify check cert certificate bound bounds audit
solve: lp equilibrium compute optimize optimise solver linprog
sweep: grid experiment experiments grid-search sweeps launch batch
plot: figure figures plots draw graph chart visualize visualise viz
summarize: summary summarise report table results aggregate stats tabulate
reproduce: replicate reproduction repro reproduce-paper paper-results figure-1
list: ls names builtins builtin show-all catalog catalogue
show: print view describe info display inspect cat details
validate: check lint verify valid is-valid
hash: digest sha256 sha checksum fingerprint content-hash
export: save write convert dump to-file write-file
random: generate gen new create make sample rand random-game
# choices
float64: double f64 fp64 64 double-precision
float32: single f32 fp32 32 single-precision
ce: correlated correlated-equilibrium ces
cce: coarse coarse-correlated coarse-correlated-equilibrium cces
local: processes multiprocessing process pool local-processes threads
ray: cluster distributed remote
uniform: unif continuous uniform01
bernoulli: binary coin coin-flip bin
# built-in games
paper: paper-game example default running-example paper-example
prisoners_dilemma: pd prisoners prisoner-dilemma prisoner dilemma
matching_pennies: mp pennies matching-penny penny
battle_of_the_sexes: bos battle-of-sexes battle sexes
chicken: hawk-dove hawk-and-dove snowdrift
shapley: shapley-game shapleys-game stochastic-game stochastic
repeated_prisoners_dilemma: rpd ipd iterated-prisoners-dilemma iterated-prisoner-dilemma repeated-pd iterated-pd
repeated_prisoners_dilemma: repeated-prisoner-dilemma
# learners, value updates and algorithms
hedge: mwu mw multiplicative-weights exponential-weights exp-weights exponentiated-gradient eg omwu optimistic-hedge ftrl entropy
rm-plus: rm+ regret-matching-plus regret-matching+ cfr+ cfr-plus regret-matching rm prm+
logbarrier: log-barrier-ftrl ftrl-log-barrier omd-log-barrier lb
bm-hedge: blum-mansour-hedge swap-hedge bm-mwu swap-mwu
bm-rm-plus: blum-mansour-rm-plus swap-rm-plus bm-rm+ swap-rm+
bm-logbarrier: blum-mansour-logbarrier swap-logbarrier
smooth: smoothed smoothing smooth-update alpha-average
stage: stagewise stage-based stages staged stage-update
smooth_ce: algorithm-1 alg1 smoothed-ce
stage_cce: algorithm-2 alg2 stagewise-cce stage-based-cce
smooth_cce: smoothed-cce
"""


def _groups(table: str) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    groups = []
    for line in table.splitlines():
        if line.strip() and not line.startswith("#"):
            ours, _, theirs = line.partition(":")
            groups.append((tuple(ours.split()), tuple(theirs.split())))
    return tuple(groups)


#: `_TABLE` as ``(ours, theirs)`` pairs, in its order.
SYNONYMS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = _groups(_TABLE)

_IGNORED = re.compile(r"[-_\s]+")


def normalized(name: str) -> str:
    """``name`` as compared: lower case, without ``-``, ``_`` or spaces (``--Learning_rate`` is ``learningrate``)."""
    return _IGNORED.sub("", str(name).lower())


def _index() -> dict[str, list[tuple[str, ...]]]:
    """Each normalized name of `SYNONYMS` -> the ``ours`` of every group it is in, in table order."""
    index: dict[str, list[tuple[str, ...]]] = {}
    for ours, theirs in SYNONYMS:
        for name in dict.fromkeys(normalized(n) for n in (*ours, *theirs)):
            index.setdefault(name, []).append(ours)
    return index


_INDEX = _index()


def suggestion(name: str, choices: Iterable[str], *, spelling: bool = True) -> str | None:
    """The one of ``choices`` that ``name`` most likely means, or ``None`` (see the module docstring).

    ``choices`` are our names as the caller writes them (``--eta``, ``-T``, ``rm-plus``,
    ``max_batch_size``); the answer is one of them, as written. ``spelling=False`` leaves out
    the third try (by meaning only).
    """
    written: dict[str, str] = {}
    for choice in choices:
        written.setdefault(normalized(choice), choice)
    key = normalized(name)
    if not key or not written:
        return None
    if key in written:
        return written[key]
    for ours in _INDEX.get(key, ()):
        for target in ours:
            if normalized(target) in written:
                return written[normalized(target)]
    if not spelling:
        return None
    import difflib

    close = difflib.get_close_matches(key, list(written), n=1, cutoff=0.6)
    return written[close[0]] if close else None


def did_you_mean(name: str, choices: Iterable[str], *, quote: bool = True) -> str:
    """`` (did you mean 'x'?)`` for the `suggestion` ``x``, or ``""``: for a message that lists the choices."""
    found = suggestion(str(name), choices)
    if found is None:
        return ""
    return f" (did you mean {found!r}?)" if quote else f" (did you mean {found}?)"


#: The most entries of one directory that `nearest_path` reads: a directory of millions of files
#: is not listed whole to suggest a name.
MAX_LISTED_ENTRIES = 10_000


def _entries(directory: Path) -> list[str]:
    """The names in ``directory`` (at most `MAX_LISTED_ENTRIES`; none if it cannot be listed)."""
    names: list[str] = []
    try:
        with os.scandir(directory) as listing:
            for entry in listing:
                names.append(entry.name)
                if len(names) >= MAX_LISTED_ENTRIES:
                    break
    except OSError:
        return []
    return names


def _closest_name(name: str, names: list[str]) -> str | None:
    """The one of ``names`` that ``name`` most likely means: a name with a suffix by its stem among
    the names of the same suffix (``nope.json`` is not ``g.json`` for sharing ``.json``), else by
    the whole name where the stems are close too (``sweep.tml`` is ``sweep.toml``)."""
    stem, suffix = os.path.splitext(name)
    if not suffix or not stem:
        return suggestion(name, names)
    same = {os.path.splitext(n)[0]: n for n in names if os.path.splitext(n)[1] == suffix}
    close = suggestion(stem, same)
    if close is not None:
        return same[close]
    close = suggestion(name, [n for n in names if os.path.splitext(n)[1] != suffix])
    if close is not None and suggestion(stem, [os.path.splitext(close)[0]]) is not None:
        return close
    return None


def nearest_path(path: str | os.PathLike, accept: Callable[[Path], bool] | None = None) -> str | None:
    """The existing path that ``path`` (which does not exist) most likely means, written as
    ``path`` is (relative stays relative), or ``None``.

    Each component from the first one missing is replaced by the most similar entry of the
    directory above it (`suggestion`: case, ``-`` and ``_``, then spelling), so that
    ``runs/c`` finds ``runs/ce`` and ``exmples/sweep.tml`` finds ``examples/sweep.toml``; the
    answer must exist and, with ``accept``, pass it (a file where a file is wanted). Directories
    are only listed, never read further.
    """
    given = Path(path)
    if not str(path) or os.path.lexists(given):
        return None
    parts = given.parts
    found = Path(parts[0]) if given.is_absolute() else Path()
    for k, part in enumerate(parts[1:] if given.is_absolute() else parts):
        candidate = found / part
        if part in (".", "..") or os.path.lexists(candidate):
            found = candidate
            continue
        names = _entries(found if str(found) else Path("."))
        last = k == len(parts) - (2 if given.is_absolute() else 1)
        if last and accept is not None:
            names = [n for n in names if accept(found / n)]
        else:
            names = [n for n in names if last or (found / n).is_dir()]
        close = _closest_name(part, names)
        if close is None:
            return None
        found = found / close
    if not os.path.lexists(found) or (accept is not None and not accept(found)):
        return None
    return str(found)


def did_you_mean_path(path: str | os.PathLike, accept: Callable[[Path], bool] | None = None) -> str:
    """`` (did you mean 'x'?)`` for the `nearest_path` ``x`` of ``path``, or ``""``."""
    found = nearest_path(path, accept)
    return "" if found is None else f" (did you mean {found!r}?)"
