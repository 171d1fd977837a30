"""The model zoo (issue #29): nine TF2 / Keras programs (bench/zoo_models.py), each
written once and run unchanged under tapeflow and under real TensorFlow, timed two ways:

steady   the median wall time of one training step once the program has warmed up
         (trained for WARM_S seconds from building the model; tapeflow: then after its
         background kernel compiles have finished), over
         `--steady-steps` steps, measured from the end of one step to the end of the next
         (for Keras `fit` that includes the loop's own per-batch work)
cold     seconds from building the model (data already in NumPy) to the end of its first
         `--cold-steps` training steps, in a fresh process; tapeflow's with an EMPTY
         kernel cache (TAPEFLOW_CACHE set to a new temporary folder)

Every (model, library) pair runs in its own subprocess: tapeflow under this repository's
Python (`--tapeflow-python`), TensorFlow under `--tf-python` (default /tmp/tfv/bin/python).
With neither --steady-only nor --cold-only one process per pair measures cold first and
then the steady state. Both libraries get the same thread counts (`--threads`, default 1:
OPENBLAS/OMP/MKL/NUMBA_NUM_THREADS and both libraries' intra- and inter-op thread pools),
so that on a shared 2-core machine neither waits for a core held by someone else.

Both are also taken in CPU time (user + system seconds of the process over the same
span, every thread counted), which other processes on a shared machine disturb less.

Printed: progress lines and a table (ratios are tapeflow / TF: below 1 means tapeflow is
faster); written: <out>.json, <out>.md and <out>.png (bar chart of the ratios, lines at
1.0 and 1.5). A model that fails under a library gets its error in its row; the run goes on.

Run: python bench/zoo.py [--models cnn_tutorial,vae] [--steady-only | --cold-only]
                         [--threads 1] [--out bench/results/zoo_2cpu]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import zoo_models  # noqa: E402

LIBRARIES = ("tapeflow", "tf")
WARM_S = 5.0  # seconds of training (from building the model) before the steady state
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS")


# ------------------------------------------------------------------ the child process
def _import(library: str, threads: int) -> Any:
    """tapeflow or TensorFlow, its thread pools sized to `threads`."""
    if library == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as lib
    else:
        sys.path.insert(0, os.path.join(HERE, "..", "src"))
        import tapeflow as lib
    lib.config.threading.set_intra_op_parallelism_threads(threads)
    lib.config.threading.set_inter_op_parallelism_threads(threads)
    return lib


def _wait_compiled(library: str) -> None:
    """Wait for tapeflow's background kernel compiles (TensorFlow has none)."""
    if library != "tapeflow":
        return
    from tapeflow._core import jit  # noqa: E402 (tapeflow is imported only in its child)
    jit.wait_compiled()


