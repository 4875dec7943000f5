"""Sweep configurations: a TOML file validated by pydantic, with ``key=value`` overrides.

A configuration is a grid: every game (built-in, file, or random generator times seeds) is run
with every algorithm, optimism setting, learning rate, update order, step-size schedule and
feedback model (a sampled one once per seed, with its own draws), for ``T`` iterations, keeping
the metrics at the checkpoints. See ``docs/howto-sweep.md`` for the schema with examples.

Every error names the file and the key at fault, e.g.
``sweep.toml: algorithms[1]: unknown algorithm 'foo'; choose one of: smooth_ce, stage_cce, smooth_cce``,
one line per problem where there are several.
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..._errors import MarkovGamesError
from ..._files import FileTooLargeError, NotRegularFileError, read_bounded
from ..._suggest import did_you_mean, did_you_mean_path
from ..._text import abbreviate_digits, long_integer_in
from ...dynamics import BANDIT_RATES, DEFAULT_BANDIT_RATE, VLEARNING_ALGORITHMS, get_algorithm, max_learning_rate
from ...games import BUILTIN_GAMES, DISCOUNTED_GAMES, REWARD_DISTRIBUTIONS, GameValidationError, check_discount
from ..rundirs._directory import MAX_CHECKPOINTS
from ._bandit import check_bandit_settings
from ._values import (
    _bool_list,
    _eta_list,
    _feedback_list,
    _ix_setting,
    _non_negative_number,
    _order_list,
    _positive_finite,
    _positive_int,
    _schedule_list,
    _show,
    _strict_bool,
)

__all__ = [
    "SweepConfigError",
    "SweepConfig",
    "GameSpec",
    "RandomGameSpec",
    "AlgorithmSpec",
    "load_sweep_config",
    "parse_sweep_config",
    "apply_overrides",
    "parse_override",
    "resolved_checkpoints",
]

#: Points per decade of the default ``checkpoints = "log"`` grid.
LOG_POINTS_PER_DECADE = 10

#: The largest ``T``: the compiled loop counts iterations and stages in 32-bit integers.
MAX_T = 2**31 - 1

#: A configuration file larger than this is refused unread (configurations are a few kB).
MAX_CONFIG_BYTES = 16 * 2**20
#: The most parts a dotted key of a configuration may have (``games.0.random`` has three), and the
#: most characters a key may have: tomllib has no limits, and its time grows with the square of a
#: dotted key's parts (30,000 parts took 34 s, then exhausted the memory), so the text is scanned
#: for such keys (`_check_keys_text`) before it is parsed.
MAX_KEY_PARTS = 32
MAX_KEY_CHARS = 1024

# A "basic" string, unrolled (no alternation per character: a 16 MiB string scans in a blink).
_TOML_BASIC = r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"'
# A key: bare, "basic" or 'literal' (atomic, so that a long word is never retried from its middle).
_TOML_KEY = rf"(?>[A-Za-z0-9_-]++|{_TOML_BASIC}|'[^'\n]*+')"
_TOML_SCAN = re.compile(
    # (only where a key, a string or a comment starts: the scan passes anything else at once)
    r"(?=[A-Za-z0-9_\"'#-])(?:"
    # a dotted key of more parts than allowed: a chain of keys joined by dots
    rf"(?<![A-Za-z0-9_-])(?P<chain>{_TOML_KEY}(?:[ \t]*+\.[ \t]*+{_TOML_KEY}){{{MAX_KEY_PARTS},}})"
    # a key (a word or string followed by '=' or '.') on a line longer than a key may be
    rf"|(?<![A-Za-z0-9_-])(?=[A-Za-z0-9_\"'-])(?P<long>(?=[^\n]{{{MAX_KEY_CHARS + 1}}}){_TOML_KEY}[ \t]*+[.=])"
    # comments and strings, skipped whole so that nothing inside them counts
    r'|#[^\n]*+|"""(?:[^\\]|\\.)*?"""' + r"|'''.*?'''" + rf"|{_TOML_BASIC}|'[^'\n]*+')",
    re.DOTALL,
)
# What a line must have for the scan to find anything: more dots than a key's parts, or more
# characters than a key's (keys never span lines); most configurations have neither.
_TOML_SUSPECT = re.compile(rf"(?m)^(?:[^\n.]*+\.){{{MAX_KEY_PARTS - 1}}}|^[^\n]{{{MAX_KEY_CHARS}}}")


def _check_keys_text(text: str, source: str) -> None:
    """Refuse a configuration with a dotted key of more than `MAX_KEY_PARTS` parts, or a key of more
    than `MAX_KEY_CHARS` characters, from a scan of its text (linear in its length) before tomllib
    parses it."""
    suspects = [m.start() for m in _TOML_SUSPECT.finditer(text)]
    if not suspects:
        return
    if '"""' in text or "'''" in text:
        regions = [(0, len(text))]  # a multi-line string may span lines: scan the whole text
    else:
        regions = [(start, len(text) if text.find("\n", start) < 0 else text.find("\n", start)) for start in suspects]
    for begin, end in regions:
        _check_keys_region(text, begin, end, source)


