r"""Algorithms as compositions: a per-state learner and a value update, found by name in one registry.

An [`Algorithm`][markovgames.dynamics.Algorithm] is a [`LearnerSpec`][markovgames.learners.LearnerSpec] (what every player runs at
every step and state) and a [`ValueUpdate`][markovgames.dynamics.ValueUpdate] (how the ``Q`` estimates
move, with its output policy); optimism and the learning rate are settings of a run
([`run`][markovgames.dynamics.run]). Names, resolved by [`get_algorithm`][markovgames.dynamics.get_algorithm]:

* ``LEARNER+UPDATE``: a learner (``markovgames algorithms list``; ``bm-NAME`` is the Blum–Mansour
  reduction over any external-regret learner ``NAME``) and ``smooth`` or ``stage``;
* the paper's names, aliases of compositions: ``smooth_ce`` = ``bm-logbarrier+smooth``
  (Algorithm 1), ``smooth_cce`` = ``hedge+smooth`` (Section 5's "Smooth OFTRL CCE"),
  ``stage_cce`` = ``hedge+stage`` (Algorithm 2);
* a user's algorithm or learner by reference: ``path/to/file.py:NAME`` or ``package.module:NAME``
  (an [`Algorithm`][markovgames.dynamics.Algorithm], or a ``LearnerSpec`` followed by ``+UPDATE``);
* the names that installed packages register in the entry-point group ``markovgames.algorithms``
  (each entry point an [`Algorithm`][markovgames.dynamics.Algorithm] or a ``LearnerSpec`` of the same name).

An unknown name is an error that lists the choices; nothing falls back to another algorithm.

[`get_algorithm`][markovgames.dynamics.get_algorithm] runs code: a reference loads a file or imports a module, and an
unknown name loads the installed packages' entry points. It is for names a user gives (a command
line, a configuration). A name read back from a file (a run directory's ``metrics.json``) goes
through [`builtin_algorithm`][markovgames.dynamics.builtin_algorithm], which can only look in the built-in registry: reading
results never imports what they name.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.metadata
import importlib.util
import math
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from .._files import FileTooLargeError, NotRegularFileError, read_bounded
from .._papers import parse_theory
from .._suggest import did_you_mean, suggestion
from .._usercode import fault
from ..games import DiscountedMarkovGame, MarkovGame
from ..learners import BM_LOGBARRIER, BUILTIN_LEARNERS, HEDGE, LearnerSpec, swap_regret
from ._discounted import DISCOUNTED_SMOOTH, DISCOUNTED_SMOOTH_LINEAR, DISCOUNTED_SMOOTH_UNIFORM
from ._interplay import STEP_SCHEDULES, StepSchedule, power_schedule
from ._smooth import SMOOTH, SMOOTH_LINEAR, SMOOTH_UNIFORM
from ._stage import STAGE
from ._value_update import ValueUpdate

__all__ = [
    "Algorithm",
    "ALGORITHMS",
    "VALUE_UPDATES",
    "ENTRY_POINT_GROUP",
    "get_algorithm",
    "builtin_algorithm",
    "loaded_file_source",
    "get_learner",
    "get_value_update",
    "registered",
    "Registry",
    "absolute_reference",
    "LearningRate",
    "resolve_learning_rate",
    "get_step_schedule",
]

#: The entry-point group through which installed packages register algorithms and learners.
ENTRY_POINT_GROUP = "markovgames.algorithms"

#: The value updates by name.
VALUE_UPDATES: dict[str, ValueUpdate] = {
    u.name: u
    for u in (
        SMOOTH,
        SMOOTH_UNIFORM,
        SMOOTH_LINEAR,
        STAGE,
        DISCOUNTED_SMOOTH,
        DISCOUNTED_SMOOTH_UNIFORM,
        DISCOUNTED_SMOOTH_LINEAR,
    )
}

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.+\-]*")
_SWAP_PREFIX = "bm-"


@dataclass(frozen=True)
class Algorithm:
    """A learning dynamic: a per-state learner and a value update (with its output policy).

    Names are checked when it is built: an unknown learner or value update is a ``ValueError``
    that lists the choices.

    Parameters
    ----------
    learner : LearnerSpec or str
        The learner, or its name (``hedge``, ``logbarrier``, ``rm-plus``, ``bm-...``; see
        ``markovgames algorithms list``).
    value_update : ValueUpdate or str
        `SMOOTH` (Algorithm 1, output policy Algorithm 3; `SMOOTH_UNIFORM` and `SMOOTH_LINEAR`
        with uniform or linear averaging) or `STAGE` (Algorithm 2, output policy Algorithm 4), or
        their names ``"smooth"``, ``"smooth-uniform"``, ``"smooth-linear"``, ``"stage"``.
    name : str, optional
        Its name in results and listings; ``LEARNER+UPDATE`` by default.
    description : str
        One line for listings.
    """

    learner: LearnerSpec
    value_update: ValueUpdate
    name: str = ""
    description: str = ""
    #: Where a user's algorithm (or its learner) was loaded from: the reference ``path.py:NAME``
    #: or ``module:NAME`` as given, or an installed package's entry point; ``None`` for built-ins.
    source: str | None = None
    #: The SHA-256 of the file it was loaded from (``None`` for built-ins and packages).
    source_sha256: str | None = None

    def __post_init__(self) -> None:
        learner = self.learner if isinstance(self.learner, LearnerSpec) else get_learner(self.learner)
        update = self.value_update if isinstance(self.value_update, ValueUpdate) else get_value_update(self.value_update)
        object.__setattr__(self, "learner", learner)
        object.__setattr__(self, "value_update", update)
        if not self.name:
            object.__setattr__(self, "name", f"{learner.name}+{update.name}")
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(f"algorithm name {self.name!r}: use letters, digits, '-', '_', '.' and '+', starting with a letter")

    @property
    def composition(self) -> str:
        """``LEARNER+UPDATE``."""
        return f"{self.learner.name}+{self.value_update.name}"

    @property
    def concept(self) -> Literal["ce", "cce"]:
        """The equilibrium its dynamics aim at: ``"ce"`` for a swap-regret learner, else ``"cce"``."""
        return "ce" if self.learner.swap_regret else "cce"

    @property
    def output_policy(self) -> str:
        """``"algorithm3"`` (smooth index chain, ``t_0 = T``), ``"algorithm4"`` (stage mixture), or
        ``"none"`` (a discounted update: no correlated output policy; its runs report the last and
        the weighted average iterates)."""
        if self.value_update.stationary:
            return "none"
        return "algorithm4" if self.value_update.index_kernel == "stage" else "algorithm3"

    @property
    def identity(self) -> str:
        """What distinguishes its numbers from another algorithm's: the name, and for a user's
        algorithm the content of its file (a saved run state must match it)."""
        if self.source is None:
            return self.name
        return f"{self.name}@{self.source_sha256 or self.source}"


#: The paper's three algorithms, by the names the paper's simulations use (aliases of compositions).
ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        Algorithm(BM_LOGBARRIER, SMOOTH, "smooth_ce", "Algorithm 1: BM-OFTRL with smooth value updates -> CE"),
        Algorithm(HEDGE, STAGE, "stage_cce", "Algorithm 2: optimistic Hedge, stage-based value updates -> CCE"),
        Algorithm(HEDGE, SMOOTH, "smooth_cce", "Section 5's 'Smooth OFTRL CCE' -> CCE"),
    )
}


# ---------------------------------------------------------------------------------------
# Lookup
# ---------------------------------------------------------------------------------------


def get_value_update(name: str | ValueUpdate) -> ValueUpdate:
    """The value update called ``name`` (``"smooth"``, ``"smooth-uniform"``, ``"smooth-linear"``
    or ``"stage"``; a
    [`ValueUpdate`][markovgames.dynamics.ValueUpdate] is returned as it is); the error lists the choices."""
    if isinstance(name, ValueUpdate):
        return name
    if isinstance(name, str) and name in VALUE_UPDATES:
        return VALUE_UPDATES[name]
    raise ValueError(f"unknown value update {name!r}{_suggest(name, VALUE_UPDATES)}; choose one of: {', '.join(VALUE_UPDATES)}")


def get_learner(name: str, base_dir: str | Path | None = None) -> LearnerSpec:
    """The learner called ``name``: a built-in one, ``bm-NAME`` over an external-regret learner,
    one registered by an installed package, or a reference ``path.py:NAME`` / ``module:NAME`` to a
    ``LearnerSpec`` (a relative path is taken from ``base_dir``, by default the working
    directory). The error lists the choices."""
    if isinstance(name, LearnerSpec):
        return name
    if not isinstance(name, str):
        raise ValueError(f"a learner is a LearnerSpec or a name, got {type(name).__name__}")
    if name in BUILTIN_LEARNERS:
        return BUILTIN_LEARNERS[name]
    if _is_reference(name):
        found, _ = _load_reference(name, base_dir)
        if not isinstance(found, LearnerSpec):
            raise ValueError(f"learner {name!r}: {_describe(found)} is not a markovgames.learners.LearnerSpec")
        return found
    plugins = registered()
    if name in plugins.learners:
        return plugins.learners[name]
    if name.startswith(_SWAP_PREFIX) and len(name) > len(_SWAP_PREFIX):
        base = name[len(_SWAP_PREFIX) :]
        known = {**BUILTIN_LEARNERS, **plugins.learners}
        if base in known and not known[base].swap_regret:
            return swap_regret(known[base])
    choices = [*BUILTIN_LEARNERS, *plugins.learners]
    raise ValueError(
        f"unknown learner {name!r}{_suggest(name, choices)}; choose one of: {', '.join(choices)} "
        "(or bm-NAME over an external-regret learner, or a reference path.py:NAME or module:NAME)"
    )


def get_algorithm(name: str | Algorithm, base_dir: str | Path | None = None, *, file_source: bytes | None = None) -> Algorithm:
    """The algorithm called ``name`` (see the module docstring for the forms); the error lists the choices.

    A relative file reference is taken from ``base_dir`` (by default the working directory).
    ``file_source``, for a file reference, is the file's content to run instead of what the file
    holds now: the bytes that another process read and hashed ([`loaded_file_source`][markovgames.dynamics.loaded_file_source]), so
    that a sweep's workers run exactly the code whose SHA-256 the sweep records.
    """
    if isinstance(name, Algorithm):
        return name
    if not isinstance(name, str):
        raise ValueError(f"an algorithm is an Algorithm or a name, got {type(name).__name__}")
    if name in ALGORITHMS:
        return ALGORITHMS[name]
    learner_part, plus, update_part = name.rpartition("+")
    if plus and update_part in VALUE_UPDATES and learner_part:
        if _is_reference(learner_part):
            found, digest = _load_reference(learner_part, base_dir, file_source)
            if not isinstance(found, LearnerSpec):
                raise ValueError(f"learner {learner_part!r}: {_describe(found)} is not a markovgames.learners.LearnerSpec")
            return Algorithm(found, VALUE_UPDATES[update_part], source=learner_part, source_sha256=digest)
        return Algorithm(get_learner(learner_part), VALUE_UPDATES[update_part])
    if plus and learner_part and _is_reference(learner_part) and not _is_reference(update_part):
        get_value_update(update_part)  # "path.py:NAME+UPDATE" with an unknown update: say so
    if _is_reference(name):
        found, digest = _load_reference(name, base_dir, file_source)
        if isinstance(found, LearnerSpec):
            raise ValueError(
                f"algorithm {name!r}: {found.name!r} is a learner; add the value update: {name}+smooth or {name}+stage"
            )
        if not isinstance(found, Algorithm):
            raise ValueError(f"algorithm {name!r}: {_describe(found)} is not a markovgames.dynamics.Algorithm")
        return dataclasses.replace(found, source=name, source_sha256=digest) if found.source is None else found
    plugins = registered()
    if name in plugins.algorithms:
        return plugins.algorithms[name]
    if plus and learner_part and update_part:
        # "LEARNER+UPDATE" with an unknown update: say which part is wrong.
        get_value_update(update_part)
    elsewhere = _runs_elsewhere(name)
    if elsewhere is not None:
        raise ValueError(elsewhere)
    choices = [*ALGORITHMS, *plugins.algorithms]
    # A learner's name alone ("hedge", "mwu", "rm+") is answered with LEARNER+smooth.
    learners = [*BUILTIN_LEARNERS, *plugins.learners] if not (plus and update_part) else []
    raise ValueError(
        f"unknown algorithm {name!r}{_suggest(name, choices, learners)}; choose one of: {', '.join(choices)}, "
        f"or LEARNER+UPDATE with LEARNER one of {', '.join([*BUILTIN_LEARNERS, *plugins.learners])} and UPDATE one of "
        f"{', '.join(VALUE_UPDATES)}, or a reference path.py:NAME or module:NAME (see 'markovgames algorithms list')"
    )


def builtin_algorithm(name: str) -> Algorithm:
    """The built-in algorithm called ``name``, looked up without running any code.

    Only the paper's names and ``LEARNER+UPDATE`` with a built-in learner (``bm-NAME`` over a
    built-in external-regret learner included) are found: a reference (``path.py:NAME``,
    ``module:NAME``) or an installed package's name is never loaded, since the name may come from
    a file that anyone could have written (a run directory read back). The error says so.
    """
    if not isinstance(name, str):
        raise ValueError(f"an algorithm name is a string, got {type(name).__name__}")
    if name in ALGORITHMS:
        return ALGORITHMS[name]
    learner_part, plus, update_part = name.rpartition("+")
    if plus and update_part in VALUE_UPDATES:
        learner = BUILTIN_LEARNERS.get(learner_part)
        if learner is None and learner_part.startswith(_SWAP_PREFIX):
            base = BUILTIN_LEARNERS.get(learner_part[len(_SWAP_PREFIX) :])
            learner = swap_regret(base) if base is not None and not base.swap_regret else None
        if learner is not None:
            return Algorithm(learner, VALUE_UPDATES[update_part])
    shown = name if len(name) <= 80 else name[:77] + "..."
    raise ValueError(
        f"{shown!r} is not a built-in algorithm (a user's file, module or installed package is never loaded to read a name back)"
    )


#: V-learning's names (`markovgames.dynamics.VLEARNING_ALGORITHMS`, which imports this module):
#: algorithms that learn from play, run by ``run_vlearning``, not by ``run``'s compiled loop.
_VLEARNING_NAMES = ("cce-v", "ce-v", "stage-v")
#: Other papers' names for what runs here another way (compared `normalized`: "EXP3-IX" is "exp3ix").
_EXP3 = ("exp3", "exp3ix")
_VLEARNING = ("vlearning", "vlearn")
_CFR = ("cfr", "counterfactualregret", "counterfactualregretminimization", "mccfr", "dcfr")


def _runs_elsewhere(name: str) -> str | None:
    """What ``name`` is, where it is an algorithm that is not a ``LEARNER+UPDATE`` dynamic of
    [`run`][markovgames.dynamics.run] but runs here another way (V-learning, from play; EXP3, a
    composition on bandit feedback), or has a counterpart here (CFR); else ``None``."""
    from .._suggest import normalized

    key = normalized(name)
    vlearning = {normalized(n): n for n in _VLEARNING_NAMES}
    if key in vlearning:
        found = vlearning[key]
        return (
            f"{name!r} is V-learning, which learns from play (docs/vlearning.md): run it with "
            f"'markovgames vlearn GAME --algorithm {found}' or run_vlearning(game, {found!r}, episodes)"
        )
    if key in _VLEARNING:
        return (
            f"{name!r}: V-learning learns from play (docs/vlearning.md): 'markovgames vlearn GAME --algorithm "
            f"{'|'.join(_VLEARNING_NAMES)}' or run_vlearning(game, ALGORITHM, episodes)"
        )
    if key in _EXP3:
        # Auer et al. (2002)'s EXP3 is Hedge fed importance-weighted loss estimates; the implicit
        # exploration ix of Neu (2015) makes it EXP3-IX: exactly a composition on bandit feedback.
        return (
            f"{name!r} is Hedge on bandit feedback (importance-weighted loss estimates, with implicit exploration "
            "ix; docs/vlearning.md): the composition hedge+smooth or hedge+stage without optimism on feedback "
            "bandit:M, e.g. 'markovgames run --game GAME --algorithm hedge+smooth --no-optimism --feedback bandit:1 "
            "-T ROUNDS --out DIR' or run_vlearning(game, 'hedge+smooth', episodes, feedback='bandit:1', optimistic=False)"
        )
    if key in _CFR:
        return (
            f"{name!r}: markovgames has no CFR (counterfactual regret minimization over an extensive-form game's "
            "information sets); here every state of the Markov game runs its own regret minimizer: regret "
            "matching+, CFR+'s rule, is rm-plus+smooth or rm-plus+stage, and bm-rm-plus+smooth its swap-regret "
            "form (for a correlated equilibrium)"
        )
    return None


def _suggest(name, choices, learners=()) -> str:
    """`` (did you mean 'x'?)``: by meaning (``mwu`` is ``hedge``), then by spelling
    (`markovgames._suggest`). An algorithm name that means a learner (``hedge``, ``mwu``) is
    answered with the learner and the smooth value update."""
    found = did_you_mean(str(name), choices)
    if not found and learners:
        learner = suggestion(str(name), learners)
        found = f" (did you mean '{learner}+smooth'?)" if learner else ""
    return found


def _describe(obj) -> str:
    return f"a {type(obj).__name__}"


# ---------------------------------------------------------------------------------------
# References to a user's file or module
# ---------------------------------------------------------------------------------------


def _is_reference(name: str) -> bool:
    return ":" in name


#: Files already loaded, by resolved path and content digest: loading one file twice would make
#: two different learner objects (and two compilations) of one algorithm.
_LOADED_FILES: dict[tuple[str, str], object] = {}


def _is_file_target(target: str) -> bool:
    return target.endswith(".py") or "/" in target or "\\" in target


def absolute_reference(name: str, base_dir: str | Path) -> str:
    """``name`` with a relative file reference (``path.py:NAME``, alone or before ``+UPDATE``)
    made absolute from ``base_dir``; any other name unchanged."""
    learner_part, plus, update_part = name.rpartition("+")
    if not (plus and update_part in VALUE_UPDATES):
        learner_part, plus, update_part = name, "", ""
    target, colon, attribute = learner_part.rpartition(":")
    if not colon or not _is_file_target(target) or Path(target).is_absolute():
        return name
    return f"{Path(base_dir).absolute() / target}:{attribute}{plus}{update_part}"


def _load_reference(ref: str, base_dir: str | Path | None = None, file_source: bytes | None = None):
    """``(object, sha256 or None)``: the object ``NAME`` of ``path.py:NAME`` or ``package.module:NAME``
    (a file's content given as ``file_source``, if not None); errors name the reference and what is wrong."""
    target, _, attribute = ref.rpartition(":")
    if not target or not attribute.isidentifier():
        raise ValueError(f"{ref!r}: a reference is path/to/file.py:NAME or package.module:NAME, with NAME a Python name")
    if _is_file_target(target):
        path = Path(target)
        path = path if base_dir is None or path.is_absolute() else Path(base_dir) / path
        module, digest = _load_file(ref, path, file_source)
    else:
        module, digest = _import_module(ref, target)
    if not hasattr(module, attribute):
        offered = sorted(k for k, v in vars(module).items() if isinstance(v, (Algorithm, LearnerSpec)))
        hint = f"; it defines {', '.join(offered)}" if offered else "; it defines no Algorithm or LearnerSpec"
        raise ValueError(f"{ref!r}: {target} has no attribute {attribute!r}{hint}")
    return getattr(module, attribute), digest


#: The content of every file loaded, by its SHA-256: what a sweep hands its workers.
_FILE_SOURCES: dict[str, bytes] = {}


def loaded_file_source(sha256: str) -> bytes | None:
    """The bytes of the user's file loaded in this process whose SHA-256 is ``sha256`` (an
    [`Algorithm`][markovgames.dynamics.Algorithm]'s ``source_sha256``), or ``None`` if no such file was loaded.

    The module was compiled from exactly these bytes; giving them to
    [`get_algorithm`][markovgames.dynamics.get_algorithm] (``file_source``) in another process runs the same code, whatever the
    file holds by then.
    """
    return _FILE_SOURCES.get(sha256)


def _load_file(ref: str, path: Path, source: bytes | None = None):
    """``(module, sha256)`` of the file ``path`` (or of its content ``source``), compiled from the
    very bytes that are hashed: the file is read once, so the code that runs is the code whose
    digest is recorded, even if the file changes meanwhile."""
    if source is None:
        if not path.exists():
            raise ValueError(f"{ref!r}: no such file {path}")
        if not path.is_file():
            raise ValueError(f"{ref!r}: {path} is not a regular file")
        source = _read_source(ref, path)
    digest = hashlib.sha256(source).hexdigest()
    _FILE_SOURCES.setdefault(digest, source)
    key = (str(path.resolve()), digest)
    if key in _LOADED_FILES:
        return _LOADED_FILES[key], digest
    module_name = f"markovgames_user_{digest[:16]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{ref!r}: {path} cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs, as an import would: dataclasses and pickling look modules up here.
    sys.modules[module_name] = module
    try:
        # Compiled from the bytes hashed above (the loader's exec_module would read the file a
        # second time); dont_inherit keeps this module's __future__ imports out of the user's code.
        exec(compile(source, str(path), "exec", dont_inherit=True), module.__dict__)  # noqa: S102 - the user's code, as asked
    except KeyboardInterrupt:
        del sys.modules[module_name]
        raise
    except BaseException as err:  # noqa: BLE001 - the user's code (an exit too): report where it failed, in one line
        del sys.modules[module_name]
        raise ValueError(f"{ref!r}: loading {path} failed: {_where(err, path)}") from None
    _LOADED_FILES[key] = module
    return module, digest


def _import_module(ref: str, target: str):
    try:
        module = importlib.import_module(target)
    except ModuleNotFoundError as err:
        if err.name and target.startswith(err.name):
            raise ValueError(f"{ref!r}: no module named {err.name!r} (is the package installed?)") from None
        raise ValueError(f"{ref!r}: importing {target} failed: {_where(err, None)}") from None
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # noqa: BLE001 - the user's code (an exit too): report where it failed, in one line
        raise ValueError(f"{ref!r}: importing {target} failed: {_where(err, None)}") from None
    digest = None
    file = getattr(module, "__file__", None)
    if file and Path(file).is_file():
        digest = hashlib.sha256(_read_source(ref, Path(file))).hexdigest()
    return module, digest


#: The largest source file of a user's learner that is read (a learner is a page or two of Python;
#: without a bound, a sparse file of gigabytes would be read whole, twice, before Python refused it).
MAX_SOURCE_BYTES = 16 * 2**20


def _read_source(ref: str, path: Path) -> bytes:
    """The bytes of a learner's source file, refused unread beyond `MAX_SOURCE_BYTES`."""
    try:
        return read_bounded(path, MAX_SOURCE_BYTES)
    except FileTooLargeError:
        raise ValueError(
            f"{ref!r}: {path} is more than {MAX_SOURCE_BYTES} bytes ({MAX_SOURCE_BYTES // 2**20} MiB), the limit of a learner's source file"
        ) from None
    except NotRegularFileError as err:
        raise ValueError(f"{ref!r}: {path} is not a regular file ({err.strerror})") from None
    except OSError as err:
        raise ValueError(f"{ref!r}: cannot read {path}: {err.strerror or err}") from None


def _where(err: BaseException, path: Path | None) -> str:
    """``file, line N: Type: message`` of the innermost frame in ``path`` (or the last frame)."""
    frames = traceback.extract_tb(err.__traceback__)
    if isinstance(err, SyntaxError) and err.lineno is not None:
        return f"line {err.lineno}: SyntaxError: {err.msg}"
    chosen = [f for f in frames if path is not None and Path(f.filename) == path] or frames[-1:]
    place = f"line {chosen[-1].lineno}: " if chosen else ""
    return f"{place}{fault(err)}"


# ---------------------------------------------------------------------------------------
# Installed packages
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Registry:
    """What installed packages register in the entry-point group ``markovgames.algorithms``.

    Attributes
    ----------
    algorithms, learners : by name.
    errors : ``(entry point, package, message)`` for each entry point that failed to load or is
        not an Algorithm or LearnerSpec of its own name; shown by ``markovgames algorithms list``.
    """

    algorithms: dict[str, Algorithm]
    learners: dict[str, LearnerSpec]
    errors: tuple[tuple[str, str, str], ...]


_REGISTRY: Registry | None = None


def registered(refresh: bool = False) -> Registry:
    """The algorithms and learners of installed packages (loaded once; ``refresh`` loads again)."""
    global _REGISTRY
    if _REGISTRY is not None and not refresh:
        return _REGISTRY
    algorithms: dict[str, Algorithm] = {}
    learners: dict[str, LearnerSpec] = {}
    errors: list[tuple[str, str, str]] = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        package = dist.name if dist is not None else "?"
        try:
            obj = ep.load()
        except KeyboardInterrupt:
            raise
        except BaseException as err:  # noqa: BLE001 - a broken plugin (sys.exit() too) must not break the others
            errors.append((ep.name, package, f"failed to load {ep.value}: {fault(err)}"))
            continue
        builtin = ep.name in ALGORITHMS or ep.name in BUILTIN_LEARNERS or ep.name in VALUE_UPDATES
        if builtin:
            errors.append((ep.name, package, "a built-in name; it cannot be replaced"))
        elif not isinstance(obj, (Algorithm, LearnerSpec)):
            errors.append((ep.name, package, f"{ep.value} is {_describe(obj)}, not an Algorithm or LearnerSpec"))
        elif obj.name != ep.name:
            errors.append((ep.name, package, f"{ep.value} is named {obj.name!r}, not {ep.name!r}"))
        elif isinstance(obj, Algorithm):
            version = getattr(dist, "version", None) if dist is not None else None
            source = f"{ep.value} ({package}{f' {version}' if version else ''})"
            algorithms[ep.name] = dataclasses.replace(obj, source=obj.source or source)
        else:
            learners[ep.name] = obj
    _REGISTRY = Registry(algorithms, learners, tuple(errors))
    return _REGISTRY


# ---------------------------------------------------------------------------------------
# Learning rates
# ---------------------------------------------------------------------------------------


#: A learning rate: a positive number (constant), one per player, or a theorem's rate, ``"theory"``
#: or ``"theory:PAPER"`` (`markovgames._papers.THEORY_RATES`).
LearningRate = float | tuple[float, ...] | str


def get_step_schedule(
    name: str | StepSchedule | None, base_dir: str | Path | None = None, *, file_source: bytes | None = None
) -> StepSchedule:
    """The step-size schedule called ``name``: ``"constant"`` (``None`` too), ``"sqrt"``,
    ``"power:P"`` (``eta_t = c t^-P``, ``P`` in ``[0, 1]``), or a reference ``path.py:NAME`` /
    ``module:NAME`` to a [`StepSchedule`][markovgames.dynamics.StepSchedule] or to a function
    ``f(t)`` of a NumPy array of iterations (``eta_t = c f(t)``). The error lists the choices.

    ``file_source``, for a file reference, is the file's content to run instead of what the file
    holds now, as for [`get_algorithm`][markovgames.dynamics.get_algorithm] (a sweep's workers)."""
    if name is None:
        return STEP_SCHEDULES["constant"]
    if isinstance(name, StepSchedule):
        return name
    if not isinstance(name, str):
        raise ValueError(f"a step-size schedule is a StepSchedule or a name, got {type(name).__name__}")
    if name in STEP_SCHEDULES:
        return STEP_SCHEDULES[name]
    if name.startswith("power:"):
        text = name[len("power:") :]
        try:
            power = float(text)
        except ValueError:
            raise ValueError(f"step-size schedule {name!r}: the exponent {text!r} is not a number (e.g. power:0.5)") from None
        try:
            return power_schedule(power)
        except ValueError as err:
            raise ValueError(f"step-size schedule {name!r}: {err}") from None
    if _is_reference(name):
        found, digest = _load_reference(name, base_dir, file_source)
        if isinstance(found, StepSchedule):
            # Its factors are the checked NumPy function's: a user's ``traced`` twin of it would run
            # unchecked inside the compiled loop, so it is not used.
            if found.source is None:
                return dataclasses.replace(found, source=name, source_sha256=digest, traced=None)
            return dataclasses.replace(found, traced=None)
        if callable(found) and not isinstance(found, (Algorithm, LearnerSpec)):
            return StepSchedule(name, found, f"eta_t = c * {name}(t)", source=name, source_sha256=digest)
        raise ValueError(f"step-size schedule {name!r}: {_describe(found)} is not a StepSchedule or a function f(t)")
    choices = [*STEP_SCHEDULES, "power:P"]
    raise ValueError(
        f"unknown step-size schedule {name!r}{_suggest(name, choices)}; choose one of: {', '.join(choices)}, "
        "or a reference path.py:NAME or module:NAME to a function f(t)"
    )


def resolve_learning_rate(
    eta: LearningRate, algorithm: Algorithm, game: MarkovGame | DiscountedMarkovGame
) -> tuple[float | tuple[float, ...], bool]:
    """Return ``(eta_scale, per_stage_theory)``.

    For a constant rate: ``(eta, False)``; for one rate per player, ``(tuple of rates, False)``.
    For a theorem's rate, ``"theory:PAPER"`` (``"theory"`` alone: ``theory:mao2024``, the only
    paper whose rates markovgames implements, `markovgames._papers.THEORY_RATES`), the
    value update's rate from that paper (proved for the paper's compositions, used for every
    learner): the smooth updates get Mao et al.'s Theorem 1 ``1/(256 N H sqrt(H A_max))`` (the
    paper gives none for smooth_cce; we use the same); the stage-based update gets ``(1.0,
    True)``: Theorem 2's per-stage rate ``1/(N max(1, ln L_tau)^4)`` is applied iteration by
    iteration. An unknown paper, or one whose rate is not implemented, is a ``ValueError``; so is
    any theorem's rate for a discounted update (the implemented rates are for finite-horizon games).
    """
    if isinstance(eta, str):
        paper = parse_theory(eta)
        if paper is None:
            raise ValueError(f"learning rate must be a positive number or 'theory' (or 'theory:PAPER'), got {eta!r}")
        return algorithm.value_update.theory_rate_for(game, paper)
    if isinstance(eta, (tuple, list, np.ndarray)):
        # One rate per player.
        rates = list(eta)
        if len(rates) != game.num_players:
            raise ValueError(f"learning rates per player: got {len(rates)} for a game of {game.num_players} players")
        return tuple(_one_rate(r) for r in rates), False
    if isinstance(eta, bool) or not isinstance(eta, (int, float)):
        raise ValueError(f"learning rate must be a positive number or 'theory', got {eta!r}")
    eta = float(eta)
    if not math.isfinite(eta) or eta <= 0.0:
        raise ValueError(f"learning rate must be a positive finite number, got {eta!r}")
    return eta, False


def _one_rate(rate) -> float:
    """One player's rate of a per-player list: a positive finite number."""
    if isinstance(rate, bool) or not isinstance(rate, (int, float, np.integer, np.floating)):
        raise ValueError(f"learning rates per player are positive numbers, got {rate!r} ('theory' is one rate for all players)")
    value = float(rate)
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"learning rates per player must be positive finite numbers, got {rate!r}")
    return value