def _cpu_s() -> float:
    """CPU seconds this process has used so far, all its threads (a compile thread too)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child(library: str, name: str, mode: str, cold_steps: int, steady_steps: int,
          threads: int) -> dict:
    """Measure model `name` under `library` in this process; the figures as a dict."""
    lib = _import(library, threads)
    zoo_models.bind(lib)
    data = zoo_models.make_data(name, max(cold_steps, steady_steps, 8))
    result: dict = {"library": library, "model": name, "version": lib.__version__}
    if mode in ("cold", "both"):
        start, cpu = time.perf_counter(), _cpu_s()
        trainer = zoo_models.build(name, data)
        result["cold_loss"] = trainer.train(cold_steps)
        result["cold_s"] = time.perf_counter() - start
        result["cold_cpu_s"] = _cpu_s() - cpu
    else:
        start = time.perf_counter()
        trainer = zoo_models.build(name, data)
        trainer.train(8)
    if mode in ("steady", "both"):
        # the steady state of a program that runs on: at least WARM_S of training first
        # (tapeflow compiles a kernel only once its NumPy blocks have cost enough)
        while time.perf_counter() - start < WARM_S:
            trainer.train(8)
        waited = time.perf_counter()
        _wait_compiled(library)
        result["compile_wait_s"] = time.perf_counter() - waited
        trainer.train(5)  # kernels chosen on later calls (threaded variants) compile now
        _wait_compiled(library)
        trainer.train(3)
        trainer.step_end.clear()
        cpu = _cpu_s()
        result["steady_loss"] = trainer.train(steady_steps)
        result["steady_cpu_ms"] = 1e3 * (_cpu_s() - cpu) / steady_steps
        steps = np.diff(np.asarray(trainer.step_end))  # the first step's setup is left out
        result["steady_ms"] = 1e3 * float(np.median(steps))
        result["steady_mean_ms"] = 1e3 * float(np.mean(steps))
        result["steady_steps"] = int(steps.size)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


# ------------------------------------------------------------------ the parent
def _error_essence(stderr: str) -> str:
    """The last line of a traceback (the exception) and the frame above it."""
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    if not lines:
        return "no output"
    frames = [ln.strip() for ln in lines if ln.strip().startswith("File ")]
    where = frames[-1] if frames else ""
    return (lines[-1] + (f" (at {where})" if where else ""))[:400]


def run_pair(args, name: str, library: str, mode: str) -> dict:
    """One subprocess measuring `name` under `library`; its figures, or its error."""
    python = args.tapeflow_python if library == "tapeflow" else args.tf_python
    env = dict(os.environ, PYTHONHASHSEED="0")
    env.update({v: str(args.threads) for v in THREAD_VARIABLES})
    cache = tempfile.mkdtemp(prefix="zoo-cache-")
    env["TAPEFLOW_CACHE"] = cache  # empty: the cold run compiles every kernel
    command = [python, os.path.abspath(__file__), "--child", library, "--models", name,
               "--mode", mode, "--cold-steps", str(args.cold_steps),
               "--steady-steps", str(args.steady_steps), "--threads", str(args.threads)]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout} s"}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    wall = time.perf_counter() - start
    for line in reversed(done.stdout.strip().splitlines()):
        if line.startswith("{"):
            return dict(json.loads(line), process_s=wall)
    return {"error": _error_essence(done.stderr), "returncode": done.returncode}


def median_of(runs: list) -> dict:
    """One (model, library)'s figures over its rounds: the median of each number over
    the rounds that succeeded; the first error when none did."""
    good = [r for r in runs if "error" not in r]
    if not good:
        return runs[0]
    out = dict(good[0], rounds=len(good))
    for key, value in good[0].items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = float(np.median([r[key] for r in good if key in r]))
    return out


def _ratio(a, b):
    return a / b if a is not None and b else None


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def rows_of(results: dict) -> list:
    """One row per model: the two libraries' figures and their ratios (tapeflow / TF)."""
    rows = []
    for name, pair in results.items():
        tp, tf_ = pair.get("tapeflow", {}), pair.get("tf", {})
        errors = "; ".join(f"{lib}: {r['error']}" for lib, r in pair.items() if "error" in r)
        rows.append({
            "model": name, "title": zoo_models.MODELS[name][2],
            "tapeflow_ms": tp.get("steady_ms"), "tf_ms": tf_.get("steady_ms"),
            "steady_ratio": _ratio(tp.get("steady_ms"), tf_.get("steady_ms")),
            "tapeflow_cold_s": tp.get("cold_s"), "tf_cold_s": tf_.get("cold_s"),
            "cold_ratio": _ratio(tp.get("cold_s"), tf_.get("cold_s")),
            "tapeflow_cpu_ms": tp.get("steady_cpu_ms"), "tf_cpu_ms": tf_.get("steady_cpu_ms"),
            "steady_cpu_ratio": _ratio(tp.get("steady_cpu_ms"), tf_.get("steady_cpu_ms")),
            "tapeflow_cold_cpu_s": tp.get("cold_cpu_s"), "tf_cold_cpu_s": tf_.get("cold_cpu_s"),
            "cold_cpu_ratio": _ratio(tp.get("cold_cpu_s"), tf_.get("cold_cpu_s")),
            "error": errors or None})
    return rows


HEADER = ("model", "tapeflow ms", "TF ms", "ratio", "cold s tapeflow", "cold s TF", "ratio")


def table_lines(rows: list) -> list:
    cells = [[r["model"], _fmt(r["tapeflow_ms"], ".2f"), _fmt(r["tf_ms"], ".2f"),
              _fmt(r["steady_ratio"], ".2f"), _fmt(r["tapeflow_cold_s"], ".2f"),
              _fmt(r["tf_cold_s"], ".2f"), _fmt(r["cold_ratio"], ".2f")] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(HEADER)]
    out = ["  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in
                     enumerate(zip(HEADER, widths)))]
    for c, r in zip(cells, rows):
        out.append("  ".join(v.rjust(w) if i else v.ljust(w)
                             for i, (v, w) in enumerate(zip(c, widths))))
        if r["error"]:
            out.append(f"    FAILED {r['error']}")
    return out