def _check_keys_region(text: str, begin: int, end: int, source: str) -> None:
    for match in _TOML_SCAN.finditer(text, begin, end):
        if match.lastgroup is None:
            continue
        line = text.count("\n", 0, match.start()) + 1
        if match.lastgroup == "chain":
            raise SweepConfigError(
                f"{source}: line {line}: a dotted key of more than {MAX_KEY_PARTS} parts (a configuration's keys have a few)"
            )
        key = match.group("long").rstrip(" \t.=")
        length = len(key) - (2 if key[0] in "\"'" else 0)
        if length > MAX_KEY_CHARS:
            raise SweepConfigError(f"{source}: line {line}: a key of {length} characters, more than the {MAX_KEY_CHARS} allowed")


def is_builtin_name(name: str) -> bool:
    """Whether ``name`` is a built-in game of either kind (finite-horizon or discounted)."""
    return name in BUILTIN_GAMES or name in DISCOUNTED_GAMES


class SweepConfigError(MarkovGamesError, ValueError):
    """A sweep configuration is invalid; the message is one line naming the file and the key, one per
    problem where there are several (``problems``)."""


class _Strict(BaseModel):
    """A table whose unknown keys are errors that name the key and list the allowed ones."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _no_unknown_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            allowed = set(cls.model_fields)
            unknown = [k for k in data if k not in allowed]
            if unknown:
                hint = did_you_mean(str(unknown[0]), [k for k in cls.model_fields if k not in data])
                raise ValueError(f"unknown key {unknown[0]!r}{hint}; allowed keys: {', '.join(cls.model_fields)}")
        return data


class RandomGameSpec(_Strict):
    """``random = {players, horizon, states, actions, seed?, ...}``: [`markovgames.games.random_game`][markovgames.games.random_game];
    with ``discount`` in place of ``horizon``, a discounted game
    ([`markovgames.games.random_discounted_game`][markovgames.games.random_discounted_game], as
    ``markovgames games random --discount G`` draws it).

    Without ``seed`` the generator is run once per sweep seed (``seeds``, spawned from
    ``base_seed``); with ``seed`` it is one fixed game.
    """

    players: int
    horizon: int | None = None
    discount: float | None = None
    states: int
    actions: int | list[int]
    seed: int | None = None
    reward_distribution: str = "uniform"
    transition_concentration: float = 1.0
    initial_state: int = 0
    successors: int | None = None
    zero_sum: bool = False

    @model_validator(mode="before")
    @classmethod
    def _one_length(cls, data: Any) -> Any:
        # Exactly one of the horizon (a finite-horizon game) and the discount (a discounted one),
        # as 'markovgames games random' takes exactly one of --horizon and --discount.
        if isinstance(data, dict) and ("horizon" in data) == ("discount" in data):
            got = "both" if "horizon" in data else "neither"
            raise ValueError(f"give exactly one of horizon (a finite-horizon game) and discount (a discounted game), got {got}")
        return data

    @field_validator("players", "horizon", "states", mode="before")
    @classmethod
    def _sizes(cls, v: Any, info: ValidationInfo) -> Any:
        if v is None and info.field_name == "horizon":
            return v
        return _positive_int(v)

    @field_validator("discount", mode="before")
    @classmethod
    def _discount(cls, v: Any) -> Any:
        if v is None:
            return v
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"expected a number in [0, 1), got {_show(v)}")
        try:
            return check_discount(float(v))
        except OverflowError:  # an integer beyond float64
            raise ValueError(f"expected a number in [0, 1), got {_show(v)}") from None
        except GameValidationError as err:  # "discount = 1.0 is not below 1 (...)": the key is named already
            raise ValueError(str(err).removeprefix("discount = ")) from None

    @field_validator("actions", mode="before")
    @classmethod
    def _actions(cls, v: Any) -> int | list[int]:
        if isinstance(v, list):
            if not v:
                raise ValueError("expected a positive integer or a non-empty list of them")
            return [_positive_int(a, f"[{k}]") for k, a in enumerate(v)]
        return _positive_int(v)

    @field_validator("seed", "initial_state", mode="before")
    @classmethod
    def _non_negative(cls, v: Any, info) -> Any:
        if v is None and info.field_name == "seed":
            return v
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"expected a non-negative integer, got {_show(v)}")
        return v

    @field_validator("successors", mode="before")
    @classmethod
    def _successors(cls, v: Any) -> int | None:
        return None if v is None else _positive_int(v)

    @field_validator("zero_sum", mode="before")
    @classmethod
    def _zero_sum(cls, v: Any) -> bool:
        return _strict_bool(v)

    @field_validator("reward_distribution")
    @classmethod
    def _distribution(cls, v: str) -> str:
        if v not in REWARD_DISTRIBUTIONS:
            raise ValueError(
                f"unknown reward distribution {v!r}{did_you_mean(v, REWARD_DISTRIBUTIONS)}; "
                f"choose one of: {', '.join(REWARD_DISTRIBUTIONS)}"
            )
        return v

    @field_validator("transition_concentration", mode="before")
    @classmethod
    def _concentration(cls, v: Any) -> float:
        if not _positive_finite(v):
            raise ValueError(f"expected a positive finite number, got {_show(v)}")
        return float(v)

    @model_validator(mode="after")
    def _consistent(self) -> RandomGameSpec:
        if isinstance(self.actions, list) and len(self.actions) != self.players:
            raise ValueError(f"actions has {len(self.actions)} entries but players = {self.players}")
        if self.initial_state >= self.states:
            raise ValueError(f"initial_state = {self.initial_state} is not below states = {self.states}")
        if self.successors is not None and self.successors > self.states:
            raise ValueError(f"successors = {self.successors} exceeds states = {self.states}")
        if self.zero_sum and self.players != 2:
            raise ValueError(f"zero_sum = true needs players = 2 (a zero-sum game has two players), got {self.players}")
        return self

    @property
    def discounted(self) -> bool:
        """Whether the spec draws a discounted game (``discount`` given, not ``horizon``)."""
        return self.discount is not None

    @property
    def action_tuple(self) -> tuple[int, ...]:
        if isinstance(self.actions, list):
            return tuple(self.actions)
        return (self.actions,) * self.players


class GameSpec(_Strict):
    """One entry of ``games``: a string (built-in name, else a file), or a table.

    Tables: ``{builtin = "paper"}``, ``{file = "g.json"}`` (relative to the configuration file)
    or ``{random = {...}}``; each may add ``label`` (the name in results and figures).
    """

    builtin: str | None = None
    file: str | None = None
    random: RandomGameSpec | None = None
    label: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        if isinstance(data, str):
            if not data:
                raise ValueError("expected a built-in game name or a game file, got ''")
            return {"builtin": data} if is_builtin_name(data) else {"file": data}
        if not isinstance(data, dict):
            raise ValueError(
                f"expected a built-in game name, a file name, or a table with builtin, file or random; got {_show(data)}"
            )
        return data

    @field_validator("builtin")
    @classmethod
    def _known_builtin(cls, v: str | None) -> str | None:
        if v is not None and not is_builtin_name(v):
            names = [*BUILTIN_GAMES, *DISCOUNTED_GAMES]
            raise ValueError(f"unknown built-in game {v!r}{did_you_mean(v, names)}; choose one of: {', '.join(sorted(names))}")
        return v

    @model_validator(mode="after")
    def _exactly_one(self) -> GameSpec:
        given = [k for k in ("builtin", "file", "random") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of builtin, file, random (got {', '.join(given) or 'none'})")
        return self


class AlgorithmSpec(_Strict):
    """One entry of ``algorithms``: a name, or ``{name = ..., optimistic = ..., etas = ...}``.

    ``optimistic``, ``etas``, ``orders``, ``eta_schedules``, ``regret`` and ``feedbacks`` here
    replace the sweep-wide settings for this algorithm; ``bonus``, ``ix`` and ``bandit_rate`` apply
    to its bandit runs. A V-learning name (``cce-v``, ``ce-v``, ``stage-v``) runs on ``bandit:1`` with its papers'
    rates and no optimism, whatever the sweep-wide ``feedbacks``, ``etas`` and ``optimistic`` say
    (`markovgames.experiments._sweep_bandit`).
    """

    name: str
    optimistic: list[bool] | None = None
    etas: list[float | str] | None = None
    orders: list[str] | None = None
    eta_schedules: list[str] | None = None
    regret: bool | None = None
    feedbacks: list[str] | None = None
    #: Bandit feedback only (V-learning, or a composition under ``bandit:M``): the bonus constant
    #: ``c`` and a composition's implicit exploration, a constant (default: the library's, decaying;
    #: ``"decaying"`` written out is the default).
    bonus: float | None = None
    ix: float | None = None
    #: ... and a composition's learning-rate schedule over a state's visits, ``"decaying"`` or
    #: ``"constant"`` (default: the library's, decaying; `markovgames.dynamics.BANDIT_RATES`).
    bandit_rate: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        if isinstance(data, str):
            _check_algorithm(data)
            return {"name": data}
        if not isinstance(data, dict):
            raise ValueError(f"expected an algorithm name or a table with 'name'; got {_show(data)}")
        return data

    @field_validator("name")
    @classmethod
    def _known(cls, v: str) -> str:
        return _check_algorithm(v)

    @field_validator("optimistic", mode="before")
    @classmethod
    def _optimistic(cls, v: Any) -> Any:
        return _bool_list(v)

    @field_validator("etas", mode="before")
    @classmethod
    def _etas(cls, v: Any) -> Any:
        return None if v is None else _eta_list(v)

    @field_validator("orders", mode="before")
    @classmethod
    def _orders(cls, v: Any) -> Any:
        return None if v is None else _order_list(v)

    @field_validator("eta_schedules", mode="before")
    @classmethod
    def _schedules(cls, v: Any) -> Any:
        return None if v is None else _schedule_list(v)

    @field_validator("regret", mode="before")
    @classmethod
    def _regret(cls, v: Any) -> Any:
        return None if v is None else _strict_bool(v)

    @field_validator("feedbacks", mode="before")
    @classmethod
    def _feedbacks(cls, v: Any) -> Any:
        return None if v is None else _feedback_list(v)

    @field_validator("bonus", "ix", mode="before")
    @classmethod
    def _bandit_numbers(cls, v: Any, info: ValidationInfo) -> Any:
        return _ix_setting(v) if info.field_name == "ix" else _non_negative_number(v)

    @field_validator("bandit_rate", mode="before")
    @classmethod
    def _bandit_rate(cls, v: Any) -> Any:
        if v is not None and not (isinstance(v, str) and v in BANDIT_RATES):
            raise ValueError(f"expected one of {', '.join(map(repr, BANDIT_RATES))}, got {_show(v)}")
        return None if v == DEFAULT_BANDIT_RATE else v  # the default written out: the same runs as without


def _check_algorithm(name: str) -> str:
    if ":" in name or name in VLEARNING_ALGORITHMS:
        # A reference to a user's file or module: resolved when the sweep is planned (a file is
        # relative to the configuration file's directory). V-learning runs on bandit feedback.
        return name
    try:
        get_algorithm(name)  # an unknown name is an error listing the choices
    except ValueError as err:
        # "cce_v": V-learning's, not a composition's ("mwu+stage" is a composition: its own error says which part is wrong)
        hint = "" if "+" in name else did_you_mean(name, VLEARNING_ALGORITHMS)
        if hint:
            raise ValueError(
                f"unknown algorithm {name!r}{hint}; the V-learning algorithms are {', '.join(VLEARNING_ALGORITHMS)}"
            ) from None
        raise err from None
    return name


class SweepConfig(_Strict):
    """A sweep: games x algorithms x optimism x learning rates x update orders x step-size
    schedules x feedback models x seeds, for ``T`` iterations (``regret``: also every run's regret
    curves). A feedback model that draws samples (``sampled:K``, ``bandit:M``) runs every game once
    per seed; under ``bandit:M`` (and V-learning, ``bandit:1``) ``T`` counts rounds of ``M`` episodes."""

    name: str | None = None
    games: list[GameSpec]
    algorithms: list[AlgorithmSpec]
    # mypy cannot give a lambda's list the element type of a union of callables ([0.2] is one).
    etas: list[float | str] = Field(default_factory=lambda: [0.2])  # type: ignore[arg-type]
    optimistic: list[bool] = Field(default_factory=lambda: [True])
    T: int
    checkpoints: list[int] | Literal["log", "decades"] = "log"
    seeds: int = 1
    base_seed: int = 0
    dtype: Literal["float64", "float32"] = "float64"
    max_retries: int = 1
    max_batch_size: int | None = None
    out: str | None = None
    exact: bool = False
    last_iterate: bool = False
    weighted_average: bool = False
    orders: list[str] = Field(default_factory=lambda: ["simultaneous"])
    eta_schedules: list[str] = Field(default_factory=lambda: ["constant"])
    regret: bool = False
    feedbacks: list[str] = Field(default_factory=lambda: ["full"])

    @field_validator("exact", "last_iterate", "weighted_average", "regret", mode="before")
    @classmethod
    def _exact(cls, v: Any) -> bool:
        return _strict_bool(v)

    @field_validator("orders", mode="before")
    @classmethod
    def _orders(cls, v: Any) -> Any:
        return _order_list(v)

    @field_validator("eta_schedules", mode="before")
    @classmethod
    def _schedules(cls, v: Any) -> Any:
        return _schedule_list(v)

    @field_validator("feedbacks", mode="before")
    @classmethod
    def _feedbacks(cls, v: Any) -> Any:
        return _feedback_list(v)

    @field_validator("games", "algorithms", mode="before")
    @classmethod
    def _non_empty(cls, v: Any) -> Any:
        if isinstance(v, list) and not v:
            raise ValueError("must not be empty")
        return v

    @field_validator("etas", mode="before")
    @classmethod
    def _etas(cls, v: Any) -> Any:
        return _eta_list(v)

    @field_validator("optimistic", mode="before")
    @classmethod
    def _optimistic(cls, v: Any) -> Any:
        return _bool_list(v)

    @field_validator("T", "seeds", mode="before")
    @classmethod
    def _positive(cls, v: Any, info) -> int:
        if isinstance(v, float):
            # A count is an integer here as in game files (where 2.0 is refused too); TOML
            # writes large ones with underscores.
            raise ValueError(f"expected a positive integer, got {_show(v)} (a float; write e.g. 20000 or 20_000)")
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"expected a positive integer, got {_show(v)}")
        if info.field_name == "T" and v > MAX_T:
            raise ValueError(f"{v} is more than the largest supported T = {MAX_T}")
        return v

    @field_validator("max_batch_size", mode="before")
    @classmethod
    def _batch(cls, v: Any) -> Any:
        if v is None:
            return v
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"expected a positive integer, got {_show(v)}")
        return v

    @field_validator("base_seed", "max_retries", mode="before")
    @classmethod
    def _non_negative(cls, v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"expected a non-negative integer, got {_show(v)}")
        return v

    @field_validator("checkpoints", mode="before")
    @classmethod
    def _checkpoints(cls, v: Any) -> Any:
        if isinstance(v, str):
            if v not in ("log", "decades"):
                raise ValueError(f"expected 'log', 'decades' or a list of positive integers, got {_show(v)}")
            return v
        if not isinstance(v, list) or not v:
            raise ValueError(f"expected 'log', 'decades' or a non-empty list of positive integers, got {_show(v)}")
        if len(v) > MAX_CHECKPOINTS:  # every run keeps a record per checkpoint
            raise ValueError(f"{len(v)} checkpoints, more than the limit of {MAX_CHECKPOINTS}")
        for k, c in enumerate(v):
            if isinstance(c, bool) or not isinstance(c, int) or c < 1:
                raise ValueError(f"[{k}]: expected a positive integer, got {_show(c)}")
        return v

    @model_validator(mode="after")
    def _checkpoints_within_T(self) -> SweepConfig:
        if isinstance(self.checkpoints, list):
            beyond = [c for c in self.checkpoints if c > self.T]
            if beyond:
                raise ValueError(f"checkpoints: {beyond[0]} is beyond T = {self.T}")
        return self

    @model_validator(mode="after")
    def _bandit_settings(self) -> SweepConfig:
        # V-learning and bandit feedback: the keys that do not apply to them, named.
        check_bandit_settings(self)
        return self

    @model_validator(mode="after")
    def _etas_within_precision(self) -> SweepConfig:
        # Before any run: a rate the dtype cannot resolve would stop the sweep midway. The
        # horizon is not known before the games are built; each run checks T + H itself.
        limit = max_learning_rate(self.T, 0, self.dtype)
        lists = [("etas", self.etas)] + [
            (f"algorithms[{k}].etas", a.etas) for k, a in enumerate(self.algorithms) if a.etas is not None
        ]
        for key, etas in lists:
            for j, eta in enumerate(etas):
                if not isinstance(eta, str) and eta > limit:
                    raise ValueError(
                        f"{key}[{j}]: learning rate {eta:g} is too large for T = {self.T} in {self.dtype} "
                        f"(at most {limit:.3g}; see markovgames.dynamics.max_learning_rate)"
                    )
        return self


def resolved_checkpoints(config: SweepConfig) -> list[int]:
    """The checkpoints ``T'`` kept for every run: sorted, unique, always including ``T``."""
    from .._grid import log_grid
    from ..rundirs._directory import default_checkpoints

    T = config.T
    if config.checkpoints == "log":
        points = [int(x) for x in log_grid(T, LOG_POINTS_PER_DECADE)]
    elif config.checkpoints == "decades":
        points = default_checkpoints(T)
    else:
        points = list(config.checkpoints)
    return sorted(set(points) | {T})


