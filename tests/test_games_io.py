"""Game files: exact round trips, and clear refusals of malformed files before allocating."""

from __future__ import annotations

import io
import json
import os
import re
import tracemalloc
import zipfile
from pathlib import Path

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markovgames.games import (
    FORMAT_VERSION,
    MAX_GAME_ENTRIES,
    GameFileError,
    GameValidationError,
    MarkovGame,
    game_from_dict,
    game_to_dict,
    load_game,
    paper_game,
    random_game,
    save_game,
)

# ------------------------------------------------------------------------------ helpers


def _bitwise_equal(a: np.ndarray, b: np.ndarray) -> bool:
    # Stricter than array_equal: distinguishes -0.0 from 0.0 and checks the dtype.
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _assert_same_game(loaded: MarkovGame, game: MarkovGame) -> None:
    assert loaded == game
    assert _bitwise_equal(loaded.rewards, game.rewards)
    assert _bitwise_equal(loaded.transitions, game.transitions)
    assert loaded.initial_state == game.initial_state
    assert (loaded.name, loaded.description) == (game.name, game.description)


def _write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _paper_dict() -> dict:
    return game_to_dict(paper_game())


def _load_error(path: Path, **kwargs) -> str:
    with pytest.raises(GameFileError) as info:
        load_game(path, **kwargs)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    return message[len(f"{path}: ") :]


def _npz_arrays(game: MarkovGame) -> dict[str, np.ndarray]:
    return {
        "format_version": np.array(FORMAT_VERSION),
        "name": np.array(game.name),
        "description": np.array(game.description),
        "num_players": np.array(game.num_players),
        "horizon": np.array(game.horizon),
        "num_states": np.array(game.num_states),
        "num_actions": np.array(game.num_actions),
        "initial_state": np.array(game.initial_state),
        "rewards": np.asarray(game.rewards),
        "transitions": np.asarray(game.transitions),
    }


def _write_npz(path: Path, arrays: dict[str, np.ndarray]) -> Path:
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return path


def _npy_header_only(shape, descr="<f8") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()  # header, no data: a tiny member that declares a huge array


# -------------------------------------------------------------------- round trips

_NAMES = st.text(alphabet=st.characters(blacklist_characters="\x00"), max_size=12)


@st.composite
def small_games(draw, names=_NAMES):
    num_players = draw(st.integers(1, 3))
    horizon = draw(st.integers(1, 2))
    num_states = draw(st.integers(1, 3))
    actions = tuple(draw(st.lists(st.integers(1, 3), min_size=num_players, max_size=num_players)))
    # Any float in [0, 1], subnormals and -0.0 included: the round trip must be bit-exact.
    rewards = draw(hnp.arrays(np.float64, (horizon, num_players, num_states, *actions), elements=st.floats(-0.0, 1.0)))
    weights = draw(hnp.arrays(np.float64, (horizon, num_states, *actions, num_states), elements=st.floats(0.0, 1.0)))
    weights[..., 0] += 1e-3  # no all-zero row
    transitions = weights / weights.sum(axis=-1, keepdims=True)
    return MarkovGame(
        rewards,
        transitions,
        initial_state=draw(st.integers(0, num_states - 1)),
        name=draw(names),
        description=draw(names),
    )


_FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_FAST
@given(game=small_games(names=st.text(max_size=12)))
def test_json_round_trip_exact(tmp_path, game):
    path = save_game(game, tmp_path / "g.json")
    _assert_same_game(load_game(path), game)


@_FAST
@given(game=small_games())
def test_npz_round_trip_exact(tmp_path, game):
    path = save_game(game, tmp_path / "g.npz")
    _assert_same_game(load_game(path), game)


@_FAST
@given(game=small_games(names=st.text(max_size=12)))
def test_dict_round_trip_exact(game):
    data = game_to_dict(game)
    # Through the JSON text as well: repr-exact floats survive serialisation.
    _assert_same_game(game_from_dict(json.loads(json.dumps(data))), game)


