"""Fused kernels compile on their first call in these tests (not in the background), so
every test runs the compiled loops it means to test; tests/function/test_fuse.py tests
background compilation itself."""
import pytest

from tapeflow.function import fuse


@pytest.fixture(autouse=True, scope="session")
def _compile_in_the_foreground():
    fuse.set_background(False)
    yield
    fuse.set_background(True)