def markdown(rows: list, meta: dict) -> str:
    lines = ["# Model zoo: tapeflow against TensorFlow " + meta["tf_version"], "",
             f"Run {meta['date']} on {meta['machine']}; {meta['command']}"
             + (f"; tapeflow at {meta['tapeflow_commit']}" if "tapeflow_commit" in meta
                else ""), "",
             "Ratios are tapeflow / TensorFlow (below 1: tapeflow faster). Steady: median ms "
             f"per training step over {meta['steady_steps']} steps after warm-up (tapeflow: "
             "after its kernels compiled). Cold: seconds from building the model to the end "
             f"of its first {meta['cold_steps']} steps in a fresh process, tapeflow with an "
             "empty kernel cache. Each figure is the median over "
             f"{meta.get('rounds', 1)} round(s), the rounds interleaved (every model and "
             "library once per round).", "",
             "| model | tapeflow ms | TF ms | ratio | cold s tapeflow | cold s TF | ratio |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['model']}: {r['title']} | {_fmt(r['tapeflow_ms'], '.2f')} | "
                     f"{_fmt(r['tf_ms'], '.2f')} | {_fmt(r['steady_ratio'], '.2f')} | "
                     f"{_fmt(r['tapeflow_cold_s'], '.2f')} | {_fmt(r['tf_cold_s'], '.2f')} | "
                     f"{_fmt(r['cold_ratio'], '.2f')} |")
    lines += ["", "The same runs in CPU time (user + system seconds of the process, all its "
              "threads, tapeflow's compile thread included): less disturbed by other "
              "processes on the machine than wall time, but blind to time spent waiting.", "",
              "| model | tapeflow CPU ms/step | TF CPU ms/step | ratio | cold CPU s tapeflow "
              "| cold CPU s TF | ratio |", "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['model']} | {_fmt(r.get('tapeflow_cpu_ms'), '.2f')} | "
                     f"{_fmt(r.get('tf_cpu_ms'), '.2f')} | "
                     f"{_fmt(r.get('steady_cpu_ratio'), '.2f')} | "
                     f"{_fmt(r.get('tapeflow_cold_cpu_s'), '.2f')} | "
                     f"{_fmt(r.get('tf_cold_cpu_s'), '.2f')} | "
                     f"{_fmt(r.get('cold_cpu_ratio'), '.2f')} |")
    failed = [r for r in rows if r["error"]]
    if failed:
        lines += ["", "Failures:", ""] + [f"- {r['model']}: {r['error']}" for r in failed]
    lines += ["", "Conditions: " + meta["conditions"], ""]
    return "\n".join(lines)