def test_json_keys_exact_and_version_written(tmp_path):
    path = save_game(paper_game(), tmp_path / "paper.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert set(data) == {
        "format_version",
        "name",
        "description",
        "num_players",
        "horizon",
        "num_states",
        "num_actions",
        "initial_state",
        "rewards",
        "transitions",
    }
    assert data["format_version"] == 1
    assert data["num_actions"] == [2, 2]
    assert data["rewards"][0][0][0] == [[0.8, 0.2], [0.0, 1.0]]  # nested [h][i][s][a_0][a_1]
    assert data["transitions"][0][0][0][1] == [0.2, 0.8]  # [h][s][a_0][a_1][s']
    path.read_bytes().decode("ascii")  # pure ASCII text


def test_npz_fields_and_dtypes(tmp_path):
    path = save_game(paper_game(), tmp_path / "paper.NPZ")  # suffix is case-insensitive
    with np.load(path, allow_pickle=False) as z:
        assert set(z.files) == set(_npz_arrays(paper_game()))
        assert z["rewards"].dtype == np.float64 and z["rewards"].shape == (2, 2, 2, 2, 2)
        assert z["name"].dtype.kind == "U" and z["name"].shape == () and str(z["name"]) == "paper"
        assert z["num_actions"].tolist() == [2, 2]
        assert z["horizon"].shape == () and int(z["horizon"]) == 2


def test_optional_keys_may_be_absent(tmp_path):
    data = _paper_dict()
    del data["description"], data["format_version"]
    game = load_game(_write_json(tmp_path / "g.json", data))
    assert game.description == "" and game.rewards.shape == (2, 2, 2, 2, 2)
    arrays = _npz_arrays(paper_game())
    del arrays["description"], arrays["format_version"]
    assert load_game(_write_npz(tmp_path / "g.npz", arrays)).description == ""


def test_json_integer_entries_accepted(tmp_path):
    data = _paper_dict()
    data["rewards"][0][0][0][1][1] = 1  # an int is a number
    assert load_game(_write_json(tmp_path / "g.json", data)).rewards[0, 0, 0, 1, 1] == 1.0


# ----------------------------------------------------------------- atomic writes


