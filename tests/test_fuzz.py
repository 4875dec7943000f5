"""Fuzzing the readers: game files and sweep configurations, valid and corrupted.

Whatever the bytes, :func:`markovgames.games.load_game` returns a game or raises
:class:`~markovgames.games.GameValidationError` (in fact its subclass ``GameFileError``) whose
message starts with the file's path, and :func:`load_sweep_config` returns a configuration or
raises ``SweepConfigError`` (a ``ValueError``) whose message names the file. No other exception
type, and no hang: each read is timed.

Valid inputs are built from random small games (``random_game`` -> ``game_to_dict``) and random
sweep grids; corrupted ones by structural mutations (keys deleted, added or renamed; values
replaced by other JSON/TOML values, NaN, infinities, huge integers; arrays nested one level
deeper or shallower; list entries dropped or repeated) and by byte-level damage (truncation,
flipped and inserted bytes, pure garbage). 30 examples per test, about 180 in all.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples
from markovgames.dynamics import ALGORITHMS
from markovgames.experiments.sweeps._config import SweepConfig, SweepConfigError, load_sweep_config
from markovgames.games import BUILTIN_GAMES, GameValidationError, MarkovGame, game_to_dict, load_game, random_game, save_game

#: Seconds one read may take before it counts as a hang (the files are at most a few kB).
READ_LIMIT_S = 10.0

#: Examples per test (6 tests): 30, 300 in the full mode; MARKOVGAMES_FUZZ_EXAMPLES=5000 for a long local session.
FUZZ = settings(
    max_examples=int(os.environ.get("MARKOVGAMES_FUZZ_EXAMPLES", examples(30, 300))),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------
def _load_game_checked(path: Path):
    """``load_game``: a game, or a GameValidationError naming the file; anything else fails."""
    start = time.perf_counter()
    try:
        result = load_game(path)
    except GameValidationError as err:
        message = str(err)
        assert message.startswith(f"{path}: "), message
        assert "\n" not in message.strip(), message
        result = err
    assert time.perf_counter() - start < READ_LIMIT_S
    return result


def _load_config_checked(path: Path):
    start = time.perf_counter()
    try:
        result, _ = load_sweep_config(path)
    except SweepConfigError as err:
        assert isinstance(err, ValueError)
        message = str(err)
        assert path.name in message, message
        result = err
    assert time.perf_counter() - start < READ_LIMIT_S
    return result


def _paths(obj, prefix=()):
    """Every path into a nested dict/list structure, the root included."""
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for k, v in enumerate(obj):
            yield from _paths(v, prefix + (k,))


def _get(obj, path):
    for k in path:
        obj = obj[k]
    return obj


# A JSON/TOML value of any kind, small. (None is left out for TOML, which has no null.)
_scalars = st.one_of(
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0, 1, 2, -1, 10**6, 2**63, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.5, 1.5, -0.2, 1e308, float("nan"), float("inf"), -float("inf")]),
    st.text(max_size=8),
)
_values = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6
)


def _mutate(data, obj, *, allow_none: bool):
    """Apply one random structural mutation to ``obj`` (a dict) in place."""
    paths = [p for p in _paths(obj) if p]  # not the root itself
    path = data.draw(st.sampled_from(paths), label="path")
    parent = _get(obj, path[:-1])
    key = path[-1]
    current = parent[key]
    kinds = ["replace", "wrap", "delete", "add_key", "number"]
    if isinstance(current, list) and current:
        kinds += ["unwrap", "repeat", "drop_entry"]
    kind = data.draw(st.sampled_from(kinds), label="mutation")
    values = _values | st.none() if allow_none else _values
    if kind == "replace":
        parent[key] = data.draw(values, label="value")
    elif kind == "wrap":
        parent[key] = [current]
    elif kind == "delete":
        del parent[key]
    elif kind == "add_key":
        target = parent if isinstance(parent, dict) else obj
        target[data.draw(st.text(min_size=1, max_size=8), label="new key")] = data.draw(values, label="value")
    elif kind == "number":
        parent[key] = data.draw(st.sampled_from([-1, 0, 1.5, -0.25, float("nan"), float("inf"), 10**400, True]), label="number")
    elif kind == "unwrap":
        parent[key] = current[0]
    elif kind == "repeat":
        current.append(current[-1])
    elif kind == "drop_entry":
        current.pop(data.draw(st.integers(0, len(current) - 1), label="entry"))


def _damage_bytes(data, raw: bytes) -> bytes:
    kind = data.draw(st.sampled_from(["truncate", "flip", "insert", "garbage"]), label="damage")
    if kind == "truncate":
        return raw[: data.draw(st.integers(0, max(0, len(raw) - 1)), label="cut")]
    if kind == "flip":
        out = bytearray(raw)
        for _ in range(data.draw(st.integers(1, 4), label="flips")):
            k = data.draw(st.integers(0, len(out) - 1), label="at")
            out[k] = data.draw(st.integers(0, 255), label="byte")
        return bytes(out)
    if kind == "insert":
        k = data.draw(st.integers(0, len(raw)), label="at")
        return raw[:k] + data.draw(st.binary(min_size=1, max_size=16), label="bytes") + raw[k:]
    return data.draw(st.binary(max_size=64), label="garbage")


# ---------------------------------------------------------------------------------------
# game files
# ---------------------------------------------------------------------------------------
@st.composite
def small_games(draw) -> MarkovGame:
    n = draw(st.integers(1, 3), label="players")
    actions = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n), label="actions")
    states = draw(st.integers(1, 3), label="states")
    return random_game(
        n,
        draw(st.integers(1, 2), label="horizon"),
        states,
        actions,
        seed_or_rng=draw(st.integers(0, 2**32 - 1), label="seed"),
        reward_distribution=draw(st.sampled_from(["uniform", "bernoulli"])),
        initial_state=draw(st.integers(0, states - 1), label="initial state"),
        name=draw(st.text(max_size=12).filter(lambda s: "\x00" not in s), label="name"),
    )


@FUZZ
@given(game=small_games(), suffix=st.sampled_from([".json", ".npz"]))
def test_valid_game_files_load_back_equal(game, suffix):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"game{suffix}"
        save_game(game, path)
        loaded = _load_game_checked(path)
        assert isinstance(loaded, MarkovGame) and loaded == game
        # the dict a user would write by hand, through json.dumps
        path = Path(tmp) / "by_hand.json"
        path.write_text(json.dumps(game_to_dict(game)))
        assert _load_game_checked(path) == game


@FUZZ
@given(game=small_games(), data=st.data())
def test_mutated_game_json_is_loaded_or_refused_cleanly(game, data):
    doc = game_to_dict(game)
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        if not doc:
            break
        _mutate(data, doc, allow_none=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "game.json"
        # json writes NaN/Infinity and huge integers as a careless writer would.
        path.write_text(json.dumps(doc))
        _load_game_checked(path)


@FUZZ
@given(game=small_games(), suffix=st.sampled_from([".json", ".npz"]), data=st.data())
def test_damaged_game_bytes_are_loaded_or_refused_cleanly(game, suffix, data):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"game{suffix}"
        save_game(game, path)
        path.write_bytes(_damage_bytes(data, path.read_bytes()))
        result = _load_game_checked(path)
        if isinstance(result, MarkovGame):  # damage that kept a valid file keeps a valid game
            assert result.num_players >= 1


@FUZZ
@given(game=small_games(), data=st.data())
def test_npz_with_mutated_arrays_is_loaded_or_refused_cleanly(game, data):
    """Arrays of other dtypes and shapes (object arrays included) in an otherwise valid .npz."""
    doc = game_to_dict(game)
    arrays = {k: np.asarray(v) for k, v in doc.items()}
    key = data.draw(st.sampled_from(sorted(arrays)), label="key")
    original = arrays[key]
    candidates = [
        np.array([1, 2], dtype=object),
        np.array(3.5),
        np.array([[1, 2]]),
        np.array("text"),
        np.array(True),
        np.zeros((2, 0)),
        np.array(-1),
        np.array(2**40),
        np.full(original.shape, np.nan),
        original.reshape(-1),
        original[..., :1] if original.ndim else original,
    ]
    if original.dtype.kind in "fiu":
        candidates += [original.astype(np.float32), original.astype(np.complex128), original.astype(np.int8)]
    arrays[key] = data.draw(st.sampled_from(candidates), label="array")
    if data.draw(st.booleans(), label="extra member"):
        arrays["colour"] = np.array(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "game.npz"
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
        _load_game_checked(path)


# ---------------------------------------------------------------------------------------
# sweep configurations
# ---------------------------------------------------------------------------------------
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string (lone surrogates make it invalid TOML: fine)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def _toml_key(k: str) -> str:
    return k if _BARE_KEY.match(k) else json.dumps(k)


def _to_toml(doc: dict) -> str:
    return "".join(f"{_toml_key(k)} = {_toml_value(v)}\n" for k, v in doc.items())


@st.composite
def sweep_configs(draw) -> dict:
    T = draw(st.integers(1, 10**6), label="T")
    random_table = st.fixed_dictionaries(
        {"players": st.integers(1, 3), "horizon": st.integers(1, 3), "states": st.integers(1, 4), "actions": st.integers(1, 3)},
        optional={"seed": st.integers(0, 2**31), "reward_distribution": st.sampled_from(["uniform", "bernoulli"])},
    )
    game = st.one_of(st.sampled_from(sorted(BUILTIN_GAMES)), st.builds(lambda r: {"random": r}, random_table))
    doc: dict = {
        "T": T,
        "games": draw(st.lists(game, min_size=1, max_size=3), label="games"),
        "algorithms": draw(st.lists(st.sampled_from(list(ALGORITHMS)), min_size=1, max_size=3, unique=True), label="algorithms"),
    }
    optional = {
        "name": st.text(alphabet="abcdefgh-_", min_size=1, max_size=8),
        "etas": st.lists(st.one_of(st.floats(1e-3, 10.0), st.just("theory")), min_size=1, max_size=3, unique=True),
        "optimistic": st.sampled_from([[True], [False], [True, False]]),
        "checkpoints": st.one_of(st.sampled_from(["log", "decades"]), st.lists(st.integers(1, T), min_size=1, max_size=4)),
        "seeds": st.integers(1, 5),
        "base_seed": st.integers(0, 2**31),
        "dtype": st.sampled_from(["float64", "float32"]),
    }
    for key, strategy in optional.items():
        if draw(st.booleans(), label=f"has {key}"):
            doc[key] = draw(strategy, label=key)
    return doc


@FUZZ
@given(doc=sweep_configs())
def test_valid_sweep_configs_load(doc):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sweep.toml"
        path.write_text(_to_toml(doc))
        config = _load_config_checked(path)
        assert isinstance(config, SweepConfig), config
        assert config.T == doc["T"] and len(config.games) == len(doc["games"])


@FUZZ
@given(doc=sweep_configs(), data=st.data())
def test_corrupted_sweep_configs_are_loaded_or_refused_cleanly(doc, data):
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        if not doc:
            break
        _mutate(data, doc, allow_none=False)
    text = _to_toml(doc)
    raw = text.encode("utf-8", "surrogatepass")
    if data.draw(st.booleans(), label="damage bytes"):
        raw = _damage_bytes(data, raw)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sweep.toml"
        path.write_bytes(raw)
        _load_config_checked(path)


# ---------------------------------------------------------------------------------------
# regressions found by the fuzzers (kept deterministic)
# ---------------------------------------------------------------------------------------
def _patch_zip_headers(raw: bytes, signature: bytes, offset: int, value: int, *, bitwise_or: bool) -> bytes:
    """Set a 16-bit field at ``offset`` of every zip header starting with ``signature``."""
    out = bytearray(raw)
    k = 0
    while (k := out.find(signature, k)) >= 0:
        old = struct.unpack_from("<H", out, k + offset)[0]
        struct.pack_into("<H", out, k + offset, (old | value) if bitwise_or else value)
        k += len(signature)
    return bytes(out)


@pytest.mark.parametrize(
    "damage",
    [
        # The "encrypted" flag bit in the central directory: zipfile raises RuntimeError.
        lambda raw: _patch_zip_headers(raw, b"PK\x01\x02", 8, 0x1, bitwise_or=True),
        # An unknown compression method: zipfile raises NotImplementedError.
        lambda raw: _patch_zip_headers(
            _patch_zip_headers(raw, b"PK\x01\x02", 10, 99, bitwise_or=False), b"PK\x03\x04", 8, 99, bitwise_or=False
        ),
        # The "UTF-8 names" flag bit on cp437 names that are not UTF-8.
        lambda raw: _patch_zip_headers(raw.replace(b"rewards.npy", b"r\xe9wards.npy"), b"PK\x01\x02", 8, 0x800, bitwise_or=True),
    ],
    ids=["encrypted-flag", "unknown-compression", "name-not-utf8"],
)
def test_npz_archives_that_zipfile_refuses(tmp_path, damage):
    path = tmp_path / "game.npz"
    save_game(random_game(2, 1, 2, 2, seed_or_rng=0), path)
    path.write_bytes(damage(path.read_bytes()))
    result = _load_game_checked(path)
    assert isinstance(result, GameValidationError)