def chart(rows: list, path: str, meta: dict) -> bool:
    """A horizontal bar chart of both ratios per model; False when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    names = [r["model"] for r in rows]
    y = np.arange(len(rows))
    found = [r[k] for r in rows for k in ("steady_ratio", "cold_ratio") if r[k]]
    low, high = min(found + [0.5]) / 1.4, max(found + [2.0]) * 1.4
    fig, ax = plt.subplots(figsize=(9, 0.6 * len(rows) + 1.8))
    # bars grow from 1.0 (parity) towards each ratio, so left = tapeflow faster
    for offset, key, label, color in ((-0.2, "steady_ratio", "steady step", "#4477aa"),
                                      (0.2, "cold_ratio", "first steps, cold cache",
                                       "#ee7733")):
        for i, r in enumerate(rows):
            value = r[key]
            if value is None:
                ax.text(1.0, i + offset, " failed / not run", va="center", fontsize=8)
                continue
            ax.barh(i + offset, value - 1.0, left=1.0, height=0.38, color=color,
                    label=label if i == next(j for j, q in enumerate(rows)
                                             if q[key] is not None) else None)
            ax.text(value * (1.03 if value >= 1 else 1 / 1.03), i + offset, f"{value:.2f}",
                    va="center", ha="left" if value >= 1 else "right", fontsize=8,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})
    ax.axvline(1.0, color="black", linewidth=1.2)
    ax.axvline(1.5, color="red", linewidth=1, linestyle="--")
    ax.set_xscale("log")
    ax.set_xlim(low, high)
    ticks = [t for t in (0.1, 0.25, 0.5, 1.0, 1.5, 2, 3, 5, 10, 20, 50) if low <= t <= high]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_yticks(y, names)
    ax.set_ylim(len(rows) - 0.4, -0.9)
    ax.text(1.0, -0.75, " parity", fontsize=8)
    ax.text(1.5, -0.75, " 1.5x (cold target)", fontsize=8, color="red")
    ax.set_xlabel("time under tapeflow / time under TensorFlow "
                  "(log scale; left of 1 = tapeflow faster)")
    ax.set_title(f"Model zoo, tapeflow / TF {meta['tf_version']} "
                 f"({meta['threads']} thread{'s' if meta['threads'] > 1 else ''} each)")
    fig.legend(loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def redraw(path: str) -> None:
    """The .md and the chart again from a results .json (no measuring)."""
    with open(path) as f:
        saved = json.load(f)
    with open(os.path.splitext(path)[0] + ".md", "w") as f:
        f.write(markdown(saved["rows"], saved["meta"]))
    chart(saved["rows"], os.path.splitext(path)[0] + ".png", saved["meta"])


def _commit() -> str:
    """The checkout's HEAD, with '+changes' when tracked files differ from it."""
    try:
        head = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", HERE, "diff", "--quiet", "HEAD", "--", "../src"],
                               capture_output=True).returncode
        return head + ("+changes" if dirty else "") if head else "?"
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(zoo_models.MODELS),
                        help="comma-separated subset of: " + ", ".join(zoo_models.MODELS))
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--steady-only", action="store_true")
    group.add_argument("--cold-only", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure every pair this many times; report the medians")
    parser.add_argument("--cold-steps", type=int, default=100)
    parser.add_argument("--steady-steps", type=int, default=30)
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds one (model, library) process may take")
    parser.add_argument("--tf-python", default="/tmp/tfv/bin/python")
    parser.add_argument("--tapeflow-python", default=sys.executable)
    parser.add_argument("--out", default=os.path.join(HERE, "results", "zoo_2cpu"),
                        help="path of the results without extension ('' writes none)")
    parser.add_argument("--child", choices=LIBRARIES, help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=("cold", "steady", "both"), help=argparse.SUPPRESS)
    parser.add_argument("--redraw", metavar="JSON",
                        help="only rewrite the .md and the chart of a results .json")
    args = parser.parse_args()
    if args.redraw:
        redraw(args.redraw)
        return
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in zoo_models.MODELS]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; known: {list(zoo_models.MODELS)}")
    if args.child:
        print(json.dumps(child(args.child, names[0], args.mode, args.cold_steps,
                               args.steady_steps, args.threads)))
        return
    mode = "steady" if args.steady_only else "cold" if args.cold_only else "both"
    load_before = os.getloadavg()
    started_at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    started = time.perf_counter()
    rounds: dict = {name: {library: [] for library in LIBRARIES} for name in names}
    for round_ in range(args.rounds):
        for name in names:  # rounds interleave, so a busy spell spreads over the models
            for library in LIBRARIES:
                print(f"[{time.perf_counter() - started:6.1f} s] round {round_ + 1}/"
                      f"{args.rounds}: {name} under {library} ({mode}) ...", flush=True)
                r = run_pair(args, name, library, mode)
                rounds[name][library].append(r)
                if "error" in r:
                    print(f"    failed: {r['error']}", flush=True)
                else:
                    print(f"    steady {_fmt(r.get('steady_ms'), '.2f')} ms/step "
                          f"(CPU {_fmt(r.get('steady_cpu_ms'), '.2f')} ms), cold "
                          f"{_fmt(r.get('cold_s'), '.2f')} s (CPU "
                          f"{_fmt(r.get('cold_cpu_s'), '.2f')} s), peak RSS "
                          f"{r['peak_rss_mb']:.0f} MB, process {r['process_s']:.1f} s",
                          flush=True)
    results = {name: {lib: median_of(runs) for lib, runs in pair.items()}
               for name, pair in rounds.items()}
    rows = rows_of(results)
    tf_version = next((r["version"] for pair in results.values() for lib, r in pair.items()
                       if lib == "tf" and "version" in r), "?")
    meta = {
        "date": started_at + " to "
        + datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared, noisy)",
        "command": "python bench/zoo.py " + " ".join(sys.argv[1:]),
        "tf_version": tf_version, "threads": args.threads, "mode": mode,
        "rounds": args.rounds, "tapeflow_commit": _commit(),
        "cold_steps": args.cold_steps, "steady_steps": args.steady_steps,
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "total_s": time.perf_counter() - started,
        "conditions": (f"{', '.join(THREAD_VARIABLES)} = {args.threads} and intra-/inter-op "
                       f"threads = {args.threads} for both libraries; one process per "
                       "(model, library); a machine shared with other engineers running "
                       "tests (1-minute load average "
                       f"{load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after on "
                       f"{os.cpu_count()} cores), so single figures can be off by tens of "
                       "percent.")}
    print()
    print("\n".join(table_lines(rows)))
    print(f"\n(ratios tapeflow / TF) {meta['conditions']} Total {meta['total_s']:.0f} s.")
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out + ".json", "w") as f:
            json.dump({"meta": meta, "rows": rows, "medians": results, "runs": rounds}, f,
                      indent=1)
        with open(args.out + ".md", "w") as f:
            f.write(markdown(rows, meta))
        drew = chart(rows, args.out + ".png", meta)
        print(f"wrote {args.out}.json, .md" + (", .png" if drew else
                                               " (no .png: matplotlib missing)"))


if __name__ == "__main__":
    main()