def test_save_replaces_atomically_and_leaves_no_temporaries(tmp_path):
    target = tmp_path / "g.json"
    target.write_text("old", encoding="utf-8")
    save_game(paper_game(), target)
    assert load_game(target) == paper_game()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "g.npz"
    save_game(paper_game(), target)
    before = target.read_bytes()

    def broken_savez(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("markovgames.games._io._write.np.savez", broken_savez)
    with pytest.raises(GameFileError, match=re.escape(f"{target}: cannot write: No space left on device")):
        save_game(random_game(1, 1, 1, 1, seed_or_rng=0), target)
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.npz"]


def test_save_refuses_unknown_suffix_and_nul_in_npz_text(tmp_path):
    with pytest.raises(GameFileError, match=r"g\.txt: unknown game file type \('\.txt'\)"):
        save_game(paper_game(), tmp_path / "g.txt")
    game = MarkovGame(paper_game().rewards, paper_game().transitions, name="a\x00")
    with pytest.raises(GameFileError, match=r"name: NUL characters cannot be stored"):
        save_game(game, tmp_path / "g.npz")
    _assert_same_game(load_game(save_game(game, tmp_path / "g.json")), game)  # JSON can
    assert not (tmp_path / "g.txt").exists() and not (tmp_path / "g.npz").exists()


# ------------------------------------------------------------------ JSON: syntax


def test_missing_file_and_unknown_suffix(tmp_path):
    assert "cannot read" in _load_error(tmp_path / "absent.json")
    (tmp_path / "g.yaml").write_text("{}", encoding="utf-8")
    assert "unknown game file type ('.yaml')" in _load_error(tmp_path / "g.yaml")


def test_not_json(tmp_path):
    path = tmp_path / "g.json"
    path.write_text("name: paper\n", encoding="utf-8")
    assert _load_error(path).startswith("not valid JSON: Expecting value at line 1 column 1")


def test_empty_file(tmp_path):
    path = tmp_path / "g.json"
    path.write_bytes(b"")
    assert _load_error(path) == "not valid JSON: the file is empty"


def test_not_utf8(tmp_path):
    path = tmp_path / "g.json"
    path.write_bytes(b'{"name": "caf\xe9"}')
    assert _load_error(path) == "not UTF-8 text (invalid byte 0xe9 at offset 13)"


def test_truncated_json(tmp_path):
    path = save_game(paper_game(), tmp_path / "g.json")
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    assert "not valid JSON (the file ends early: truncated?)" in _load_error(path)


def test_deeply_nested_json_does_not_crash(tmp_path):
    path = tmp_path / "g.json"
    path.write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")
    message = _load_error(path)
    assert "nesting too deep" in message or "top level: expected a JSON object" in message


def test_top_level_not_object(tmp_path):
    assert _load_error(_write_json(tmp_path / "g.json", [1, 2])) == ("top level: expected a JSON object, got a list of 2 entries")


def test_duplicate_key(tmp_path):
    path = tmp_path / "g.json"
    path.write_text('{"name": "a", "name": "b"}', encoding="utf-8")
    assert _load_error(path) == "duplicate key 'name'"


def test_byte_limit(tmp_path):
    path = save_game(paper_game(), tmp_path / "g.json")
    size = path.stat().st_size
    message = _load_error(path, max_bytes=100)
    assert message == f"file is {size} bytes, more than the limit of 100 bytes (raise max_bytes to allow)"
    assert load_game(path, max_bytes=size) == paper_game()  # the limit is user-raisable
    npz = save_game(paper_game(), tmp_path / "g.npz")
    assert "more than the limit of 100 bytes" in _load_error(npz, max_bytes=100)


def test_default_byte_limit_is_for_json_only(tmp_path, monkeypatch):
    """By default a JSON file over the limit is refused, but an ``.npz`` one is not: its arrays
    are bounded by ``max_entries`` on their declared shapes (large games are ``.npz`` files of
    several hundred MiB, over the JSON limit)."""
    from markovgames.games._io import _base

    json_path = save_game(paper_game(), tmp_path / "g.json")
    npz = save_game(paper_game(), tmp_path / "g.npz")
    monkeypatch.setattr(_base, "DEFAULT_MAX_FILE_BYTES", min(json_path.stat().st_size, npz.stat().st_size) - 1)
    assert "more than the limit of" in _load_error(json_path)
    assert load_game(npz) == paper_game()
    assert "more than the limit of" in _load_error(npz, max_bytes=10)
    with pytest.raises(GameFileError, match="max_entries"):
        load_game(npz, max_entries=4)


# -------------------------------------------------------------- JSON: structure


def test_missing_key(tmp_path):
    data = _paper_dict()
    del data["transitions"]
    assert _load_error(_write_json(tmp_path / "g.json", data)) == "missing key(s): 'transitions'"


def test_unknown_key(tmp_path):
    data = _paper_dict()
    data["reward"] = 1
    assert _load_error(_write_json(tmp_path / "g.json", data)).startswith("unknown key(s): 'reward' (allowed: name,")


def test_unsupported_format_version(tmp_path):
    data = _paper_dict()
    data["format_version"] = 2
    assert "format_version = 2 is not supported" in _load_error(_write_json(tmp_path / "g.json", data))


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("num_players", "2", "num_players: expected a positive integer, got a string ('2')"),
        ("num_players", True, "num_players: expected a positive integer, got a boolean (true)"),
        ("horizon", 2.0, "horizon: expected a positive integer, got a number (2.0)"),
        ("num_states", 0, "num_states = 0 must be at least 1"),
        ("horizon", -3, "horizon = -3 must be at least 1"),
        ("horizon", None, "horizon: expected a positive integer, got null"),
        ("num_actions", [2, False], "num_actions[1]: expected a positive integer, got a boolean (false)"),
        ("num_actions", [2, 2, 2], "num_actions: expected 2 entries (num_players), got 3"),
        ("num_actions", 2, "num_actions: expected a list of 2 positive integers, got a number (2)"),
        ("initial_state", "0", "initial_state: expected an integer, got a string ('0')"),
        ("initial_state", 5, "initial_state = 5 is out of range 0..1"),
        ("name", 7, "name: expected a string, got a number (7)"),
        ("description", ["x"], "description: expected a string, got a list of 1 entries"),
    ],
)
def test_wrong_types_name_the_key(tmp_path, key, value, expected):
    data = _paper_dict()
    data[key] = value
    assert _load_error(_write_json(tmp_path / "g.json", data)) == expected


def test_list_length_names_path_and_size(tmp_path):
    data = _paper_dict()
    data["rewards"][1][0][1][0].append(0.5)
    assert _load_error(_write_json(tmp_path / "g.json", data)) == (
        "rewards[1][0][1][0]: expected 2 entries (num_actions[1]), got 3"
    )
    data = _paper_dict()
    data["transitions"][0].pop()
    assert _load_error(_write_json(tmp_path / "g.json", data)) == ("transitions[0]: expected 2 entries (num_states), got 1")


