"""Outputs never replace inputs or what markovgames did not make; text from files is shown literally.

Layers: the guard's functions one by one (`markovgames._outputs`, `markovgames._text`,
`markovgames._atomic`); the commands on the cases the catalogue does not hold (a full disk, a
running run's staging directory, parents made for a refused output, a game named with markup and
escapes); and a property: for a few commands, an output path drawn to overlap an input (the
same path, a parent, a child, through a symbolic or a hard link, spelt in several ways) is
refused with exit code 2, and every input is left byte for byte as it was.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples
from markovgames._atomic import NotReplaceableError, atomic_write, atomic_write_text
from markovgames._lock import MARKER
from markovgames._outputs import OutputPathError, check_apart, check_replaceable_file, overlap, remove_created_parents
from markovgames._text import markup_safe, printable
from markovgames.cli import main
from markovgames.games import game_to_dict, paper_game


# ---------------------------------------------------------------------------------------
# printable text
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("café 游戏 naïve", "café 游戏 naïve"),  # ordinary text of any script is unchanged
        ("a\nb", "a\\nb"),
        ("tab\there\r", "tab\\there\\r"),
        ("\x1b[2J\x1b]0;title\x07", "\\x1b[2J\\x1b]0;title\\x07"),
        ("\x9b31m\x85", "\\x9b31m\\x85"),  # C1 controls: CSI, NEL
        ("evil\u202etxt.exe", "evil\\u202etxt.exe"),
        ("\u2066\u2067\u2068\u2069\u200e\u200f\u061c", "\\u2066\\u2067\\u2068\\u2069\\u200e\\u200f\\u061c"),
        ("line\u2028sep", "line\\u2028sep"),
        ("\x00\x7f", "\\x00\\x7f"),
    ],
)
def test_printable_escapes_controls_and_keeps_text(text, shown):
    assert printable(text) == shown


@given(st.text())
@settings(max_examples=examples(200, 2000), deadline=None)
def test_printable_leaves_no_control_character(text):
    out = printable(text)
    assert "\n" not in out and "\x1b" not in out and "\u202e" not in out
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in out)


def test_markup_safe_renders_literally():
    from rich.console import Console

    console = Console(record=True, width=200, color_system=None)
    console.print(f"[bold]{markup_safe('[/] [bold]x[red]')}[/bold]")
    assert console.export_text().strip() == "[/] [bold]x[red]"


# ---------------------------------------------------------------------------------------
# the guard
# ---------------------------------------------------------------------------------------
def test_overlap_relations(tmp_path):
    (tmp_path / "run" / "trajectory").mkdir(parents=True)
    metrics = tmp_path / "run" / "metrics.json"
    metrics.write_text("{}")
    assert overlap(metrics, metrics) == "is"
    assert overlap(tmp_path / "run", metrics) == "contains"
    assert overlap(tmp_path / "run" / "trajectory" / "x", tmp_path / "run" / "trajectory") == "lies inside"
    assert overlap(tmp_path / "run" / "evaluation.json", metrics) is None
    assert overlap(tmp_path / "run" / "x" / ".." / "metrics.json", metrics) == "is"
    (tmp_path / "link").symlink_to(tmp_path / "run")
    assert overlap(tmp_path / "link" / "metrics.json", metrics) == "is"
    assert overlap(tmp_path / "link", tmp_path / "run" / "trajectory") == "contains"
    os.link(metrics, tmp_path / "hard.json")
    assert overlap(tmp_path / "hard.json", metrics) == "is"
    with pytest.raises(OutputPathError, match=r"^--out .*hard.json: is the input .*metrics.json; an output never replaces"):
        check_apart(tmp_path / "hard.json", [metrics], "--out")


def test_check_replaceable_file(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    (tmp_path / "dir").mkdir()
    check_replaceable_file(tmp_path / "new", "--out", False, "--force")
    check_replaceable_file(tmp_path / "file", "--out", True, "--force")
    for name, match in (
        ("fifo", "is a FIFO, not a regular file"),
        ("link", "is a symbolic link"),
        ("dir", "is a directory"),
    ):
        with pytest.raises(OutputPathError, match=match):
            check_replaceable_file(tmp_path / name, "--out", True, "--force")
    with pytest.raises(OutputPathError, match="exists; use --force to replace it"):
        check_replaceable_file(tmp_path / "file", "--out", False, "--force")
    assert (tmp_path / "file").read_text() == "x"


def test_atomic_write_replaces_only_regular_files(tmp_path):
    """Whoever writes: a FIFO, a device or a link under the final name is never replaced."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "target").write_text("theirs")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    (tmp_path / "null").symlink_to("/dev/null")
    for name in ("fifo", "link", "null"):
        with pytest.raises(NotReplaceableError) as info:
            atomic_write_text(tmp_path / name, "ours")
        assert info.value.filename == str(tmp_path / name)
    assert (tmp_path / "fifo").is_fifo() and (tmp_path / "link").is_symlink() and (tmp_path / "null").is_symlink()
    assert (tmp_path / "target").read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "link", "null", "target"]  # no temporary file left
    atomic_write_text(tmp_path / "target", "ours")  # a regular file is replaced
    assert (tmp_path / "target").read_text() == "ours"


