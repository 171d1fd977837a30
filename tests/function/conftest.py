"""Fixtures shared by the compiler's tests."""
import pytest

from tapeflow.function import optimizer


@pytest.fixture
def optimizer_defaults():
    """The graph optimizer's options as a new process has them, before and after the
    test (a test that switches a pass off leaves the others' graphs unchanged)."""
    optimizer.reset_options()
    yield
    optimizer.reset_options()