def test_sizes_disagree_with_arrays(tmp_path):
    data = _paper_dict()
    data["horizon"] = 3
    assert _load_error(_write_json(tmp_path / "g.json", data)) == "rewards: expected 3 entries (horizon), got 2"
    data = _paper_dict()
    data["num_actions"] = [2, 3]
    assert _load_error(_write_json(tmp_path / "g.json", data)) == (
        "rewards[0][0][0][0]: expected 3 entries (num_actions[1]), got 2"
    )


def test_nesting_too_shallow(tmp_path):
    data = _paper_dict()
    data["rewards"][0][1][0] = [0.5, 0.5]  # [a_0] holds numbers where lists of a_1 belong
    message = _load_error(_write_json(tmp_path / "g.json", data))
    assert message == (
        "rewards[0][1][0][0]: expected a list of 2 entries (num_actions[1]), got a number (0.5) (nesting too shallow)"
    )


def test_nesting_too_deep(tmp_path):
    data = _paper_dict()
    data["transitions"][1][0][1][0][1] = [0.8]
    assert _load_error(_write_json(tmp_path / "g.json", data)) == (
        "transitions[1][0][1][0][1]: expected a number, got a list of 1 entries (nesting too deep)"
    )


@pytest.mark.parametrize(
    ("value", "shown"),
    [(True, "a boolean (true)"), ("0.5", "a string ('0.5')"), (None, "null"), ({"x": 1}, "an object")],
)
def test_entries_must_be_numbers(tmp_path, value, shown):
    data = _paper_dict()
    data["rewards"][0][1][0][1][0] = value
    assert _load_error(_write_json(tmp_path / "g.json", data)) == f"rewards[0][1][0][1][0]: expected a number, got {shown}"


def test_huge_integer_entry(tmp_path):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(_paper_dict()).replace("0.8", "1" + "0" * 400, 1), encoding="utf-8")
    assert "is too large for a float64" in _load_error(path)


def test_value_errors_are_prefixed_with_the_file(tmp_path):
    data = _paper_dict()
    data["rewards"][0][1][0][1][0] = 1.5
    path = _write_json(tmp_path / "game.json", data)
    with pytest.raises(GameFileError) as info:
        load_game(path)
    assert str(info.value) == f"{path}: rewards[0][1][0][1][0] = 1.5 is outside [0, 1]"
    assert isinstance(info.value, GameValidationError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("field", "index", "value", "expected"),
    [
        ("rewards", (1, 1, 1, 0, 1), float("nan"), "rewards[1][1][1][0][1] = nan is not finite"),
        ("transitions", (0, 1, 1, 0, 0), -0.2, "transitions[0][1][1][0][0] = -0.2 is negative"),
        ("transitions", (1, 0, 0, 1, 1), 0.9, "transitions[1][0][0][1] sums to 1.1 not 1"),
    ],
)
def test_value_errors_name_the_index(tmp_path, field, index, value, expected):
    data = _paper_dict()
    node = data[field]
    for k in index[:-1]:
        node = node[k]
    node[index[-1]] = value
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data), encoding="utf-8")  # json writes NaN as the literal NaN
    assert _load_error(path).replace(",", "").startswith(expected)