def test_remove_created_parents(tmp_path):
    (tmp_path / "kept").mkdir()
    with pytest.raises(RuntimeError), remove_created_parents(tmp_path / "kept" / "n1" / "n2" / "out"):
        (tmp_path / "kept" / "n1" / "n2").mkdir(parents=True)
        (tmp_path / "kept" / "n1" / "n2" / ".out.lock").write_bytes(MARKER)
        raise RuntimeError
    assert list((tmp_path / "kept").iterdir()) == []
    # A file of a lock's name that is not a markovgames lock is someone's: it and its parents stay.
    with pytest.raises(RuntimeError), remove_created_parents(tmp_path / "b" / "out"):
        (tmp_path / "b").mkdir()
        (tmp_path / "b" / ".out.lock").write_text("notes")
        raise RuntimeError
    assert (tmp_path / "b" / ".out.lock").read_text() == "notes"
    # A parent that holds anything else (a saved state) stays.
    with pytest.raises(RuntimeError), remove_created_parents(tmp_path / "a" / "out"):
        (tmp_path / "a" / ".out.partial").mkdir(parents=True)
        raise RuntimeError
    assert (tmp_path / "a" / ".out.partial").is_dir()


# ---------------------------------------------------------------------------------------
# the commands
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("finished") / "run"
    assert main(["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "20", "--out", str(path), "--quiet"]) == 0
    return path


def _digests(root: Path) -> dict[str, str]:
    """Every file under ``root`` (links not followed) with the SHA-256 of its bytes."""
    out = {}
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            p = Path(dirpath) / name
            if p.is_symlink() or not p.is_file():
                out[str(p.relative_to(root))] = "special"
            else:
                out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _hostile_game(path: Path) -> None:
    data = game_to_dict(paper_game())
    data["name"] = "[/] [bold]x\x1b[2J\u202eevil\nname"
    path.write_text(json.dumps(data))


def test_run_and_show_a_game_named_with_markup_and_escapes(tmp_path, monkeypatch, capsys):
    """A valid game whose name holds rich markup, escapes and a newline: shown literally, no crash."""
    monkeypatch.chdir(tmp_path)
    _hostile_game(tmp_path / "g.json")
    assert main(["games", "show", "g.json"]) == 0
    shown = capsys.readouterr().out
    assert "[/] [bold]x\\x1b[2J\\u202eevil\\nname" in shown
    assert "\x1b[2J" not in shown and "\u202e" not in shown
    assert main(["run", "--game", "g.json", "--algorithm", "smooth_ce", "-T", "20", "--out", "out"]) == 0
    table = capsys.readouterr().out
    assert "[/] [bold]x\\x1b[2J\\u202eevil\\nname" in table and "\x1b[2J" not in table
    assert main(["games", "export", "g.json", "--out", "h.json"]) == 0
    assert "\x1b" not in capsys.readouterr().out


def test_certify_refuses_a_running_runs_directory(tmp_path, monkeypatch, capsys):
    """``certify --out X`` while a run writes X: refused by X's lock, the run's staging directory kept."""
    import fcntl

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pols").mkdir()
    for i in range(2):
        np.save(tmp_path / "pols" / f"policy_{i}.npy", np.full((3, 2, 2, 2), 0.5))
    staging = tmp_path / ".out.partial"
    staging.mkdir()
    (staging / "state.npz").write_bytes(b"a running run's state")
    fd = os.open(tmp_path / ".out.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        code = main(["certify", "pols", "--game", "paper", "--value-update", "smooth", "--out", "out", "--overwrite"])
    finally:
        os.close(fd)
    assert code == 2 and "another markovgames command is writing" in capsys.readouterr().err
    assert (staging / "state.npz").read_bytes() == b"a running run's state"
    assert not (tmp_path / "out").exists()


def test_refused_certify_leaves_no_parents(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pols").mkdir()
    for i in range(2):
        policy = np.full((3, 2, 2, 2), 0.5)
        policy[1, 0, 1] = 0.0 if i == 0 else 0.5
        np.save(tmp_path / "pols" / f"policy_{i}.npy", policy)
    code = main(["certify", "pols", "--game", "paper", "--value-update", "stage", "--out", "n1/n2/c"])
    assert code == 2 and "sums to 0.0" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pols"]


def test_certify_overwrites_its_own_certificate(tmp_path, monkeypatch, capsys):
    """certify marks its directory, so that --overwrite of a later certify replaces it (and no other)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pols").mkdir()
    for i in range(2):
        np.save(tmp_path / "pols" / f"policy_{i}.npy", np.full((3, 2, 2, 2), 0.5))
    argv = ["certify", "pols", "--game", "paper", "--value-update", "smooth", "--out", "cert", "--quiet"]
    assert main(argv) == 0
    assert json.loads((tmp_path / "cert" / ".markovgames").read_text())["kind"] == "certify"
    assert main([*argv, "--overwrite"]) == 0, capsys.readouterr().err


SWEEP = 'T = 20\ngames = ["paper"]\nalgorithms = ["smooth_ce"]\netas = [0.2]\ncheckpoints = [10, 20]\n'


def _full_disk_for(monkeypatch, module, part: str) -> None:
    """Make ``module.atomic_write_text`` fail as a full disk does for paths containing ``part``."""
    real = module.atomic_write_text

    def write(path, text):
        if part in str(path):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, text)

    monkeypatch.setattr(module, "atomic_write_text", write)


def test_sweep_on_a_full_disk_removes_what_it_created(tmp_path, monkeypatch, capsys):
    import markovgames.experiments.sweeps._session as sweep_module

    monkeypatch.chdir(tmp_path)
    (tmp_path / "sweep.toml").write_text(SWEEP)
    _full_disk_for(monkeypatch, sweep_module, f"{os.sep}runs{os.sep}")
    code = main(["sweep", "sweep.toml", "--out", "deep/sw", "--workers", "1", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.splitlines()) == 1
    assert "--out deep/sw: cannot write" in err and "runs" in err and "No space left on device" in err
    assert "removed deep/sw, which this sweep created" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.toml"]


def test_sweep_on_a_full_disk_keeps_an_existing_sweep(tmp_path, monkeypatch, capsys):
    """A sweep directory that existed (its runs/ too) is not this call's to remove."""
    import markovgames.experiments.sweeps._session as sweep_module

    monkeypatch.chdir(tmp_path)
    (tmp_path / "sweep.toml").write_text(SWEEP)
    assert main(["sweep", "sweep.toml", "--out", "sw", "--workers", "1", "--quiet"]) == 0
    (tmp_path / "sweep.toml").write_text(SWEEP.replace("etas = [0.2]", "etas = [0.2, 0.1]"))
    _full_disk_for(monkeypatch, sweep_module, f"{os.sep}runs{os.sep}")
    assert main(["sweep", "sweep.toml", "--out", "sw", "--workers", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "No space left on device" in err and "removed" not in err
    assert len(list((tmp_path / "sw" / "runs").glob("*.json"))) == 1  # the finished run is kept


def test_solve_on_a_full_disk_names_the_path(tmp_path, monkeypatch, capsys):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(np, "savez_compressed", full)
    code = main(["solve", "--game", "matching_pennies", "--concept", "cce", "--out", "sol", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("markovgames: error: --out sol: cannot write ") and "policy.npz: No space left on device" in err
    assert not (tmp_path / "sol").exists() and not (tmp_path / ".sol.partial").exists()


def test_a_newline_in_a_path_keeps_the_message_on_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad\nname").mkdir()
    (tmp_path / "bad\nname" / "game.json").write_text("{")
    assert main(["run", "--game", "bad\nname/game.json", "--algorithm", "smooth_ce", "-T", "5", "--out", "o"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "bad\\nname/game.json" in err
    # A message that is not markovgames's own (a ValueError) quoting the argument: whole, escaped.
    assert main(["run", "--game", "paper", "--algorithm", "bad\nname.py:X", "-T", "5", "--out", "o"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.rstrip().endswith("no such file bad\\nname.py"), err


# ---------------------------------------------------------------------------------------
# the property: an output that overlaps an input is refused, and the inputs stay as they were
# ---------------------------------------------------------------------------------------
def _make_policies(d: Path) -> None:
    d.mkdir(parents=True)
    for i in range(2):
        np.save(d / f"policy_{i}.npy", np.full((3, 2, 2, 2), 0.5))


def _make_results(d: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    d.mkdir(parents=True)
    pq.write_table(pa.table({"run_id": ["r"]}), d / "results.parquet")


#: command -> (what it reads, made under the work directory; the input's path; the argv, given --out's value)
def _commands(finished: Path):
    return {
        "games export": (
            lambda w: (w / "in").mkdir() or (w / "in" / "g.json").write_text(json.dumps(game_to_dict(paper_game()))),
            "in/g.json",
            lambda out: ["games", "export", "in/g.json", "--out", out, "--force"],
        ),
        "certify": (
            lambda w: _make_policies(w / "in" / "pols"),
            "in/pols",
            lambda out: ["certify", "in/pols", "--game", "paper", "--value-update", "smooth", "--out", out, "--overwrite"],
        ),
        "evaluate": (
            lambda w: shutil.copytree(finished, w / "in" / "run"),
            "in/run/metrics.json",
            lambda out: ["evaluate", "in/run", "--out", out, "--overwrite", "--quiet"],
        ),
        "summarize": (
            lambda w: _make_results(w / "in" / "sw"),
            "in/sw/results.parquet",
            lambda out: ["summarize", "in/sw", "--markdown", out, "--overwrite"],
        ),
    }


RELATIONS = ("same", "parent", "child", "symlink", "symlinked parent", "hard link")
SPELLINGS = ("{}", "./{}", "in/../{}", "in/./../{}")


def _overlapping_out(work: Path, source: str, relation: str) -> str:
    """An output path that ``relation``s the input ``source`` (made where a link is needed)."""
    if relation == "same":
        return source
    if relation == "parent":
        return str(Path(source).parent)
    if relation == "child":
        return f"{source}/x.json"
    if relation == "symlink":
        (work / "link").symlink_to(work / source)
        return "link"
    if relation == "symlinked parent":
        (work / "linkdir").symlink_to(work / Path(source).parent)
        return f"linkdir/{Path(source).name}"
    target = work / source  # a hard link to the input file, or into the input directory
    if target.is_dir():
        first = sorted(target.iterdir())[0]
        os.link(first, work / "hard.npy")
        return "hard.npy"
    os.link(target, work / ("hard" + target.suffix))
    return "hard" + target.suffix


@given(
    command=st.sampled_from(["games export", "certify", "evaluate", "summarize"]),
    relation=st.sampled_from(RELATIONS),
    spelling=st.sampled_from(SPELLINGS),
)
@settings(max_examples=examples(40, 300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_an_output_overlapping_an_input_is_refused(finished_run, monkeypatch, capsys, command, relation, spelling):
    make, source, argv = _commands(finished_run)[command]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        make(work)
        out = _overlapping_out(work, source, relation)
        if not out.startswith(("link", "hard")):
            out = spelling.format(out)
        before = _digests(work / "in")
        with monkeypatch.context() as m:
            m.chdir(work)
            try:
                code = main(argv(out))
            except SystemExit as exc:
                code = exc.code
        err = capsys.readouterr().err
        assert code == 2, (command, relation, out, err)
        assert len(err.splitlines()) == 1 and err.startswith("markovgames: error: "), err
        assert _digests(work / "in") == before, (command, relation, out)


# ----------------------------------------------------------------------------- the lock file
def test_the_lock_file_is_removed_when_released(tmp_path):
    from markovgames._lock import directory_lock

    with directory_lock(tmp_path / "out") as path:
        assert path == tmp_path / ".out.lock" and path.is_file()
    assert list(tmp_path.iterdir()) == []  # nothing is left beside the output
    # A lock file left by a holder killed with kill -9 (no flock on it) blocks nobody, and goes.
    (tmp_path / ".out.lock").write_bytes(MARKER)
    with directory_lock(tmp_path / "out"):
        pass
    assert list(tmp_path.iterdir()) == []


def _foreign_lock(path: Path, kind: str) -> None:
    """Something that is not a markovgames lock at the lock file's name."""
    if kind == "notes":
        path.write_text("my notes\n")
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "marker+more":
        path.write_bytes(MARKER + b"and my notes\n")
    elif kind == "directory":
        path.mkdir()
    elif kind == "symlink":
        (path.parent / "target").write_bytes(MARKER)
        path.symlink_to("target")
    elif kind == "fifo":
        os.mkfifo(path)


def _state(root: Path) -> dict[str, tuple]:
    return {
        p.name: (p.is_symlink(), p.is_dir(), p.read_bytes() if p.is_file() and not p.is_symlink() else None)
        for p in root.iterdir()
    }


@pytest.mark.parametrize("kind", ["notes", "empty", "marker+more", "directory", "symlink", "fifo"])
def test_a_file_at_the_lock_name_that_markovgames_did_not_make_is_kept(tmp_path, kind):
    """markovgames deletes only what it made: whatever is at ``.NAME.lock`` and is not a lock file it
    wrote is left as it is, and the lock is refused naming it (also after a wait)."""
    from markovgames._lock import ForeignLockFileError, directory_lock

    _foreign_lock(tmp_path / ".out.lock", kind)
    before = _state(tmp_path)
    for timeout in (0.0, 0.2):
        with pytest.raises(ForeignLockFileError, match=r"--out .*out: .*\.out\.lock is .*not a markovgames lock"):
            with directory_lock(tmp_path / "out", "--out", timeout=timeout):
                pass
    assert _state(tmp_path) == before


@pytest.mark.parametrize(
    "command",
    [
        ["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "5", "--out", "o", "--quiet"],
        ["vlearn", "paper", "--algorithm", "cce-v", "--episodes", "4", "--out", "o", "--quiet"],
        ["games", "export", "paper", "--out", "o"],
        ["evaluate", "r", "--out", "o"],
        ["solve", "--game", "paper", "--concept", "cce", "--out", "o"],
    ],
    ids=lambda c: c[0] if c[0] != "games" else "games-export",
)
def test_every_locking_command_keeps_a_users_file_named_like_its_lock(tmp_path, monkeypatch, capsys, command):
    monkeypatch.chdir(tmp_path)
    if command[0] == "evaluate":
        assert main(["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "20", "--out", "r", "--quiet"]) == 0
        capsys.readouterr()
    out = "o.json" if command[0] == "games" else "o"
    command = [c if c != "o" else out for c in command]
    (tmp_path / f".{out}.lock").write_text("my notes\n")
    assert main(command) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "not a markovgames lock" in err, err
    assert (tmp_path / f".{out}.lock").read_text() == "my notes\n"
    assert not (tmp_path / out).exists()


def test_a_lock_file_is_never_seen_without_its_content(tmp_path):
    """While one holder after another makes and deletes the lock file, a reader of the name sees
    either nothing or the whole marker (it is linked into place whole), and no temporary file is
    left beside the output."""
    import threading

    from markovgames._lock import directory_lock

    seen: set[bytes] = set()
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            with contextlib.suppress(FileNotFoundError):
                seen.add((tmp_path / ".out.lock").read_bytes())

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for _ in range(300):
            with directory_lock(tmp_path / "out"):
                pass
    finally:
        stop.set()
        thread.join()
    assert seen <= {MARKER}
    assert list(tmp_path.iterdir()) == []


def test_the_lock_excludes_while_its_file_is_deleted_and_made_again(tmp_path):
    """Holders come and go (each deletes the lock file as it leaves) while others wait on the old
    file: never two holders at once. Without the check that the locked file is still the one at
    the path, a waiter granted the flock on a deleted file would enter beside the next holder."""
    import threading

    from markovgames._lock import directory_lock

    inside, overlaps, entries = [0], [], [0]
    guard = threading.Lock()

    def worker() -> None:
        for _ in range(40):
            with directory_lock(tmp_path / "out", timeout=30.0):
                with guard:
                    inside[0] += 1
                    overlaps.append(inside[0])
                    entries[0] += 1
                time.sleep(0.0005)
                with guard:
                    inside[0] -= 1

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert entries[0] == 320 and max(overlaps) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_held_lock_refuses_a_second_writer_and_names_the_file(tmp_path):
    from markovgames._lock import DirectoryBusyError, directory_lock

    with directory_lock(tmp_path / "summary.md", "--markdown", noun="file"):
        with pytest.raises(
            DirectoryBusyError, match=r"--markdown .*summary\.md: another markovgames command is writing to this file"
        ):
            with directory_lock(tmp_path / "summary.md", "--markdown", noun="file"):
                pass
    assert list(tmp_path.iterdir()) == []


def test_a_write_without_replace_never_replaces_a_file_made_meanwhile(tmp_path):
    """``replace=False`` (an output without --overwrite): a file that appears under the name while
    the command writes (another command's) is left as it is, and the write fails naming it."""
    target = tmp_path / "out.json"

    def write(fh) -> None:
        target.write_text("theirs")  # another process creates the name during our write
        fh.write(b"ours")

    with pytest.raises(FileExistsError) as info:
        atomic_write(target, write, replace=False)
    assert info.value.filename == str(target) and "another process" in info.value.strerror
    assert target.read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary file left
    atomic_write_text(tmp_path / "new.json", "ours", replace=False)  # a new name is written
    assert (tmp_path / "new.json").read_text() == "ours"
    atomic_write_text(target, "ours")  # replace=True (--overwrite) replaces a regular file
    assert target.read_text() == "ours"


@pytest.mark.parametrize(
    "command",
    [
        "games export paper --out g.json".split(),
        "games random --players 2 --horizon 1 --states 1 --actions 2 --seed 0 --out g.json".split(),
    ],
)
def test_single_file_commands_leave_nothing_beside_their_output(tmp_path, monkeypatch, capsys, command):
    monkeypatch.chdir(tmp_path)
    assert main(command) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]
    assert main(command) == 2 and "--force" in capsys.readouterr().err  # refused without the flag
    assert main([*command, "--force"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]


def test_a_waiter_granted_the_deleted_lock_file_starts_again(tmp_path, monkeypatch):
    """The race the deletion opens, made to happen: B opens the lock file, A releases (deleting it),
    C locks a new file at the path, then B is granted its flock on the deleted one. B must see
    that and be refused by C's lock, not enter beside C."""
    import contextlib
    import fcntl

    import markovgames._lock as lock_module
    from markovgames._lock import DirectoryBusyError, directory_lock

    holder_a = contextlib.ExitStack()
    holder_a.enter_context(directory_lock(tmp_path / "out"))
    c_fd: list[int] = []

    class Interleaved:
        LOCK_EX, LOCK_NB = fcntl.LOCK_EX, fcntl.LOCK_NB

        @staticmethod
        def flock(fd: int, operation: int) -> None:
            if not c_fd:  # B's first flock, on the file it opened while A held it
                holder_a.close()  # A leaves: the file B opened is deleted
                c_fd.append(os.open(tmp_path / ".out.lock", os.O_RDWR | os.O_CREAT, 0o644))
                fcntl.flock(c_fd[0], fcntl.LOCK_EX | fcntl.LOCK_NB)  # C locks the new file
            fcntl.flock(fd, operation)

    monkeypatch.setattr(lock_module, "fcntl", Interleaved)
    try:
        with pytest.raises(DirectoryBusyError, match="another markovgames command is writing"):
            with directory_lock(tmp_path / "out"):
                pass
    finally:
        os.close(c_fd[0])
