"""Bad input in game files, read through ``run --game FILE``: the catalogue's first section (``docs/errors.md``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bad_input import (
    BASE_GAME,
    RUN,
    Case,
    _fifo,
    _set,
    _symlink_to_file,
    _users_lock_file,
    _write_bytes,
    _write_game,
    check_case,
)
from markovgames.cli import main

GAME = "Game files"


def _pop(key: str):
    return lambda data: data.pop(key)


def _truncated_game(d: Path) -> None:
    text = json.dumps(BASE_GAME)
    (d / "game.json").write_text(text[: len(text) // 2])


def _npz_with_object_array(d: Path) -> None:
    arrays = {k: np.array(v) for k, v in BASE_GAME.items()}
    arrays["rewards"] = np.array([{"pickled": "code"}], dtype=object)
    with open(d / "game.npz", "wb") as fh:
        np.savez(fh, **arrays)


def _npz_game_forged_size(d: Path) -> None:
    """The paper game as .npz, its rewards member deflated honestly but listed as 4 GB uncompressed."""
    import io
    import zipfile
    import zlib

    from damaged_files import zip_archive

    members = []
    for key, value in BASE_GAME.items():
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(value))
        data = buffer.getvalue()
        packer = zlib.compressobj(9, zlib.DEFLATED, -15)
        packed = packer.compress(data) + packer.flush()
        declared = 4_000_000_000 if key == "rewards" else len(data)
        members.append((f"{key}.npy", packed, zipfile.ZIP_DEFLATED, declared, zlib.crc32(data)))
    (d / "game.npz").write_bytes(zip_archive(members))


def _device(name: str, device: str = "/dev/zero"):
    return lambda d: (d / name).symlink_to(device)


def _discounted(value, *, drop_discount: bool = False):
    """The paper game's first step as a discounted game file, with ``discount = value``."""

    def mutate(data: dict) -> None:
        data.pop("horizon")
        data["rewards"] = data["rewards"][0]
        data["transitions"] = data["transitions"][0]
        if not drop_discount:
            data["discount"] = value

    return mutate


def _discounted_with_step_axis(data: dict) -> None:
    data.pop("horizon")
    data["discount"] = 0.9


