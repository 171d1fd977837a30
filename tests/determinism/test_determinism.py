"""Same inputs, same bits (API 6.7): reductions (eager and fused), products (small, split
by rows, einsum, traced), convolutions (direct loops and im2col, with their gradients) and
a small CNN's training steps (eager and traced) give identical bits on every call and in
every process, at 1 and at 2 intra-op threads, with numba and without it. Each process
runs tests/determinism/job.py, which checks the calls within it."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _reports(*flags: str, processes: int = 2) -> list:
    """Each process's report, one process after another (on a cold kernel cache the first
    compiles, the second loads what it compiled)."""
    reports = []
    for _ in range(processes):
        out = subprocess.run([sys.executable, "-m", "tests.determinism.job", *flags],
                             cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        reports.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return reports


@pytest.mark.parametrize("flags", [(), ("--no-numba",)], ids=["numba", "no-numba"])
def test_every_call_and_every_process_gives_the_same_bits(flags):
    first, second = _reports(*flags)
    assert set(first) == {f"{case} @ {n}" for case in (
        "fused sums", "eager reductions", "products", "convolutions", "training (eager)",
        "training (traced)") for n in (1, 2)}
    unstable = sorted(k for k, v in first.items() if v == "differs between calls")
    assert not unstable, f"results changed between calls in one process: {unstable}"
    assert first == second, {k: (first[k], second[k]) for k in first if first[k] != second[k]}
    # where threads cannot change the order of any sum, 1 and 2 threads agree too
    for case in ("fused sums", "eager reductions", "convolutions", "training (eager)"):
        assert first[f"{case} @ 1"] == first[f"{case} @ 2"], case
