"""Sparse transitions: the model, both file formats, validation, and the engine (dense = sparse)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from conftest import FULL_TESTS, PAPER_ALGORITHMS, beyond_default_in_full, examples
from markovgames.dynamics import run, run_batch
from markovgames.games import (
    GameFileError,
    GameValidationError,
    MarkovGame,
    SparseTransitions,
    load_game,
    paper_game,
    random_game,
    save_game,
)


def _sparse_game(seed: int = 3, k: int = 3) -> MarkovGame:
    # Three players (three action axes in the sparse contraction), two steps: the engine tests'
    # loops compile in about half the time they take at three steps and seven states.
    return random_game(3, 2, 5, (2, 3, 2), seed_or_rng=seed, num_successors=k)


# ----------------------------------------------------------------------------- model
def test_dense_and_sparse_forms_describe_the_same_kernel():
    game = _sparse_game()
    sparse = game.sparse_transitions
    dense = game.transitions
    assert dense.shape == (2, 5, 2, 3, 2, 5)
    np.testing.assert_allclose(dense.sum(axis=-1), 1.0, atol=1e-12)
    # Every listed successor carries its probability in the dense array, and nothing else does.
    rows = np.take_along_axis(dense, sparse.successors, axis=-1)
    np.testing.assert_array_equal(rows, sparse.probabilities)
    assert ((dense > 0).sum(axis=-1) == 3).all()
    assert game.is_sparse and not game.to_dense().is_sparse
    assert game == game.to_dense() == game.to_dense().to_sparse()


def test_from_dense_is_canonical_and_round_trips():
    game = paper_game()
    sparse = SparseTransitions.from_dense(game.transitions)
    np.testing.assert_array_equal(sparse.to_dense(game.num_states), game.transitions)
    # Padding entries (probability 0) point at state 0; positive entries come first, in state order.
    positive = sparse.probabilities > 0
    assert (np.where(positive, 0, sparse.successors) == 0).all()
    assert sparse.num_successors == int((game.transitions > 0).sum(axis=-1).max())


def test_equality_ignores_order_and_padding_of_successor_lists():
    game = _sparse_game(k=2)
    s = game.sparse_transitions
    # Reverse each row's order and add a padding column: the same kernel.
    succ = np.concatenate([s.successors[..., ::-1], np.zeros(s.successors.shape[:-1] + (1,), np.int64)], axis=-1)
    prob = np.concatenate([s.probabilities[..., ::-1], np.zeros(s.probabilities.shape[:-1] + (1,))], axis=-1)
    other = MarkovGame(game.rewards, SparseTransitions(succ, prob), game.initial_state, game.name, game.description)
    assert other == game
    changed = prob.copy()
    changed[0, 0, 0, 0, 0, :2] = changed[0, 0, 0, 0, 0, 1::-1]
    if not np.allclose(changed, prob):
        assert MarkovGame(game.rewards, SparseTransitions(succ, changed), game.initial_state, game.name, game.description) != game


def _arrays(k: int = 2):
    succ = np.zeros((1, 2, 2, 2, k), np.int64)
    prob = np.zeros((1, 2, 2, 2, k))
    succ[..., 0], prob[..., 0] = 0, 0.25
    succ[..., 1], prob[..., 1] = 1, 0.75
    return succ, prob


def _set(arr, index, value):
    arr = arr.copy()
    arr[index] = value
    return arr


def _rewards():
    return np.full((1, 2, 2, 2, 2), 0.5)


@pytest.mark.parametrize(
    ("edit", "pattern"),
    [
        (lambda s, p: (s.astype(float), p), r"transition_successors: expected an integer array, got dtype float64"),
        (lambda s, p: (s, p[..., :1]), r"transition_probabilities: shape .* differs"),
        (lambda s, p: (_set(s, (0, 1, 0, 1, 1), -1), p), r"transition_successors\[0, 1, 0, 1, 1\] = -1 is negative"),
        (lambda s, p: (s, _set(p, (0, 0, 1, 0, 0), np.nan)), r"transition_probabilities\[0, 0, 1, 0, 0\] = nan is not finite"),
        (lambda s, p: (s, p * 0.9), r"transition_probabilities\[0, 0, 0, 0\] sums to .*, not 1"),
        (lambda s, p: (np.zeros_like(s), p), r"successor state 0 is listed twice"),
    ],
)
def test_sparse_validation_names_the_field_and_index(edit, pattern):
    succ, prob = _arrays()
    succ, prob = edit(succ.copy(), prob.copy())
    with pytest.raises(GameValidationError, match=pattern):
        MarkovGame(_rewards(), SparseTransitions(succ, prob))


def test_successor_out_of_range_and_shape_against_the_game():
    succ, prob = _arrays()
    succ[0, 1, 1, 0, 1] = 2
    with pytest.raises(GameValidationError, match=r"transition_successors\[0, 1, 1, 0, 1\] = 2 is out of range 0\.\.1"):
        MarkovGame(_rewards(), SparseTransitions(succ, prob))
    succ, prob = _arrays()
    with pytest.raises(GameValidationError, match=r"transition_successors: expected shape"):
        MarkovGame(np.full((1, 2, 3, 2, 2), 0.5), SparseTransitions(succ, prob))


def test_padding_may_repeat_a_successor_at_probability_zero():
    succ, prob = _arrays(k=4)
    succ[..., 2:] = 1
    game = MarkovGame(_rewards(), SparseTransitions(succ, prob))
    np.testing.assert_allclose(game.transitions[0, 0, 0, 0], [0.25, 0.75])


def test_dense_array_of_a_huge_sparse_game_is_refused_not_built():
    game = random_game(1, 1, 3000, 2, seed_or_rng=0, num_successors=2, max_entries=10**6)
    with pytest.raises(GameValidationError, match="dense form of this sparse game would have 18000000 entries"):
        _ = game.transitions
    assert game.sparse_transitions.successors.shape == (1, 3000, 2, 2)


def test_random_sparse_game_rows_have_distinct_successors():
    game = random_game(2, 2, 50, (3, 2), seed_or_rng=7, num_successors=6)
    succ = np.sort(game.sparse_transitions.successors, axis=-1)
    assert (succ[..., 1:] != succ[..., :-1]).all()
    # The same seed gives the same game; a dense regime (K close to S) also works.
    assert random_game(2, 2, 50, (3, 2), seed_or_rng=7, num_successors=6) == game
    full = random_game(1, 1, 5, 2, seed_or_rng=1, num_successors=5)
    assert (np.sort(full.sparse_transitions.successors, axis=-1) == np.arange(5)).all()
    with pytest.raises(GameValidationError, match="num_successors = 6 exceeds num_states = 5"):
        random_game(1, 1, 5, 2, seed_or_rng=1, num_successors=6)


# ----------------------------------------------------------------------------- files
@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_sparse_file_round_trip_is_exact(tmp_path, suffix):
    game = _sparse_game()
    path = save_game(game, tmp_path / f"game{suffix}")
    loaded = load_game(path)
    assert loaded.is_sparse and loaded == game
    np.testing.assert_array_equal(loaded.sparse_transitions.successors, game.sparse_transitions.successors)
    np.testing.assert_array_equal(loaded.sparse_transitions.probabilities, game.sparse_transitions.probabilities)


def test_sparse_json_keys(tmp_path):
    path = save_game(_sparse_game(k=2), tmp_path / "g.json")
    data = json.loads(path.read_text())
    assert "transitions" not in data
    assert data["num_successors"] == 2
    assert np.asarray(data["transition_successors"]).shape == (2, 5, 2, 3, 2, 2)


def _sparse_dict(tmp_path):
    path = save_game(_sparse_game(k=2), tmp_path / "g.json")
    return json.loads(path.read_text())


def _load_error(tmp_path, data) -> str:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(GameFileError) as info:
        load_game(path)
    message = str(info.value)
    assert message.startswith(str(path) + ": ")
    return message[len(str(path)) + 2 :]


def test_sparse_file_errors_name_key_and_index(tmp_path):
    data = _sparse_dict(tmp_path)
    both = dict(data, transitions=[])
    assert "both 'transitions' and the sparse form's" in _load_error(tmp_path, both)
    missing = {k: v for k, v in data.items() if k != "transition_probabilities"}
    assert _load_error(tmp_path, missing) == "missing key(s): 'transition_probabilities'"
    wrong_k = dict(data, num_successors=3)
    assert _load_error(tmp_path, wrong_k).startswith(
        "transition_successors[0][0][0][0][0]: expected 3 entries (num_successors), got 2"
    )
    float_state = json.loads(json.dumps(data))
    float_state["transition_successors"][1][2][0][1][0][1] = 1.0
    assert (
        _load_error(tmp_path, float_state)
        == "transition_successors[1][2][0][1][0][1]: expected an integer state, got a number (1.0)"
    )
    out_of_range = json.loads(json.dumps(data))
    out_of_range["transition_successors"][0][1][1][2][1][0] = 5
    assert _load_error(tmp_path, out_of_range) == "transition_successors[0][1][1][2][1][0] = 5 is out of range 0..4"
    bad_row = json.loads(json.dumps(data))
    bad_row["transition_probabilities"][1][0][0][0][0] = [0.5, 0.25]
    assert _load_error(tmp_path, bad_row).startswith("transition_probabilities[1][0][0][0][0] sums to 0.75, not 1")


def test_sparse_npz_wrong_successor_dtype(tmp_path):
    path = save_game(_sparse_game(k=2), tmp_path / "g.npz")
    with np.load(path) as archive:
        arrays = dict(archive)
    arrays["transition_successors"] = arrays["transition_successors"].astype(np.float64)
    bad = tmp_path / "bad.npz"
    np.savez(bad, **arrays)
    with pytest.raises(GameFileError, match=r"bad\.npz: transition_successors: expected an integer array, got dtype float64"):
        load_game(bad)


# ---------------------------------------------------------------------------- engine
#: Every engine test below runs this many iterations of games of one shape (`_sparse_game`),
#: so that they share their compiled loops (compiling one of these takes seconds).
ENGINE_T = 60


# With optimism by default (the programs the batch tests below reuse), without it in the full mode:
# optimism changes only the learners' prediction, not how a step contracts the kernel.
@pytest.mark.parametrize("algorithm", PAPER_ALGORITHMS)
@pytest.mark.parametrize("optimistic", beyond_default_in_full([True, False], {True}))
def test_engine_dense_equals_sparse(algorithm, optimistic):
    sparse = _sparse_game()
    dense = sparse.to_dense()
    a = run(sparse, algorithm, T=ENGINE_T, eta=0.3, optimistic=optimistic)
    b = run(dense, algorithm, T=ENGINE_T, eta=0.3, optimistic=optimistic)
    for x, y in zip(a.policies, b.policies, strict=True):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-13)
    for name in ("value", "certified_ce_bound", "certified_cce_bound"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=0, atol=1e-13)


@pytest.mark.parametrize("algorithm", ["smooth_ce", "stage_cce"])
def test_batched_sparse_equals_single_and_refuses_mixed_forms(algorithm):
    games = [_sparse_game(seed) for seed in (1, 2)]
    batch = run_batch(games, algorithm, T=ENGINE_T, etas=[0.1, 0.4])
    for k, (g, eta) in enumerate(zip(games, (0.1, 0.4), strict=True)):
        # Against a single run of each form (the programs of test_engine_dense_equals_sparse).
        for form in (g, g.to_dense()):
            single = run(form, algorithm, T=ENGINE_T, eta=eta)
            np.testing.assert_allclose(batch.value[k], single.value, rtol=0, atol=1e-13)
    with pytest.raises(ValueError, match=r"games\[1\] has dense transitions, but games\[0\] has sparse"):
        run_batch([games[0], games[1].to_dense()], algorithm, T=5)


# By default the four examples below only (each run layout, dense path and way of cutting a
# step); 40 drawn ones besides in the full mode.
@settings(max_examples=examples(1, 40), deadline=None, phases=tuple(Phase) if FULL_TESTS else (Phase.explicit,))
@given(
    seed=st.integers(0, 2**31 - 1),
    k=st.integers(1, 4),
    runs=st.sampled_from([0, 1, 3]),
    states=st.sampled_from([5, 40]),
    pieces=st.sampled_from([None, 2, 3, 5]),
)
# Each run layout, each dense path and each way of cutting a step, whatever hypothesis draws.
@example(seed=1, k=3, runs=0, states=5, pieces=5)
@example(seed=2, k=2, runs=1, states=40, pieces=3)
@example(seed=3, k=4, runs=3, states=40, pieces=None)
@example(seed=4, k=1, runs=3, states=5, pieces=2)
def test_sparse_kernel_contraction_matches_dense(seed, k, runs, states, pieces):
    """``apply_transition`` (sparse and dense forms; a single run without a run axis, or a batch
    of one or several runs side by side, each with its own kernel) equals the per-run einsum of
    the dense kernel, at either step of a two-step kernel. ``states = 40`` takes the dense
    matrix-multiply path, ``5`` the fused one; ``pieces`` forces the sparse contraction to go in
    that many pieces of states (of unequal sizes where they do not divide 5 or 40; 5 of 5 states
    are pieces of one state), as it does on large games, rather than the whole step at once
    (``None``)."""
    import jax
    import jax.numpy as jnp

    from markovgames.dynamics import _transitions
    from markovgames.dynamics._transitions import SparseKernel, apply_transition, kernel_step

    run_axes = 1 if runs else 0  # runs = 0: a single run, whose arrays have no run axis
    games = [random_game(2, 2, states, (2, 3), seed_or_rng=seed + r, num_successors=k) for r in range(max(runs, 1))]
    rng = np.random.default_rng(seed)
    # (M, S', R): the run axis is last inside the engine. Every stacked vector is contracted on its
    # own (compile time grows with M): two by default, six in the full mode.
    values = rng.random((6 if FULL_TESTS else 2, states, len(games)))
    if pieces is not None:
        # Bytes of one state's successor rows: A_0 A_1 K R entries of an int32 and a float64. A
        # piece of ceil(S / pieces) states cuts the step into exactly ``pieces`` pieces here.
        state_bytes = 2 * 3 * k * max(runs, 1) * 12
        piece_bytes = -(-states // pieces) * state_bytes
    else:
        piece_bytes = _transitions._SPARSE_PIECE_BYTES
    expected = np.stack(
        [
            np.stack([np.einsum("sabt,mt->msab", g.transitions[h], values[..., r]) for r, g in enumerate(games)], axis=-1)
            for h in range(2)
        ]
    )
    with jax.enable_x64(True), pytest.MonkeyPatch.context() as patch:
        patch.setattr(_transitions, "_SPARSE_PIECE_BYTES", piece_bytes)
        successors = np.stack([g.sparse_transitions.successors for g in games], axis=-1).astype(np.int32)
        probabilities = np.stack([g.sparse_transitions.probabilities for g in games], axis=-1)
        kernels = (
            SparseKernel(jnp.asarray(successors), jnp.asarray(probabilities)),
            jnp.asarray(np.stack([g.transitions for g in games], axis=-1)),
        )
        v = values if run_axes else values[..., 0]
        if not run_axes:
            kernels, expected = jax.tree_util.tree_map(lambda x: x[..., 0], kernels), expected[..., 0]

        def contractions(kernels, v, steps):
            # Each step as a Python int (unrolled loops) and as a traced one (scanned loops).
            return [[apply_transition(kernel_step(kernel, step), v, run_axes) for step in (0, 1, *steps)] for kernel in kernels]

        # One compiled call for all the contractions of this example, traced while the pieces are set.
        got = jax.jit(contractions)(kernels, jnp.asarray(v), jnp.arange(2))
    for per_kernel in got:
        for h, result in zip((0, 1, 0, 1), per_kernel, strict=True):
            np.testing.assert_allclose(np.asarray(result), expected[h], rtol=0, atol=1e-14)


def test_large_games_howto_runs(tmp_path, monkeypatch):
    """Every ```python block of docs/howto-large-games.md runs, in order, in one namespace."""
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[1] / "docs" / "howto-large-games.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    for k, block in enumerate(blocks):
        exec(compile(block, f"howto-large-games.md (python block {k + 1})", "exec"), namespace)
    assert namespace["game"].is_sparse and (tmp_path / "sparse.npz").exists()
    assert abs(namespace["policy"].T - 20000) == 0


def test_run_exact_skips_a_sparse_game_too_large_for_dense_arrays():
    """``run --exact`` records why it skipped, rather than failing after the run."""
    from markovgames.experiments import exact_checkpoint_gaps

    game = random_game(1, 1, 3000, 2, seed_or_rng=0, num_successors=2, max_entries=10**6)
    result = run(game, "smooth_cce", T=5)
    extras = exact_checkpoint_gaps(result, [5])[5]
    assert extras["exact_ce_gap"] is None and extras["exact_cce_gap"] is None
    assert "dense form of this sparse game" in extras["exact_ce_gap_skipped"]


def test_pickle_and_deepcopy_keep_a_sparse_game_validated_and_read_only():
    import copy
    import pickle

    game = _sparse_game()
    for clone in (pickle.loads(pickle.dumps(game)), copy.deepcopy(game)):
        assert clone == game and clone.is_sparse
        assert not clone.sparse_transitions.successors.flags.writeable
        assert not clone.sparse_transitions.probabilities.flags.writeable


def test_to_sparse_canonicalises_and_equal_games_hash_equal():
    game = _sparse_game(k=2)
    s = game.sparse_transitions
    wide = MarkovGame(
        game.rewards,
        SparseTransitions(np.pad(s.successors, [(0, 0)] * 5 + [(0, 2)]), np.pad(s.probabilities, [(0, 0)] * 5 + [(0, 2)])),
        game.initial_state,
        game.name,
        game.description,
    )
    assert wide.sparse_transitions.num_successors == 4
    assert wide.to_sparse().sparse_transitions.num_successors == 2
    # -0.0 padding compares equal to 0.0 and gives the same digest.
    negative = MarkovGame(
        game.rewards,
        SparseTransitions(s.successors, np.where(s.probabilities == 0, -0.0, s.probabilities)),
        game.initial_state,
        game.name,
        game.description,
    )
    assert negative == game
    assert negative.transition_bytes() == game.transition_bytes()


def test_batch_pads_sparse_games_with_different_successor_counts():
    a, b = _sparse_game(1, k=2), _sparse_game(2, k=3)
    # Padded to three successors, the batch has the shape of the batches above (one program);
    # game a is checked against its dense form, b against its own (sparse) single run.
    batch = run_batch([a, b], "smooth_ce", T=ENGINE_T, etas=[0.2, 0.3])
    for k, (g, eta) in enumerate(((a.to_dense(), 0.2), (b, 0.3))):
        single = run(g, "smooth_ce", T=ENGINE_T, eta=eta)
        np.testing.assert_allclose(batch.value[k], single.value, rtol=0, atol=1e-13)


def test_huge_or_unsigned_wrapping_successors_are_refused(tmp_path):
    data = _sparse_dict(tmp_path)
    data["transition_successors"][0][0][0][0][0][0] = 2**64
    assert (
        _load_error(tmp_path, data)
        == "transition_successors[0][0][0][0][0][0] = 18446744073709551616 is out of range (a state index)"
    )
    succ, prob = _arrays()
    succ = succ.astype(np.uint64)
    succ[0, 0, 1, 1, 0] = np.uint64(2**64 - 1)
    with pytest.raises(
        GameValidationError, match=r"transition_successors\[0, 0, 1, 1, 0\] = 18446744073709551615 is out of range"
    ):
        SparseTransitions(succ, prob)


def test_unknown_key_message_lists_the_sparse_keys(tmp_path):
    data = dict(_sparse_dict(tmp_path), colour="red")
    assert "transition_successors" in _load_error(tmp_path, data)


def test_sparse_batch_too_large_for_int32_indices_is_refused():
    """A batch's runs gather from one flattened ``(S' R)`` vector with int32 indices: a call whose
    ``S' R`` exceeds int32 is refused with a clear error, not silently wrapped (shapes only)."""
    import jax
    import jax.numpy as jnp

    from markovgames.dynamics._transitions import SparseKernel, apply_transition, kernel_step

    succ = jax.ShapeDtypeStruct((1, 3, 2, 1, 50_000), jnp.int32)  # one step
    prob = jax.ShapeDtypeStruct((1, 3, 2, 1, 50_000), jnp.float32)

    def contract(values):
        return jax.eval_shape(lambda s, p, v: apply_transition(kernel_step(SparseKernel(s, p), 0), v, 1), succ, prob, values)

    assert contract(jax.ShapeDtypeStruct((2, 40_000, 50_000), jnp.float32)).shape == (2, 3, 2, 50_000)
    with pytest.raises(ValueError, match=r"50000 sparse runs with 50000 states each .* smaller run_batch group_size"):
        contract(jax.ShapeDtypeStruct((2, 50_000, 50_000), jnp.float32))


# stage_cce by default: its loop takes every one of these paths but the scanned horizon of the
# smooth update, which test_per_step_carry_equals_the_scanned_steps forces (the same lines of the
# package are covered without smooth_ce's case, whose four loops take about 9 s to compile).
# Last in this file: it empties the cache of compiled loops, which the tests above share.
@pytest.mark.parametrize("algorithm", beyond_default_in_full(["smooth_ce", "stage_cce"], {"stage_cce"}))
def test_large_game_code_paths_equal_the_small_game_ones(algorithm, monkeypatch):
    """The loops large games take (steps scanned, successors in a fori_loop, each step's sparse
    contraction in pieces of states) give the same numbers."""
    from markovgames.dynamics import _engine, _output_metrics, _smooth, _transitions

    game = _sparse_game(seed=4, k=3)
    games = [game, _sparse_game(seed=5, k=3)]
    small = run(game, algorithm, T=ENGINE_T, eta=0.3)
    small_batch = run_batch(games, algorithm, T=ENGINE_T, etas=[0.3, 0.2])
    monkeypatch.setattr(_output_metrics, "_SCAN_STEPS_ABOVE_ENTRIES", 0)
    monkeypatch.setattr(_transitions, "_UNROLL_SUCCESSORS", 1)
    monkeypatch.setattr(_smooth, "_UNROLL_HORIZON", 0)
    # One state's rows take 432 bytes in a single run and 864 in the batch of two. In the full
    # mode the 5 states go in 2 pieces (of 2 and 3 states) and in 3 (of 1, 2 and 2); by default
    # the single run's step is contracted whole and the batch's in 2 pieces (of 2 and 3 states):
    # each piece is a kernel of its own, whose compilation takes seconds here, and a single run's
    # pieces are test_sparse_kernel_contraction_matches_dense's (its first example).
    monkeypatch.setattr(_transitions, "_SPARSE_PIECE_BYTES", 1800 if FULL_TESTS else 2600)
    _engine.compiled_chunk.cache_clear()
    try:
        large = run(game, algorithm, T=ENGINE_T, eta=0.3)
        large_batch = run_batch(games, algorithm, T=ENGINE_T, etas=[0.3, 0.2])
    finally:
        _engine.compiled_chunk.cache_clear()
    for name in ("value", "certified_ce_bound", "certified_cce_bound"):
        np.testing.assert_allclose(getattr(large, name), getattr(small, name), rtol=0, atol=1e-13)
        np.testing.assert_allclose(getattr(large_batch, name), getattr(small_batch, name), rtol=0, atol=1e-13)
        np.testing.assert_allclose(getattr(large_batch, name)[0], getattr(small, name), rtol=0, atol=1e-13)
    for x, y in zip(large.policies, small.policies, strict=True):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-13)