CASES: list[Case] = [
    # ---- game files (through `run --game FILE`, which reads the game before anything else)
    Case(
        "game-not-json",
        GAME,
        "not JSON",
        _write_game("game.json", text="this is not json\n"),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "not valid JSON", "line 1 column 1"),
        subprocess=True,
    ),
    Case(
        "game-empty",
        GAME,
        "an empty file",
        _write_game("game.json", text=""),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "the file is empty"),
    ),
    Case(
        "game-not-utf8",
        GAME,
        "not UTF-8 text",
        _write_bytes("game.json", b'{"name": "caf\xe9"}'),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "not UTF-8", "0xe9", "offset 13"),
    ),
    Case(
        "game-truncated",
        GAME,
        "truncated JSON (the file ends early)",
        _truncated_game,
        ("run", "--game", "game.json", *RUN),
        ("game.json", "not valid JSON", "truncated?", "line 1 column"),
    ),
    Case(
        "game-duplicate-key",
        GAME,
        "a key given twice",
        _write_game("game.json", text=json.dumps(BASE_GAME)[:-1] + ', "horizon": 3}'),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "duplicate key 'horizon'"),
    ),
    Case(
        "game-top-level-not-object",
        GAME,
        "the top level is not an object",
        _write_game("game.json", text="[1, 2]"),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "top level", "a list of 2 entries"),
    ),
    Case(
        "game-wrong-type-size",
        GAME,
        "a size of the wrong type",
        _write_game("game.json", _set(("horizon",), "two")),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "horizon", "'two'"),
    ),
    Case(
        "game-wrong-type-boolean",
        GAME,
        "a boolean where a size belongs",
        _write_game("game.json", _set(("num_states",), True)),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "num_states", "a boolean (true)"),
    ),
    Case(
        "game-wrong-type-entry",
        GAME,
        "an array entry of the wrong type",
        _write_game("game.json", _set(("rewards", 0, 1, 0, 1, 0), "high")),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "rewards[0][1][0][1][0]", "'high'"),
    ),
    Case(
        "game-missing-key",
        GAME,
        "a required key is missing",
        _write_game("game.json", _pop("transitions")),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "missing key", "'transitions'"),
    ),
    Case(
        "game-unknown-key",
        GAME,
        "an unknown key",
        _write_game("game.json", _set(("colour",), "red")),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "unknown key", "'colour'"),
    ),
    Case(
        "game-format-version",
        GAME,
        "an unsupported format_version",
        _write_game("game.json", _set(("format_version",), 2)),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "format_version = 2"),
    ),
    Case(
        "game-nesting-too-deep",
        GAME,
        "arrays nested deeper than the sizes declare",
        _write_game("game.json", _set(("rewards", 0, 1, 0, 1, 0), [0.5])),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "rewards[0][1][0][1][0]", "nesting too deep"),
    ),
    Case(
        "game-nesting-too-shallow",
        GAME,
        "arrays nested shallower than the sizes declare",
        _write_game("game.json", _set(("rewards", 0, 1, 0, 1), 0.5)),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "rewards[0][1][0][1]", "nesting too shallow", "0.5"),
    ),
    Case(
        "game-size-mismatch",
        GAME,
        "declared sizes disagree with the arrays",
        _write_game("game.json", _set(("num_states",), 3)),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "rewards[0][0]", "expected 3 entries (num_states), got 2"),
    ),
    Case(
        "game-num-actions-mismatch",
        GAME,
        "num_actions has the wrong length",
        _write_game("game.json", _set(("num_actions",), [2])),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "num_actions", "expected 2 entries (num_players), got 1"),
    ),
    Case(
        "game-nan",
        GAME,
        "NaN in an array",
        _write_game("game.json", _set(("rewards", 1, 0, 1, 0, 1), float("nan"))),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "rewards[1][0][1][0][1] = nan", "not finite"),
    ),
    Case(
        "game-infinity",
        GAME,
        "Infinity in an array",
        _write_game("game.json", _set(("transitions", 0, 1, 0, 1, 0), float("inf"))),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "transitions[0][1][0][1][0] = inf", "not finite"),
    ),
    Case(
        "game-reward-out-of-range",
        GAME,
        "a reward outside [0, 1]",
        _write_game("game.json", _set(("rewards", 1, 0, 1, 0, 1), 1.5)),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "rewards[1][0][1][0][1] = 1.5", "outside [0, 1]"),
    ),
    Case(
        "game-negative-probability",
        GAME,
        "a negative transition probability",
        _write_game("game.json", _set(("transitions", 0, 1, 0, 1), [1.2, -0.2])),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "transitions[0][1][0][1][1] = -0.2", "negative"),
    ),
    Case(
        "game-row-not-summing-to-1",
        GAME,
        "a transition row that does not sum to 1",
        _write_game("game.json", _set(("transitions", 1, 0, 1, 1), [0.5, 0.6])),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "transitions[1][0][1][1]", "sums to 1.1"),
    ),
    Case(
        "game-initial-state-out-of-range",
        GAME,
        "the initial state is not a state",
        _write_game("game.json", _set(("initial_state",), 2)),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "initial_state = 2", "0..1"),
    ),
    Case(
        "game-zero-players",
        GAME,
        "zero players",
        _write_game("game.json", _set(("num_players",), 0)),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "num_players = 0", "at least 1"),
    ),
    Case(
        "game-zero-actions",
        GAME,
        "a player with zero actions",
        _write_game("game.json", _set(("num_actions",), [2, 0])),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "num_actions[1] = 0", "at least 1"),
    ),
    Case(
        "game-too-large-declared",
        GAME,
        "declared sizes needing more memory than allowed (refused before allocating)",
        _write_game("game.json", lambda g: g.update(num_states=10**6, num_actions=[10**4, 10**4])),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "rewards", "S=1000000", "more than max_entries"),
    ),
    Case(
        "game-file-too-large",
        GAME,
        "a file over the size limit (--max-bytes)",
        _write_game("game.json"),
        ("games", "validate", "game.json", "--max-bytes", "100"),
        ("game.json", "more than the limit of 100 bytes"),
    ),
    Case(
        "game-npz-object-array",
        GAME,
        "an .npz with an object array (never unpickled)",
        _npz_with_object_array,
        ("run", "--game", "game.npz", *RUN),
        ("game.npz", "rewards", "object arrays are not allowed"),
    ),
    Case(
        "game-npz-not-a-zip",
        GAME,
        "an .npz that is not a zip archive",
        _write_bytes("game.npz", b"not a zip\n"),
        ("run", "--game", "game.npz", *RUN),
        ("game.npz", "not a valid .npz"),
    ),
    Case(
        "game-npz-forged-size",
        GAME,
        "an .npz member that declares more bytes than deflate can expand (a forged or damaged archive)",
        _npz_game_forged_size,
        ("run", "--game", "game.npz", *RUN),
        ("game.npz", "rewards.npy: declares 4000000000 bytes uncompressed", "more than deflate can expand (1032:1)"),
    ),
    Case(
        "game-unknown-suffix",
        GAME,
        "a game file that is neither .json nor .npz",
        _write_game("game.txt"),
        ("games", "validate", "game.txt"),
        ("game.txt", "unknown game file type", "'.txt'"),
    ),
    Case(
        "game-no-such-file",
        GAME,
        "neither a built-in game nor an existing file",
        None,
        ("run", "--game", "nope.json", *RUN),
        ("'nope.json'", "neither a built-in game"),
    ),
    Case(
        "game-sparse-successor-out-of-range",
        GAME,
        "a sparse game's successor state that is not a state",
        _write_game("game.json", _set(("transition_successors", 1, 0, 1, 0, 1), 5), sparse=True),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "transition_successors[1][0][1][0][1] = 5", "out of range 0..1"),
    ),
    Case(
        "game-sparse-duplicate-successor",
        GAME,
        "a sparse row listing one successor twice",
        _write_game("game.json", _set(("transition_successors", 0, 1, 0, 0), [1, 1]), sparse=True),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "transition_successors[0][1][0][0]", "listed twice"),
    ),
    Case(
        "game-sparse-and-dense",
        GAME,
        "both the dense and the sparse transition form",
        _write_game("game.json", _set(("transitions",), BASE_GAME["transitions"]), sparse=True),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "both 'transitions' and the sparse form"),
    ),
    Case(
        "game-fifo",
        GAME,
        "a game file that is a FIFO (it would block the reader)",
        _fifo("game.json"),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "not a regular file (a FIFO)"),
    ),
    Case(
        "game-device",
        GAME,
        "a game file that is a device (/dev/zero never ends)",
        _device("game.npz"),
        ("games", "validate", "game.npz"),
        ("game.npz", "not a regular file (a character device)"),
    ),
    Case(
        "games-random-initial-state",
        GAME,
        "an initial state outside the states",
        None,
        (
            "games",
            "random",
            "--players",
            "2",
            "--horizon",
            "2",
            "--states",
            "3",
            "--actions",
            "2",
            "--seed",
            "1",
            "--initial-state",
            "5",
            "--out",
            "g.json",
        ),
        ("--initial-state", "0..2", "got 5"),
    ),
    Case(
        "games-export-onto-input",
        GAME,
        "a conversion onto the game file it reads (even with --force)",
        _write_game("game.json"),
        ("games", "export", "game.json", "--out", "game.json", "--force"),
        ("--out game.json", "is the input game.json"),
    ),
    Case(
        "game-units-integer-beyond-float",
        GAME,
        "a units scale that is an integer of 401 digits (beyond any float)",
        _write_game("game.json", _set(("units",), {"scale": 10**400, "offset": 0})),
        ("run", "--game", "game.json", "--algorithm", "smooth_ce", "-T", "10", "--out", "out"),
        ("game.json", "units.scale: an integer of 401 digits, beyond any float"),
        subprocess=True,
    ),
    Case(
        "game-units-extreme",
        GAME,
        "finite units so extreme that values in the game's own units would not be (scale 5e-324)",
        _write_game("game.json", _set(("units",), {"scale": 5e-324, "offset": 0})),
        ("run", "--game", "game.json", "--algorithm", "smooth_ce", "-T", "10", "--out", "out"),
        ("game.json", "units.scale: 5e-324 is outside [1e-100, 1e+100]"),
    ),
    Case(
        "game-units-offset-extreme",
        GAME,
        "a units offset so large that returns in the game's own units would overflow",
        _write_game("game.json", _set(("units",), {"scale": 1, "offset": 1.7e308})),
        ("games", "validate", "game.json"),
        ("game.json", "units.offset: 1.7e+308 is outside [-1e+100, 1e+100]"),
    ),
    Case(
        "game-integer-too-many-digits",
        GAME,
        "an integer of more than 4,300 digits in a game file (Python converts none)",
        _write_game("game.json", text='{\n  "initial_state": ' + "7" * 4400 + "\n}\n"),
        ("games", "validate", "game.json"),
        ("game.json", "line 2, column 20: initial_state: an integer of 4400 digits, more than the 4300 a number may have"),
    ),
    Case(
        "games-export-lock-name-taken",
        GAME,
        "a user's own file named like the output file's lock (.NAME.lock): kept, never taken or deleted",
        _users_lock_file("g.json"),
        ("games", "export", "paper", "--out", "g.json"),
        ("--out g.json", ".g.json.lock is a file of 21 bytes, not a markovgames lock"),
    ),
    Case(
        "games-export-force-fifo",
        GAME,
        "--force onto a FIFO (never replaced)",
        _fifo("g.json"),
        ("games", "export", "paper", "--out", "g.json", "--force"),
        ("--out g.json", "is a FIFO, not a regular file"),
    ),
    Case(
        "games-random-out-symlink",
        GAME,
        "--force onto a symbolic link (its target is never replaced)",
        _symlink_to_file("g.json"),
        (
            "games",
            "random",
            "--players",
            "2",
            "--horizon",
            "2",
            "--states",
            "3",
            "--actions",
            "2",
            "--seed",
            "1",
            "--out",
            "g.json",
            "--force",
        ),
        ("--out g.json", "is a symbolic link"),
    ),
    Case(
        "games-random-successors",
        GAME,
        "more successors per row than states",
        None,
        (
            "games",
            "random",
            "--players",
            "2",
            "--horizon",
            "2",
            "--states",
            "3",
            "--actions",
            "2",
            "--seed",
            "1",
            "--successors",
            "4",
            "--out",
            "g.json",
        ),
        ("--successors", "1..--states = 3", "got 4"),
    ),
    Case(
        "games-random-zero-sum-players",
        GAME,
        "a zero-sum game asked for more than two players",
        None,
        (
            "games",
            "random",
            "--players",
            "3",
            "--horizon",
            "2",
            "--states",
            "3",
            "--actions",
            "2",
            "--seed",
            "1",
            "--zero-sum",
            "--out",
            "g.json",
        ),
        ("--zero-sum", "two players", "--players 3"),
    ),
    # ---- discounted games (read by `games validate`, which takes either kind of game)
    *(
        Case(
            f"game-discount-{key}",
            GAME,
            what,
            _write_game("game.json", _discounted(value)),
            ("games", "validate", "game.json"),
            ("game.json", *expect),
            subprocess=key == "one",
        )
        for key, what, value, expect in (
            ("one", "a discount of 1", 1, ("discount = 1.0", "not below 1")),
            ("negative", "a negative discount", -0.5, ("discount = -0.5", "negative")),
            ("nan", "a discount of NaN", float("nan"), ("discount = nan", "not a finite number")),
            ("string", "a discount written as a string", "0.9", ("discount:", "a number in [0, 1)", "a string ('0.9')")),
        )
    ),
    Case(
        "game-discount-missing",
        GAME,
        "a discounted game's arrays without its discount (and no horizon)",
        _write_game("game.json", _discounted(None, drop_discount=True)),
        ("games", "validate", "game.json"),
        ("game.json", "missing key(s)", "'horizon'", "'discount', a discounted game"),
    ),
    Case(
        "game-discount-with-horizon",
        GAME,
        "a finite-horizon game file with a discount added",
        _write_game("game.json", _set(("discount",), 0.9)),
        ("games", "validate", "game.json"),
        ("game.json", "horizon: a discounted game", "has no horizon"),
    ),
    Case(
        "game-discount-step-axis",
        GAME,
        "a finite-horizon file's arrays (with their step axis) under a discount",
        _write_game("game.json", _discounted_with_step_axis),
        ("games", "validate", "game.json"),
        ("game.json", "rewards[0][0][0][0]", "expected a number", "nesting too deep"),
    ),
    Case(
        "game-discounted-in-solve",
        GAME,
        "a discounted game given to a command that takes finite-horizon games",
        _write_game("game.json", _discounted(0.9)),
        ("solve", "--game", "game.json", "--concept", "cce", "--out", "eq.npz"),
        ("game.json", "discount: this is a discounted game", "finite-horizon game"),
    ),
    *(
        Case(
            f"games-random-{key}",
            GAME,
            what,
            None,
            ("games", "random", "--players", "2", *length, "--states", "3", "--actions", "2", "--seed", "1", "--out", "g.json"),
            expect,
        )
        for key, what, length, expect in (
            ("discount-one", "--discount 1", ("--discount", "1"), ("--discount = 1.0", "not below 1")),
            ("discount-word", "--discount not a number", ("--discount", "x"), ("--discount", "a number in [0, 1)", "'x'")),
            (
                "horizon-and-discount",
                "both --horizon and --discount",
                ("--horizon", "2", "--discount", "0.5"),
                ("--horizon/--discount", "exactly one", "both"),
            ),
            ("no-length", "neither --horizon nor --discount", (), ("--horizon/--discount", "exactly one", "neither")),
        )
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, tmp_path, monkeypatch, capsys, request):
    check_case(case, tmp_path, monkeypatch, capsys, request)


def test_debug_shows_the_traceback(tmp_path, monkeypatch):
    """``--debug`` re-raises the user error instead of the one-line message."""
    from markovgames.games import GameValidationError

    case = next(c for c in CASES if c.id == "game-reward-out-of-range")
    case.setup(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(GameValidationError, match=r"rewards\[1\]\[0\]\[1\]\[0\]\[1\] = 1.5"):
        main(["--debug", *case.argv])
