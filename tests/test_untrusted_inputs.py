"""What markovgames reads back is data, never code: run directories, sweep directories, results.

* Reading results (``evaluate``, ``certify``, ``summarize``, ``plot``, ``load_results``, ``run
  --resume``) imports no module and loads no file that they name: a run directory whose
  ``metrics.json`` names ``evil.py:X`` (a file that leaves a marker when it is imported) or
  ``this:X`` (the standard library's module that prints when imported) is refused or used as
  data, and neither is ever loaded.
* A run of a user's learner is evaluated without its file; ``--resume`` needs the file named again
  and refuses one whose content changed.
* A sweep's workers run the code whose SHA-256 the sweep records, even if the file changes after
  the sweep read it; a sweep resumed after the file changed runs the new code.
* A sweep's run files and manifest are checked field by field when read: a damaged one is refused
  with one line (exit 2) and the directory is left as it was; every JSON file is read with a bound
  on its nesting depth.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples
from markovgames.cli import main
from markovgames.dynamics import builtin_algorithm, run
from markovgames.experiments.sweeps import _results as _sweep_results
from markovgames.experiments.sweeps import _sweep
from markovgames.experiments.sweeps._files import SweepFileError, read_manifest, read_run_file
from markovgames.experiments.sweeps._summary import PROVENANCE_KEY, ResultsError, load_results
from markovgames.experiments.sweeps._sweep import MANIFEST_FILE, RESULTS_FILE, RUNS_DIR, run_sweep
from markovgames.games import paper_game

# JAX warns about any fork once it runs threads; nothing here forks but to exec.
pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")

#: A file that, if it were ever imported, would leave a marker beside itself.
EVIL = 'import pathlib\npathlib.Path(__file__).with_name("IMPORTED").write_text("evil.py ran")\nX = 1\n'

#: A user's algorithm: optimistic Hedge with the smooth update, under its own name.
MINE = textwrap.dedent(
    """
    from markovgames.dynamics import Algorithm
    from markovgames.learners import BUILTIN_LEARNERS

    ALGORITHM = Algorithm(BUILTIN_LEARNERS["{learner}"], "smooth", name="mine")
    """
)


def _code(capsys, argv) -> tuple[int, str]:
    """``markovgames ARGV`` in this process: its exit code and standard error."""
    capsys.readouterr()
    try:
        code = main([str(a) for a in argv])
    except SystemExit as stop:
        code = stop.code
    return code, capsys.readouterr().err


def _one_line(err: str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("markovgames: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("finished") / "run"
    assert main(["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "20", "--out", str(path), "--quiet"]) == 0
    return path


@pytest.fixture
def nothing_imported(tmp_path):
    """The evil file (in ``tmp_path``) and the check that neither it nor ``this`` was imported."""
    sys.modules.pop("this", None)
    evil = tmp_path / "evil.py"
    evil.write_text(EVIL)
    yield evil
    assert not (tmp_path / "IMPORTED").exists(), "a file named in what was read was imported"
    assert "this" not in sys.modules, "a module named in what was read was imported"


def _evil_run(finished_run: Path, tmp_path: Path, algorithm: str, *, keep_update: bool) -> Path:
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    metrics["algorithm"] = algorithm
    metrics["config"]["algorithm"] = algorithm
    if not keep_update:
        del metrics["value_update"]
    (run_dir / "metrics.json").write_text(json.dumps(metrics))
    return run_dir


# ---------------------------------------------------------------------------------------
# 1. Reading never runs code
# ---------------------------------------------------------------------------------------
def test_the_safe_resolver_finds_built_ins_and_loads_nothing(nothing_imported):
    assert builtin_algorithm("smooth_ce").name == "smooth_ce"
    assert builtin_algorithm("rm-plus+stage").composition == "rm-plus+stage"
    assert builtin_algorithm("bm-rm-plus+smooth").concept == "ce"
    for name in (f"{nothing_imported}:X", "this:X", f"{nothing_imported}:X+smooth", "this:X+stage", "nope", "bm-bm-hedge+smooth"):
        with pytest.raises(ValueError, match="is not a built-in algorithm"):
            builtin_algorithm(name)


@pytest.mark.parametrize("target", ["evil", "this"])
def test_evaluate_refuses_an_unknown_algorithm_without_its_value_update(
    finished_run, tmp_path, nothing_imported, capsys, monkeypatch, target
):
    name = f"{nothing_imported}:X" if target == "evil" else "this:X"
    run_dir = _evil_run(finished_run, tmp_path, name, keep_update=False)
    monkeypatch.chdir(tmp_path)
    code, err = _code(capsys, ["evaluate", "run"])
    assert code == 2
    _one_line(err, "run/metrics.json", "value_update: missing", "is not a built-in algorithm")
    assert not (run_dir / "evaluation.json").exists()


@pytest.mark.parametrize("target", ["evil", "this"])
def test_evaluate_and_certify_use_the_stored_data_of_any_algorithm(
    finished_run, tmp_path, nothing_imported, capsys, monkeypatch, target
):
    """With its value update recorded (as every run writes it), a run of an algorithm that cannot
    be loaded is evaluated from its files: the learner's code is not needed."""
    from markovgames.experiments import load_run_directory

    name = f"{nothing_imported}:X" if target == "evil" else "this:X"
    run_dir = _evil_run(finished_run, tmp_path, name, keep_update=True)
    monkeypatch.chdir(tmp_path)
    code, err = _code(capsys, ["evaluate", "run", "--exact"])
    assert code == 0, err
    assert json.loads((run_dir / "evaluation.json").read_text())["algorithm"] == name
    stored = load_run_directory(run_dir)
    assert stored.algorithm == name and stored.index_kernel == "smooth"
    code, err = _code(
        capsys, ["certify", "run/trajectory", "--game", "run/game.json", "--value-update", "smooth", "--out", "cert", "--quiet"]
    )
    assert code == 0, err