def test_huge_declared_sizes_refused_before_allocation(tmp_path):
    data = _paper_dict()
    # Just over the default budget: allocating would need ~2 GiB of float64.
    data["num_actions"] = [2**14, 2**13 + 1]
    data["num_states"] = 1
    data["horizon"] = 1
    path = _write_json(tmp_path / "g.json", data)
    tracemalloc.start()
    try:
        message = _load_error(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert message == (
        "rewards: the declared sizes (H=1, N=2, S=1, A=[16384, 8193]) give 268468224 entries, "
        f"more than max_entries = {MAX_GAME_ENTRIES} (raise max_entries to allow)"
    )
    assert peak < 5 * 2**20


def test_astronomical_declared_sizes(tmp_path):
    data = _paper_dict()
    data["num_actions"] = [10**9, 10**9]
    assert "give 8000000000000000000 entries" in _load_error(_write_json(tmp_path / "g.json", data))
    data["num_actions"] = [10**200, 10**200]  # echoed by their length, not in full
    assert "A=[100... (201 digits), 100... (201 digits)]) give 800... (401 digits) entries" in _load_error(
        _write_json(tmp_path / "g.json", data)
    )
    data["num_actions"], data["format_version"] = [2, 2], True
    assert _load_error(_write_json(tmp_path / "g.json", data)).startswith("format_version = true is not supported")


def test_max_entries_user_settable(tmp_path):
    path = save_game(paper_game(), tmp_path / "g.json")
    message = _load_error(path, max_entries=31)
    assert message.startswith("rewards: the declared sizes (H=2, N=2, S=2, A=[2, 2]) give 32 entries")
    assert load_game(path, max_entries=32) == paper_game()


def test_too_many_players_refused(tmp_path):
    data = _paper_dict()
    data["num_players"] = 40
    data["num_actions"] = [1] * 40
    assert _load_error(_write_json(tmp_path / "g.json", data)).startswith("num_players = 40 exceeds the supported maximum")


def test_game_from_dict_errors_have_no_file_prefix():
    data = _paper_dict()
    data["rewards"][0][0][0][0][0] = -1.0
    with pytest.raises(GameValidationError, match=r"^rewards\[0, 0, 0, 0, 0\] = .*-1\.0.* is outside \[0, 1\]$"):
        game_from_dict(data)
    with pytest.raises(GameValidationError, match=r"^top level: expected an object with keys, got a list"):
        game_from_dict([])  # type: ignore[arg-type]


# ------------------------------------------------------------------------- npz


def test_npz_object_array_refused(tmp_path):
    arrays = _npz_arrays(paper_game())
    arrays["name"] = np.array(["paper"], dtype=object)  # needs pickle to read
    message = _load_error(_write_npz(tmp_path / "g.npz", arrays))
    assert message.startswith("name: object arrays are not allowed")


def test_npz_object_rewards_refused(tmp_path):
    arrays = _npz_arrays(paper_game())
    arrays["rewards"] = arrays["rewards"].astype(object)
    assert _load_error(_write_npz(tmp_path / "g.npz", arrays)).startswith("rewards: object arrays are not allowed")


def test_npz_missing_and_unknown_keys(tmp_path):
    arrays = _npz_arrays(paper_game())
    del arrays["initial_state"]
    assert _load_error(_write_npz(tmp_path / "a.npz", arrays)) == "missing key(s): 'initial_state'"
    arrays = _npz_arrays(paper_game())
    arrays["extra"] = np.array(1)
    assert _load_error(_write_npz(tmp_path / "b.npz", arrays)).startswith("unknown key(s): 'extra'")


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("num_players", np.array(2.0), "num_players: expected a 0-d integer array, got dtype float64 with shape ()"),
        ("horizon", np.array([2]), "horizon: expected a 0-d integer array, got dtype int64 with shape (1,)"),
        ("name", np.array(b"paper"), "name: expected a 0-d unicode string array, got dtype |S5 with shape ()"),
        ("num_actions", np.array([2.0, 2.0]), "num_actions: expected a 1-d integer array, got dtype float64"),
        ("rewards", np.full((2, 2, 2, 2, 2), "x"), "rewards: expected a float array, got dtype <U1"),
        ("transitions", np.ones((2, 2, 2, 2, 2), dtype=bool), "transitions: expected a float array, got dtype bool"),
        ("num_states", np.array(0), "num_states = 0 must be at least 1"),
        ("initial_state", np.array(2), "initial_state = 2 is out of range 0..1"),
        ("format_version", np.array(7), "format_version = "),
    ],
)
def test_npz_wrong_dtypes_and_values(tmp_path, key, value, expected):
    arrays = _npz_arrays(paper_game())
    arrays[key] = value
    assert _load_error(_write_npz(tmp_path / "g.npz", arrays)).startswith(expected)


def test_npz_shape_disagrees_with_declared_sizes(tmp_path):
    arrays = _npz_arrays(paper_game())
    arrays["num_states"] = np.array(3)
    assert _load_error(_write_npz(tmp_path / "g.npz", arrays)) == (
        "rewards: array shape (2, 2, 2, 2, 2) does not match the declared sizes (H, N, S, A_0, ..., A_(N-1)) = (2, 2, 3, 2, 2)"
    )
    arrays = _npz_arrays(paper_game())
    arrays["num_actions"] = np.array([2, 2, 2])
    assert _load_error(_write_npz(tmp_path / "h.npz", arrays)) == ("num_actions: expected 2 entries (num_players), got 3")