# ---------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------
def _loc(parts: tuple[Any, ...]) -> str:
    text = ""
    for p in parts:
        if isinstance(p, int):
            text += f"[{p}]"
        else:
            text += ("." if text else "") + str(p)
    return text


def _message(error: Mapping[str, Any]) -> str:
    ctx = error.get("ctx") or {}
    if error.get("type") == "value_error" and "error" in ctx:
        msg = str(ctx["error"])
    else:
        msg = error.get("msg", "invalid value")
        if error.get("type") == "missing":
            msg = "required key is missing"
        elif error.get("type") == "extra_forbidden":
            msg = "unknown key"
        elif "input" in error and error.get("type") != "missing":
            msg = f"{msg[:1].lower()}{msg[1:]}, got {_show(error['input'])}"
    return msg


def _format_validation_error(source: str, err: ValidationError) -> list[str]:
    """Every problem that pydantic found, one line each naming its key (``sweep.toml: etas[1]: ...``),
    in the order of the configuration; one per key (a union's members report one problem each)."""
    lines: dict[str, str] = {}
    for error in err.errors():
        # Drop pydantic's union-member tags (e.g. 'list[int]', 'literal[...]') from the location.
        loc = tuple(p for p in error["loc"] if isinstance(p, int) or not re.search(r"[\[\]']", str(p)))
        msg = _message(error)
        # A nested index error ("[2]: ...") reads best glued to the key: "etas[2]: ...".
        m = re.match(r"^(\[\d+\])+: ", msg)
        where = _loc(loc)
        if m:
            where += m.group(0)[:-2]
            msg = msg[m.end() :]
        lines.setdefault(where, f"{source}: {where}: {msg}" if where else f"{source}: {msg}")
    return list(lines.values())