def test_resume_never_loads_what_the_run_directory_names(finished_run, tmp_path, nothing_imported, capsys, monkeypatch):
    _evil_run(finished_run, tmp_path, f"{nothing_imported}:X", keep_update=True)
    monkeypatch.chdir(tmp_path)
    code, err = _code(
        capsys, ["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "20", "--resume", "--out", "run", "--quiet"]
    )
    assert code == 2
    _one_line(err, "holds a finished run with a different configuration", "algorithm:")
    # An interrupted run's saved configuration names a module: refused, not imported.
    staging = tmp_path / ".out.partial"
    staging.mkdir()
    (staging / "state.npz").write_bytes(b"")
    config = json.loads((tmp_path / "run" / "metrics.json").read_text())["config"]
    (staging / "config.json").write_text(json.dumps({**config, "algorithm": "this:X"}))
    code, err = _code(
        capsys, ["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "20", "--resume", "--out", "out", "--quiet"]
    )
    assert code == 2
    _one_line(err, ".out.partial: the interrupted run there has a different configuration", "'this:X' there")


def test_a_users_learner_is_evaluated_without_its_file_and_resumed_only_with_the_same_code(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "mine.py"
    mine.write_text(MINE.format(learner="hedge"))
    digest = hashlib.sha256(mine.read_bytes()).hexdigest()
    argv = ["run", "--game", "paper", "--algorithm", "mine.py:ALGORITHM", "-T", "20", "--out", "out", "--quiet"]
    code, err = _code(capsys, argv)
    assert code == 0, err
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["config"]["algorithm_sha256"] == digest == metrics["algorithm_source"]["sha256"]
    # The learner's code is not needed to evaluate the run.
    mine.rename(tmp_path / "elsewhere.py")
    code, err = _code(capsys, ["evaluate", "out", "--exact"])
    assert code == 0, err
    # --resume needs the file named again, and refuses it once its content changed.
    (tmp_path / "elsewhere.py").rename(mine)
    mine.write_text(mine.read_text() + "# edited\n")
    code, err = _code(capsys, [*argv, "--resume"])
    assert code == 2
    _one_line(err, "algorithm_sha256", "the learner's file has changed since that run")
    mine.write_text(MINE.format(learner="hedge"))
    assert main([*argv, "--resume"]) == 0
    assert "this run is complete" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------
# Sweeps: a small one to read back, tamper with and resume
# ---------------------------------------------------------------------------------------
SWEEP = 'T = 20\ngames = ["paper"]\nalgorithms = ["smooth_ce"]\netas = [0.2]\ncheckpoints = [1, 10, 20]\n'


@pytest.fixture(scope="module")
def finished_sweep(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sweep")
    (root / "s.toml").write_text(SWEEP)
    report = run_sweep(root / "s.toml", root / "sw", workers=1)
    assert report.computed_runs == 1 and not report.failures
    return root


def _copy_sweep(finished_sweep: Path, tmp_path: Path) -> tuple[Path, Path]:
    shutil.copy(finished_sweep / "s.toml", tmp_path / "s.toml")
    shutil.copytree(finished_sweep / "sw", tmp_path / "sw")
    run_file = next((tmp_path / "sw" / RUNS_DIR).glob("*.json"))
    return tmp_path / "sw", run_file


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _with_results(sweep: Path, algorithm: str) -> None:
    """Rewrite the sweep's results so that its algorithm column and provenance name ``algorithm``."""
    table = pq.read_table(sweep / RESULTS_FILE)
    column = table.schema.get_field_index("algorithm")
    table = table.set_column(column, "algorithm", pa.array([algorithm] * table.num_rows, pa.string()))
    provenance = json.loads(table.schema.metadata[PROVENANCE_KEY])
    provenance["config"]["algorithms"] = [{"name": algorithm}]
    table = table.replace_schema_metadata({PROVENANCE_KEY: json.dumps(provenance).encode()})
    pq.write_table(table, sweep / RESULTS_FILE)


@pytest.mark.parametrize("target", ["evil", "this"])
def test_summarize_plot_and_load_results_never_load_what_the_results_name(
    finished_sweep, tmp_path, nothing_imported, capsys, target
):
    name = f"{nothing_imported}:X" if target == "evil" else "this:X"
    sweep, _ = _copy_sweep(finished_sweep, tmp_path)
    _with_results(sweep, name)
    assert set(load_results(sweep)["algorithm"]) == {name}
    code, err = _code(capsys, ["summarize", sweep])
    assert code == 0, err
    code, err = _code(capsys, ["plot", sweep, "--out", tmp_path / "figs"])
    assert code == 0, err


@pytest.mark.parametrize("depth", [500, 50_000])  # within the parser's recursion, and far beyond it
def test_a_deeply_nested_provenance_is_refused(finished_sweep, tmp_path, depth):
    sweep, _ = _copy_sweep(finished_sweep, tmp_path)
    table = pq.read_table(sweep / RESULTS_FILE)
    deep = '{"config": ' + "[" * depth + "]" * depth + "}"
    pq.write_table(table.replace_schema_metadata({PROVENANCE_KEY: deep.encode()}), sweep / RESULTS_FILE)
    with pytest.raises(ResultsError, match=r"results.parquet: provenance metadata: unreadable: JSON nested too deep"):
        load_results(sweep)


# ---------------------------------------------------------------------------------------
# 2. Workers run the code that was hashed
# ---------------------------------------------------------------------------------------
def _sweep_values(sweep: Path) -> dict[tuple[str, bool], list]:
    """The stored values of every run file, by the code's SHA-256 and optimism."""
    out = {}
    for path in (sweep / RUNS_DIR).glob("*.json"):
        doc = json.loads(path.read_text())
        out[doc["spec"]["algorithm_sha256"], doc["optimistic"]] = [r["value"] for r in doc["records"]]
    return out


def _close(found: dict, wanted: dict) -> bool:
    """The same keys, with values equal to a batch's rounding (a batch and a single run agree
    to about 1e-15, not bit for bit)."""
    return found.keys() == wanted.keys() and all(np.allclose(found[k], wanted[k], rtol=1e-12, atol=0) for k in wanted)


def _single_run_values(learner: str, optimistic: bool) -> list:
    result = run(paper_game(), f"{learner}+smooth", T=20, eta=0.2, optimistic=optimistic)
    return [[float(v) for v in result.value[result.row(t)]] for t in (1, 10, 20)]


@pytest.mark.parametrize("workers", [1, 2])  # inline, and two worker processes (spawned: a batch each)
def test_a_sweep_runs_the_learner_file_it_hashed(tmp_path, monkeypatch, workers):
    """The learner file is replaced after the sweep read it and before its batches run: the results
    stored under the recorded SHA-256 are those of the file that was hashed. Run again, the sweep
    runs the new file's code under the new SHA-256."""
    mine = tmp_path / "mine.py"
    mine.write_text(MINE.format(learner="hedge"))
    hedge_digest = hashlib.sha256(mine.read_bytes()).hexdigest()
    settings = [True, False] if workers > 1 else [True]
    config = SWEEP.replace('"smooth_ce"', '"mine.py:ALGORITHM"') + f"optimistic = {json.dumps(settings)}\n"
    (tmp_path / "s.toml").write_text(config)
    original = _sweep._run_planned

    def edit_then_run(*args, **kwargs):
        mine.write_text(MINE.format(learner="rm-plus"))  # after the plan read and hashed the file
        return original(*args, **kwargs)

    monkeypatch.setattr(_sweep, "_run_planned", edit_then_run)
    report = run_sweep(tmp_path / "s.toml", tmp_path / "sw", workers=workers)
    assert report.computed_runs == report.batches == len(settings) and not report.failures
    hedge = {(hedge_digest, o): _single_run_values("hedge", o) for o in settings}
    assert _close(_sweep_values(tmp_path / "sw"), hedge)
    # Resumed with the edited file: its runs are new runs (the content is part of their ids).
    monkeypatch.setattr(_sweep, "_run_planned", original)
    rm_digest = hashlib.sha256(mine.read_bytes()).hexdigest()
    report = run_sweep(tmp_path / "s.toml", tmp_path / "sw", workers=1)
    assert report.computed_runs == len(settings) and report.skipped_runs == 0
    rm_plus = {(rm_digest, o): _single_run_values("rm-plus", o) for o in settings}
    assert not np.allclose(rm_plus[rm_digest, True], hedge[hedge_digest, True], rtol=1e-6)
    assert _close(_sweep_values(tmp_path / "sw"), {**hedge, **rm_plus})
    # The results are this configuration's runs: the new code's.
    table = pq.read_table(tmp_path / "sw" / RESULTS_FILE).to_pylist()
    found = {(rm_digest, r["optimistic"]): [] for r in table}
    for r in table:
        found[rm_digest, r["optimistic"]].append(r["value"])
    assert _close(found, rm_plus)


def test_a_worker_refuses_code_other_than_the_recorded(tmp_path):
    from markovgames.experiments.sweeps._config import load_sweep_config
    from markovgames.experiments.sweeps._sweep import SweepError, execute_batch, plan_sweep

    (tmp_path / "s.toml").write_text(SWEEP)
    task = plan_sweep(load_sweep_config(tmp_path / "s.toml")[0], tmp_path).batches()[0]
    forged = copy.copy(task)
    object.__setattr__(forged, "algorithm_sha256", "0" * 64)
    with pytest.raises(SweepError, match="its code changed after the sweep read it"):
        execute_batch(forged)


# ---------------------------------------------------------------------------------------
# 3. A sweep's bookkeeping files are checked when read
# ---------------------------------------------------------------------------------------
def _edit_json(path: Path, edit) -> None:
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


RUN_FILE_DAMAGE = {
    "records-missing": (lambda d: d.pop("records"), "missing key(s): 'records'"),
    "record-value-string": (
        lambda d: d["records"][0].update(value="high"),
        "records[0].value: expected a list of 2 finite numbers",
    ),
    "record-gap-nan": (lambda d: d["records"][1].update(certified_ce_gap=float("nan")), "records[1].certified_ce_gap"),
    "shape-N-zero": (lambda d: d["shape"].update(N=0), "shape.N: expected a positive integer, got 0"),
    "batch-not-object": (lambda d: d.update(batch=[]), "batch: expected an object"),
    "unknown-key": (lambda d: d.update(colour="red"), "unknown key(s): 'colour'"),
    "T-differs-from-spec": (lambda d: d.update(T=30), "T: 30 differs from the spec's 20"),
    "spec-edited": (lambda d: d["spec"].update(eta=0.3), "spec: its hash is"),
    "records-checkpoints": (lambda d: d["records"].pop(), "records: checkpoints [1, 10], not those of the spec"),
    "not-an-object": (lambda d: d.clear(), "missing key(s)"),
}


@pytest.mark.parametrize("damage", sorted(RUN_FILE_DAMAGE))
def test_a_damaged_run_file_is_refused_and_the_sweep_directory_left_as_it_was(
    finished_sweep, tmp_path, capsys, monkeypatch, damage
):
    edit, needle = RUN_FILE_DAMAGE[damage]
    sweep, run_file = _copy_sweep(finished_sweep, tmp_path)
    _edit_json(run_file, edit)
    before = _snapshot(sweep)
    monkeypatch.chdir(tmp_path)
    for extra in ([], ["--dry-run"]):  # the plan it shows counts the runs to do as the sweep would
        code, err = _code(capsys, ["sweep", "s.toml", "--out", "sw", "--workers", "1", "--quiet", *extra])
        assert code == 2
        _one_line(err, f"sw/runs/{run_file.name}", needle, "delete the file to run that run again")
        assert _snapshot(sweep) == before  # the manifest is not rewritten, nothing computed


MANIFEST_DAMAGE = {
    "sessions-retries-text": (
        lambda d: d["sessions"][0].update(retries="many"),
        "sessions[0].retries: expected a non-negative integer",
    ),
    "sessions-not-a-list": (lambda d: d.update(sessions={}), "sessions: expected a list"),
    "batches-entry-status": (lambda d: d["batches"][0].update(status="done"), "batches[0].status"),
    "format": (lambda d: d.update(format="other/9"), 'format: expected "markovgames-sweep/1"'),
    "missing-sessions": (lambda d: d.pop("sessions"), "missing key(s): 'sessions'"),
    "wall-time-negative": (lambda d: d.update(wall_time_s=-1), "wall_time_s: expected a non-negative number"),
}


@pytest.mark.parametrize("damage", sorted(MANIFEST_DAMAGE))
def test_a_damaged_manifest_is_refused_and_left_as_it_was(finished_sweep, tmp_path, capsys, monkeypatch, damage):
    edit, needle = MANIFEST_DAMAGE[damage]
    sweep, _ = _copy_sweep(finished_sweep, tmp_path)
    _edit_json(sweep / MANIFEST_FILE, edit)
    before = _snapshot(sweep)
    monkeypatch.chdir(tmp_path)
    code, err = _code(capsys, ["sweep", "s.toml", "--out", "sw", "--workers", "1", "--quiet"])
    assert code == 2
    _one_line(err, "sw/manifest.json", needle, "delete it to start the manifest afresh")
    assert _snapshot(sweep) == before


@pytest.mark.parametrize("member", ["manifest", "run file"])
def test_deeply_nested_sweep_files_are_refused(finished_sweep, tmp_path, capsys, monkeypatch, member):
    sweep, run_file = _copy_sweep(finished_sweep, tmp_path)
    target = sweep / MANIFEST_FILE if member == "manifest" else run_file
    target.write_text("[" * 100_000 + "]" * 100_000)
    before = _snapshot(sweep)
    monkeypatch.chdir(tmp_path)
    code, err = _code(capsys, ["sweep", "s.toml", "--out", "sw", "--workers", "1", "--quiet"])
    assert code == 2
    _one_line(err, str(target.relative_to(tmp_path)), "JSON nested too deep")
    assert _snapshot(sweep) == before


def test_an_intact_sweep_resumes_and_consolidates_without_its_plan(finished_sweep, tmp_path, capsys, monkeypatch):
    sweep, run_file = _copy_sweep(finished_sweep, tmp_path)
    monkeypatch.chdir(tmp_path)
    code, err = _code(capsys, ["sweep", "s.toml", "--out", "sw", "--workers", "1", "--quiet"])
    assert code == 0, err
    assert json.loads((sweep / MANIFEST_FILE).read_text())["sessions"][-1]["runs_skipped_as_finished"] == 1
    path, count = _sweep.consolidate_results(sweep)  # every run file, checked on its own
    assert count == 1 and path.exists()


#: Replacement values: every JSON type, and the values a field's range excludes.
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.lists(st.integers(-2, 3), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _paths(value, prefix=()):
    """Every path to a value inside ``value`` (keys and indices)."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for k, v in enumerate(value):
            yield from _paths(v, (*prefix, k))


def _tampered(doc, path, value, delete: bool):
    doc = copy.deepcopy(doc)
    if not path:
        return value
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


@settings(max_examples=examples(150, 1500), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_tampered_field_is_refused_cleanly_or_reads_back_consistently(finished_sweep, tmp_path, data):
    """Any field of a run file or the manifest, replaced by any JSON value or deleted: the reader
    refuses it with a `SweepFileError` naming the file, or returns a document that what consumes
    it (the results rows, the manifest's totals) uses without error: never another exception,
    which the command line would report as an internal error (exit 70)."""
    source = finished_sweep / "sw"
    run_file = next((source / RUNS_DIR).glob("*.json"))
    which = data.draw(st.sampled_from(["run", "manifest"]))
    original = json.loads((run_file if which == "run" else source / MANIFEST_FILE).read_text())
    path = data.draw(st.sampled_from(list(_paths(original))))
    delete = bool(path) and data.draw(st.booleans())
    doc = _tampered(original, path, data.draw(_VALUES), delete)
    target = tmp_path / ("r.json" if which == "run" else "m.json")
    target.write_text(json.dumps(doc))
    try:
        if which == "run":
            read = read_run_file(target, run_file.stem)
            assert read is not None
            rows = _sweep_results._result_rows(read, None)
            assert len(rows) == len(read["records"])
        else:
            read = read_manifest(target)
            assert read is not None
            sum(int(s.get("retries", 0)) for s in read["sessions"])
            sum(float(s.get("wall_time_s") or 0.0) for s in read["sessions"])
    except SweepFileError as err:
        assert str(err).startswith(f"{target}: ") and "\n" not in str(err)


def test_the_special_file_checks_still_name_the_file(finished_sweep, tmp_path):
    sweep, run_file = _copy_sweep(finished_sweep, tmp_path)
    run_file.unlink()
    os.mkfifo(run_file)
    with pytest.raises(SweepFileError, match=r"cannot read: not a regular file \(a FIFO\)"):
        read_run_file(run_file, run_file.stem)


def test_a_deeply_nested_state_file_is_refused(finished_run, tmp_path, capsys, monkeypatch):
    """An interrupted run's state file whose metadata is nested thousands deep: one line naming it."""
    staging = tmp_path / ".out.partial"
    staging.mkdir()
    config = json.loads((finished_run / "metrics.json").read_text())["config"]
    (staging / "config.json").write_text(json.dumps({**config, "checkpoint_every": 5}))
    np.savez(staging / "state.npz", meta=np.asarray("[" * 100_000 + "]" * 100_000))
    monkeypatch.chdir(tmp_path)
    argv = ["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "20", "--checkpoint-every", "5", "--resume"]
    code, err = _code(capsys, [*argv, "--out", "out", "--quiet"])
    assert code == 2
    _one_line(err, "state.npz: meta: unreadable: JSON nested too deep")
    assert (staging / "state.npz").exists()  # the saved state is kept


def test_game_files_are_bounded_in_depth_but_not_below_what_a_game_needs(tmp_path):
    """The deepest game a file can hold (29 players: 33 levels of arrays) loads; a value nested
    deeper than the bound anywhere in the file is refused before it is parsed."""
    from markovgames.games import GameFileError, game_to_dict, load_game, random_game, save_game

    widest = random_game(29, 1, 1, (1,) * 29, seed_or_rng=0)
    assert load_game(save_game(widest, tmp_path / "wide.json")).num_players == 29
    data = game_to_dict(paper_game())
    data["description"] = json.loads("[" * 70 + "]" * 70)
    (tmp_path / "deep.json").write_text(json.dumps(data))
    with pytest.raises(GameFileError, match=r"deep.json: not a game file: JSON nesting too deep \(more than 64 levels\)"):
        load_game(tmp_path / "deep.json")


@settings(max_examples=examples(15, 150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_sweep_resumed_over_any_tampered_file_exits_0_or_2(finished_sweep, capsys, data):
    """The command line over the same tampering: a resumed sweep whose run file or manifest has
    any field replaced or deleted finishes (exit 0: the file still describes its run) or refuses
    it in one line (exit 2); never an internal error (70), never a traceback."""
    import tempfile

    which = data.draw(st.sampled_from(["run", "manifest"]))
    with tempfile.TemporaryDirectory() as tmp:
        sweep, run_file = _copy_sweep(finished_sweep, Path(tmp))
        target = run_file if which == "run" else sweep / MANIFEST_FILE
        original = json.loads(target.read_text())
        path = data.draw(st.sampled_from(list(_paths(original))))
        delete = bool(path) and data.draw(st.booleans())
        target.write_text(json.dumps(_tampered(original, path, data.draw(_VALUES), delete)))
        code, err = _code(capsys, ["sweep", Path(tmp) / "s.toml", "--out", sweep, "--workers", "1", "--quiet"])
        assert code in (0, 2), err
        if code == 2:
            _one_line(err, str(target))


# ----------------------------------------------------------------------------- integers of thousands of digits
@settings(max_examples=examples(40, 400), deadline=None)
@given(
    digits=st.integers(1, 4400).filter(lambda n: n < 200 or n > 4200),
    line=st.integers(0, 5),
    key=st.sampled_from(["T", "base_seed", '"initial_state"', "seeds"]),
    underscores=st.booleans(),
)
def test_an_integer_beyond_pythons_limit_is_located_by_line_column_and_key(digits, line, key, underscores):
    """`long_integer_in` finds an integer literal of more than 4,300 digits (TOML's underscores
    allowed) where it is, and nothing in a text without one; Python itself refuses exactly those."""
    from markovgames._text import MAX_INT_DIGITS, abbreviate_digits, long_integer_in

    number = "7" * digits
    literal = "_".join(number[k : k + 3] for k in range(0, digits, 3)) if underscores else number
    text = "a = 1\n" * line + f"{key} = {literal}\n"
    found = long_integer_in(text)
    refused = False
    try:
        int(number)
    except ValueError:
        refused = True
    assert refused == (digits > MAX_INT_DIGITS)
    if digits <= MAX_INT_DIGITS:
        assert found is None
        return
    assert found == (
        f"line {line + 1}, column {len(key) + 4}: {key.strip(chr(34))}: an integer of {digits} digits, "
        f"more than the {MAX_INT_DIGITS} a number may have"
    )
    shown = abbreviate_digits(f"got {number}")
    assert shown == f"got 7777777777... ({digits} digits)"