def test_npz_value_errors_name_the_index(tmp_path):
    arrays = _npz_arrays(paper_game())
    rewards = arrays["rewards"].copy()
    rewards[1, 0, 1, 1, 0] = 2.0
    arrays["rewards"] = rewards
    assert _load_error(_write_npz(tmp_path / "g.npz", arrays)) == "rewards[1][0][1][1][0] = 2.0 is outside [0, 1]"


def test_npz_not_a_zip_and_truncated(tmp_path):
    path = tmp_path / "g.npz"
    path.write_bytes(b"definitely not a zip archive")
    assert _load_error(path).startswith("not a valid .npz (zip) archive")
    good = save_game(paper_game(), tmp_path / "good.npz").read_bytes()
    path.write_bytes(good[: len(good) // 2])
    assert _load_error(path).startswith("not a valid .npz (zip) archive")


def test_npz_non_npy_member(tmp_path):
    path = tmp_path / "g.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    assert _load_error(path) == "unexpected archive member 'readme.txt' (not a .npy array)"


def _crafted_npz(path: Path, overrides: dict[str, bytes], arrays: dict[str, np.ndarray]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for key, arr in arrays.items():
            if key in overrides:
                archive.writestr(key + ".npy", overrides[key])
            else:
                buf = io.BytesIO()
                np.save(buf, arr, allow_pickle=False)
                archive.writestr(key + ".npy", buf.getvalue())
    return path


def test_npz_huge_declared_sizes_refused_before_allocation(tmp_path):
    arrays = _npz_arrays(paper_game())
    arrays["num_actions"] = np.array([10**6, 10**6])
    huge = {
        "rewards": _npy_header_only((2, 2, 2, 10**6, 10**6)),
        "transitions": _npy_header_only((2, 2, 10**6, 10**6, 2)),
    }
    path = _crafted_npz(tmp_path / "g.npz", huge, arrays)
    tracemalloc.start()
    try:
        message = _load_error(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert message.startswith("rewards: the declared sizes (H=2, N=2, S=2, A=[1000000, 1000000]) give 8000000000000 entries")
    assert peak < 5 * 2**20


def test_npz_huge_array_header_with_small_declared_sizes(tmp_path):
    # Declared sizes are small, but the header claims 2 GiB: the shape check stops it.
    arrays = _npz_arrays(paper_game())
    path = _crafted_npz(tmp_path / "g.npz", {"rewards": _npy_header_only((2, 2, 2, 2**13, 2**14))}, arrays)
    tracemalloc.start()
    try:
        message = _load_error(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert message.startswith("rewards: array shape (2, 2, 2, 8192, 16384) does not match the declared sizes")
    assert peak < 5 * 2**20


def test_npz_truncated_array_data(tmp_path):
    arrays = _npz_arrays(paper_game())
    full = io.BytesIO()
    np.save(full, arrays["rewards"])
    path = _crafted_npz(tmp_path / "g.npz", {"rewards": full.getvalue()[:-16]}, arrays)
    assert _load_error(path).startswith("cannot read array data")


def test_npz_huge_string_header_refused(tmp_path):
    arrays = _npz_arrays(paper_game())
    path = _crafted_npz(tmp_path / "g.npz", {"description": _npy_header_only((), descr="<U100000000")}, arrays)
    assert _load_error(path).startswith("description: string of 100000000 characters exceeds the limit")


def test_file_errors_are_game_validation_errors(tmp_path):
    path = tmp_path / "g.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(GameValidationError):
        load_game(path)
    with pytest.raises(ValueError):
        load_game(str(path))
    assert os.path.exists(path)


def test_npz_too_many_players_refused_from_the_header(tmp_path):
    """``num_actions`` longer than the supported number of players is refused from its header."""
    arrays = _npz_arrays(paper_game())
    arrays["num_actions"] = np.ones(30, dtype=np.int64)
    assert _load_error(_write_npz(tmp_path / "g.npz", arrays)) == (
        "num_actions: 30 entries exceed the supported maximum of 29 players"
    )
