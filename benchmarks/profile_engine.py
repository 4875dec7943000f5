"""Where the engine's time goes: simple, reproducible experiments (diagnostic; reads engine internals).

Run ``python benchmarks/profile_engine.py [--T 100000] [--quick]``. Experiments, on the paper's
game (eta 0.2) unless stated:

1. ``run`` with and without the trajectory, and with different chunk sizes (chunk overhead);
2. the smooth step split into parts: learners only (Q held at 0), learners + the smooth Q update
   (no output-policy metrics), and the full engine step (metrics + trajectory), each scanned
   under ``jit`` the same way the engine does;
3. the operations XLA executes per iteration: the kinds of instructions in the compiled scan body;
4. the tiny per-player contractions ``[X pi_{-i}]`` written with ``einsum`` lower to batched
   ``dot`` instructions, each a separate (unfused) kernel; the experiment swaps, in this process
   only, the engine's ``others_expectation`` (and the transition contraction) for a
   broadcast-multiply-and-sum that XLA fuses, and re-times the engine on the paper game and on the
   medium game of ``bench_engine.py``. Nothing in the library is modified.

This script uses private functions of ``markovgames.dynamics`` and may need updating when they change.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from bench_engine import machine_info, medium_game, paper_game  # noqa: E402
from markovgames.dynamics import _engine as engine  # noqa: E402
from markovgames.dynamics import _output_metrics as output_metrics  # noqa: E402
from markovgames.dynamics import run  # noqa: E402
from markovgames.dynamics._algorithms import get_algorithm  # noqa: E402
from markovgames.dynamics._run import _schedule_xs  # noqa: E402
from markovgames.dynamics._tensor import joint_expectation, joint_product  # noqa: E402
from markovgames.dynamics._value_updates import bellman_target, smooth_q_update  # noqa: E402

ALGORITHMS = ("smooth_ce", "stage_cce", "smooth_cce")
ETA = 0.2


def best_time(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - t0)
    return best


def game_arrays(game):
    return engine.GameArrays(
        jnp.asarray(game.rewards),
        jnp.asarray(game.transitions),
        jnp.asarray(game.initial_state, jnp.int32),
        jnp.asarray(ETA, jnp.float64),
    )


def schedule(alg, game, T):
    return jnp.asarray(_schedule_xs(alg, game.horizon, game.num_players, T, False, np.float64))


def exp_record_and_chunks(game, T, repeats):
    print(f"\n## 1. Trajectory recording and chunk size (run(), paper game, T={T})\n")
    print("| algorithm | record | chunk_size | us/it | it/s |")
    print("|---|---|---:|---:|---:|")
    for name in ALGORITHMS:
        for record in (True, False):
            for chunk in (None, 10_000, 1_000):
                def call():
                    return run(game, name, T=T, eta=ETA, record_trajectory=record, chunk_size=chunk)

                call()
                tm = best_time(call, repeats)
                label = "auto" if chunk is None else str(chunk)
                print(f"| {name} | {record} | {label} | {tm * 1e6 / T:.2f} | {T / tm:,.0f} |", flush=True)


def _partial_smooth_step(alg, game, with_q_update):
    learner = engine.make_learner(alg)
    horizon, num_players, num_states = game.rewards.shape[:3]

    def step(carry, x):
        (t,) = x
        alpha = (horizon + 1.0) / (horizon + t)
        rho = (t - 1.0) / (horizon + t - 1.0)
        pols = tuple(learner.play(carry.learners[i], carry.prediction[i], game.eta, rho) for i in range(num_players))
        q = carry.q
        if with_q_update:
            v_next = jnp.zeros((num_players, num_states), q.dtype)
            qs = [None] * horizon
            for h in range(horizon - 1, -1, -1):
                target = bellman_target(game.rewards[h], game.transitions[h], v_next)
                qs[h] = smooth_q_update(q[h], target, alpha)
                v_next = joint_expectation(qs[h], joint_product([p[h] for p in pols]), num_players)
            q = jnp.stack(qs)
        utils = engine._per_player_utilities(q, pols)
        learners = tuple(learner.observe(carry.learners[i], pols[i], utils[i], rho) for i in range(num_players))
        return carry._replace(learners=learners, prediction=utils, q=q), {"policies": pols}

    return step


def exp_breakdown(games, repeats):
    print("\n## 2. Smooth step broken down (jit + lax.scan, trajectory emitted)\n")
    print("| game | T | algorithm | learners only | + Q update (no metrics) | full engine step (metrics) |")
    print("|---|---:|---|---:|---:|---:|")
    for label, game, T in games:
        _breakdown(label, game, T, repeats)


def _breakdown(label, game, T, repeats):
    ga = game_arrays(game)
    for name in ("smooth_ce", "smooth_cce"):
        alg = get_algorithm(name)
        xs = schedule(alg, game, T)
        cells = []
        for with_q in (False, True):
            fn = jax.jit(
                lambda g, c, x, with_q=with_q: jax.lax.scan(_partial_smooth_step(alg, g, with_q), c, x)
            )
            fn(ga, engine.init_carry(alg, game.shape_key, np.float64), xs)
            tm = best_time(lambda: fn(ga, engine.init_carry(alg, game.shape_key, np.float64), xs), repeats)
            cells.append(tm * 1e6 / T)
        full = engine.compiled_chunk(alg, True, True, False)
        full(ga, engine.init_carry(alg, game.shape_key, np.float64), xs)
        tm = best_time(lambda: full(ga, engine.init_carry(alg, game.shape_key, np.float64), xs), repeats)
        cells.append(tm * 1e6 / T)
        print(
            f"| {label} | {T} | {name} | {cells[0]:.2f} us/it | {cells[1]:.2f} us/it | {cells[2]:.2f} us/it |",
            flush=True,
        )


def exp_hlo(game):
    print("\n## 3. Instructions in the compiled scan body (paper game)\n")
    print("| algorithm | instructions | fusion | dot | copy | conditional | other |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    ga = game_arrays(game)
    for name in ALGORITHMS:
        alg = get_algorithm(name)
        xs = schedule(alg, game, 1000)
        fn = engine.compiled_chunk(alg, True, True, False)
        text = fn.lower(ga, engine.init_carry(alg, game.shape_key, np.float64), xs).compile().as_text()
        comps = re.split(r"\n(?=\S)", text)
        # The while body is the largest non-entry computation that takes the loop's tuple.
        bodies = [c for c in comps if "while" not in c.split("\n", 1)[0] and "arg_tuple" in c.split("\n", 1)[0]]
        body = max(bodies, key=lambda c: c.count("\n"))
        kinds = Counter()
        for line in body.split("\n")[1:]:
            if " = " not in line:
                continue
            # The opcode is the first lower-case word followed by "(" after the result's type.
            m = re.search(r"\s([a-z][\w.-]*)\(", line.split(" = ", 1)[1])
            if m:
                kinds[m.group(1)] += 1
        skip = {"get-tuple-element", "parameter", "constant", "tuple", "bitcast"}
        executed = {k: v for k, v in kinds.items() if k not in skip}
        other = sum(v for k, v in executed.items() if k not in ("fusion", "dot", "copy", "conditional"))
        print(
            f"| {name} | {sum(executed.values())} | {executed.get('fusion', 0)} | {executed.get('dot', 0)} | "
            f"{executed.get('copy', 0)} | {executed.get('conditional', 0)} | {other} |"
        )


def _others_mulsum(q_i, policies, player):
    """``[Q_i pi_{-i}]`` by broadcasting and summing (XLA fuses it; ``einsum`` becomes ``dot``)."""
    n = len(policies)
    x, axes = q_i, []
    for k in range(n):
        if k == player:
            continue
        shape = [1] * n
        shape[k] = policies[k].shape[-1]
        x = x * policies[k].reshape(policies[k].shape[:-1] + tuple(shape))
        axes.append(k - n)
    return jnp.sum(x, axis=tuple(axes))


def _transition_mulsum(p_h, v_next):
    k = v_next.shape[0]
    v = v_next.reshape((k,) + (1,) * (p_h.ndim - 1) + (v_next.shape[1],))
    return jnp.sum(p_h[None] * v, axis=-1)


def _engine_times(games, repeats):
    out = {}
    for label, game, T in games:
        ga = game_arrays(game)
        for name in ALGORITHMS:
            alg = get_algorithm(name)
            xs = schedule(alg, game, T)
            engine.compiled_chunk.cache_clear()
            fn = engine.compiled_chunk(alg, True, True, False)
            res = fn(ga, engine.init_carry(alg, game.shape_key, np.float64), xs)[1]
            res = {k: np.asarray(v) for k, v in res.items() if k != "policies"}
            tm = best_time(lambda: fn(ga, engine.init_carry(alg, game.shape_key, np.float64), xs), repeats)
            out[label, name] = (tm * 1e6 / T, res)
    return out


def exp_dot(games, repeats):
    print("\n## 4. einsum -> dot kernels: the same engine with fused contractions (in this process only)\n")
    saved = (engine.others_expectation, output_metrics.others_expectation, output_metrics.apply_transition)
    try:
        base = _engine_times(games, repeats)
        engine.others_expectation = output_metrics.others_expectation = _others_mulsum
        fused = _engine_times(games, repeats)
        output_metrics.apply_transition = _transition_mulsum
        fused2 = _engine_times(games, repeats)
    finally:
        engine.others_expectation, output_metrics.others_expectation, output_metrics.apply_transition = saved
        engine.compiled_chunk.cache_clear()
    print("| game | algorithm | engine as is | others_expectation fused | + transition fused | max abs diff |")
    print("|---|---|---:|---:|---:|---:|")
    for key in base:
        diff = max(float(np.max(np.abs(base[key][1][k] - fused2[key][1][k]))) for k in base[key][1])
        print(
            f"| {key[0]} | {key[1]} | {base[key][0]:.2f} us/it | {fused[key][0]:.2f} us/it | "
            f"{fused2[key][0]:.2f} us/it | {diff:.1e} |",
            flush=True,
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T", type=int, default=100_000)
    parser.add_argument("--medium-T", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--experiments", nargs="+", type=int, default=[1, 2, 3, 4], choices=[1, 2, 3, 4])
    args = parser.parse_args(argv)
    if args.quick:
        args.T, args.medium_T, args.repeats = 2_000, 50, 1
    info = machine_info()
    print(f"Machine: {info['cpu']}, {info['cores']} cores, JAX {info['jax']}, NumPy {info['numpy']}; {info['date']}")
    print(f"Load average at start: {info['load_average_at_start']}; XLA_FLAGS={info['xla_flags']!r}")
    paper = paper_game()
    games = [("paper", paper, args.T), ("medium", medium_game(), args.medium_T)]
    with jax.enable_x64(True):
        if 1 in args.experiments:
            exp_record_and_chunks(paper, args.T, args.repeats)
        if 2 in args.experiments:
            exp_breakdown(games, args.repeats)
        if 3 in args.experiments:
            exp_hlo(paper)
        if 4 in args.experiments:
            exp_dot(games, args.repeats)


if __name__ == "__main__":
    main()