# ---------------------------------------------------------------------------------------
# Overrides
# ---------------------------------------------------------------------------------------
_KEY_PART = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|(\d+)")


def _split_key(key: str) -> list[str | int]:
    """``games[0].random.states`` or ``games.0.random.states`` -> ``['games', 0, 'random', 'states']``."""
    parts: list[str | int] = []
    for chunk in key.split("."):
        if not chunk:
            raise SweepConfigError.for_argument("override", "empty key component", f"{key!r}")
        pos = 0
        while pos < len(chunk):
            m = _KEY_PART.match(chunk, pos)
            if not m or m.end() == pos:
                raise SweepConfigError.for_argument("override", f"cannot parse the key at {chunk[pos:]!r}", f"{key!r}")
            name, idx, bare = m.groups()
            parts.append(name if name is not None else int(idx if idx is not None else bare))
            pos = m.end()
    return parts


def parse_override(text: str) -> tuple[list[str | int], Any]:
    """Parse ``KEY=VALUE``: a dotted key and a TOML value (a bare word is taken as a string)."""
    if "=" not in text:
        raise SweepConfigError.for_argument("override", "expected KEY=VALUE", f"{text!r}")
    key, raw = text.split("=", 1)
    key, raw = key.strip(), raw.strip()
    if not key:
        raise SweepConfigError.for_argument("override", "empty key", f"{text!r}")
    if not raw:
        raise SweepConfigError.for_argument("override", "empty value", f"{text!r}")
    try:
        _check_keys_text(f"v = {raw}", "--set")  # an inline table's dotted keys: bounded as in a file
    except SweepConfigError as err:
        raise SweepConfigError.for_argument("override", str(err).split(": ", 2)[-1], f"{key}") from None
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except RecursionError:
        raise SweepConfigError.for_argument("override", "the value is nested too deep to parse", f"{key}") from None
    except tomllib.TOMLDecodeError as err:
        if raw[0] in "[{\"'" or not re.fullmatch(r"[A-Za-z0-9_./:+-]+", raw):
            raise SweepConfigError.for_argument("override", f"{raw!r} is not a TOML value ({err})", f"{key}") from None
        value = raw  # a bare word: a string
    except ValueError:  # an integer of more digits than Python converts
        where = long_integer_in(raw) or "an integer of too many digits"
        raise SweepConfigError.for_argument("override", where.split(": ", 1)[-1], f"{key}") from None
    return _split_key(key), value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Return a copy of the raw configuration with each ``KEY=VALUE`` applied in order."""
    data = copy.deepcopy(data)
    for text in overrides:
        path, value = parse_override(text)
        node: Any = data
        for depth, part in enumerate(path[:-1]):
            where = _loc(tuple(path[: depth + 1]))
            if isinstance(part, int):
                if not isinstance(node, list):
                    raise SweepConfigError.for_argument(
                        "override", f"{_loc(tuple(path[:depth])) or 'the configuration'} is not a list", f"{_loc(tuple(path))}"
                    )
                if part >= len(node):
                    raise SweepConfigError.for_argument(
                        "override", f"{where} is out of range ({len(node)} entries)", f"{_loc(tuple(path))}"
                    )
                if isinstance(node[part], str) and isinstance(path[depth + 1], str):
                    # "paper" written as a string: expand to its table form to set a field of it.
                    node[part] = {"builtin": node[part]} if is_builtin_name(node[part]) else {"file": node[part]}
                node = node[part]
            else:
                if not isinstance(node, dict):
                    raise SweepConfigError.for_argument(
                        "override", f"{_loc(tuple(path[:depth]))} is not a table", f"{_loc(tuple(path))}"
                    )
                node = node.setdefault(part, {})
        last = path[-1]
        if isinstance(last, int):
            if not isinstance(node, list) or last >= len(node):
                raise SweepConfigError.for_argument("override", "no such list entry", f"{_loc(tuple(path))}")
            node[last] = value
        else:
            if not isinstance(node, dict):
                raise SweepConfigError.for_argument(
                    "override", f"{_loc(tuple(path[:-1]))} is not a table", f"{_loc(tuple(path))}"
                )
            node[last] = value
    return data


# ---------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------
def parse_sweep_config(data: dict[str, Any], source: str = "config") -> SweepConfig:
    """Validate a raw configuration (a dict as read from TOML); errors name ``source`` and the key."""
    try:
        return SweepConfig.model_validate(data)
    except ValidationError as err:
        raise SweepConfigError.of_problems(_format_validation_error(source, err)) from None


def load_sweep_config(path: str | Path, overrides: list[str] | None = None) -> tuple[SweepConfig, dict[str, Any]]:
    """Read, override and validate a TOML sweep configuration.

    Returns the validated configuration and the raw dictionary after the overrides (stored in
    the manifest).
    """
    path = Path(path)
    source = path.name
    try:
        # A regular file, read with a bound: a FIFO or a device would hang or never end.
        data = read_bounded(path, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise SweepConfigError(f"{path}: no such configuration file{did_you_mean_path(path, Path.is_file)}") from None
    except NotRegularFileError as err:
        if path.is_dir():
            raise SweepConfigError(f"{path}: is a directory, not a configuration file") from None
        raise SweepConfigError(f"{path}: {err.strerror}; a configuration is a TOML file") from None
    except FileTooLargeError:
        raise SweepConfigError(f"{source}: more than {MAX_CONFIG_BYTES} bytes; a configuration is a short TOML file") from None
    except OSError as err:
        raise SweepConfigError(f"{path}: cannot read: {err.strerror or err}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SweepConfigError(f"{source}: not UTF-8 text") from None
    _check_keys_text(text, source)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise SweepConfigError(f"{source}: invalid TOML: {err}") from None
    except RecursionError:  # arrays or tables nested thousands deep
        raise SweepConfigError(f"{source}: invalid TOML: nested too deep to parse") from None
    except ValueError as err:  # an integer of more digits than Python converts
        raise SweepConfigError(f"{source}: {long_integer_in(text) or abbreviate_digits(str(err))}") from None
    try:
        raw = apply_overrides(raw, list(overrides or []))
        return parse_sweep_config(raw, source), raw
    except RecursionError:  # parsed, but too deep to copy or validate
        raise SweepConfigError(f"{source}: nested too deep to read") from None
