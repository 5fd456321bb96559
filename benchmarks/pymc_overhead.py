"""PyMC models at Numba speed: what ``Target.from_pymc``'s wrapper costs, and what PyTensor's
compiled density costs against the same density written by hand.

For each bundled posterior (``wb.posteriors``), times one gradient three ways, each in a
compiled loop (the best of three repetitions):

- ``raw_us``: PyTensor's compiled function called directly (it returns a fresh gradient);
- ``wrapped_us``: the target's ``logp_grad`` called as the kernels call it (a first-class
  function of fixed signature that copies the gradient into ``grad_out``);
- ``numba_us``: the hand-written Numba target of the same posterior.

``overhead`` = wrapped / raw (goal <= 1.2); ``vs_hand`` = wrapped / hand-written. Then NUTS on
both forms of eight schools (non-centred): ESS per second, the number a user feels.
Compile times are reported apart (``compile_s``: PyTensor's compile of the model, cached on
disk by PyTensor and Numba after the first time).

    python benchmarks/pymc_overhead.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import numba

import workbench as wb
from workbench.mcmc.timing import seconds_per_gradient


def _raw_loop(jitted, n_data):
    """A compiled loop calling PyTensor's function directly, with the target's data."""
    args = "".join(f", data[{i}]" for i in range(n_data))
    source = (
        "def loop(x, data, n):\n"
        "    total = 0.0\n"
        "    for _ in range(n):\n"
        f"        out = jitted(x{args})\n"
        "        total += out[0][()] + out[1][0]\n"
        "    return total\n"
    )
    namespace = {"jitted": jitted}
    exec(source, namespace)  # noqa: S102 - our own source
    return numba.njit(namespace["loop"])


def seconds_per_raw_call(target, min_seconds=0.2):
    jitted = target.logp_grad.py_func.__globals__["jitted"]
    loop = _raw_loop(jitted, len(target.data))
    x = target.initial_point.copy()
    loop(x, target.data, 1)
    n = 16
    while True:
        start = time.perf_counter()
        loop(x, target.data, n)
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            break
        n *= 4
    best = elapsed
    for _ in range(2):
        start = time.perf_counter()
        loop(x, target.data, n)
        best = min(best, time.perf_counter() - start)
    return best / n


def overhead_rows(min_seconds):
    rows = []
    for name in wb.posteriors.available():
        hand = wb.posteriors.load(name)
        start = time.perf_counter()
        model = wb.posteriors.load(name, backend="pymc")
        compile_s = time.perf_counter() - start
        raw = seconds_per_raw_call(model, min_seconds)
        wrapped = seconds_per_gradient(model, min_seconds=min_seconds)
        by_hand = seconds_per_gradient(hand, min_seconds=min_seconds)
        rows.append({"posterior": name, "d": model.dim, "compile_s": compile_s, "raw_us": 1e6 * raw,
                     "wrapped_us": 1e6 * wrapped, "numba_us": 1e6 * by_hand,
                     "overhead": wrapped / raw, "vs_hand": wrapped / by_hand})
    return rows


def nuts_rows(draws, seed):
    rows = []
    for backend in ("numba", "pymc"):
        target = wb.posteriors.load("eight_schools_noncentered", backend=backend)
        res = wb.methods.NUTS(chains=4, draws=draws).run(target, seed=seed)
        row = wb.metrics.evaluate(res, target)
        rows.append({"backend": backend, "grads": res.cost.grad_evals, "wall_s": res.cost.wall_seconds,
                     "ess_bulk_min": row["ess_bulk_min"], "ess_per_s": row["ess_per_second"]})
    return rows


def print_table(rows):
    columns = list(rows[0])
    print("  ".join(f"{c:>14}" if i else f"{c:<26}" for i, c in enumerate(columns)))
    for row in rows:
        cells = []
        for i, c in enumerate(columns):
            v = row[c]
            text = f"{v:.3g}" if isinstance(v, float) else str(v)
            cells.append(f"{text:>14}" if i else f"{text:<26}")
        print("  ".join(cells))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timings and runs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print("One gradient, in a compiled loop (us); overhead = wrapped / raw (goal <= 1.2)")
    print_table(overhead_rows(0.02 if args.quick else 0.2))
    print("\nNUTS, 4 chains, on eight schools (non-centred) by hand and from PyMC")
    print_table(nuts_rows(1000 if args.quick else 5000, args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
