"""NumPy kernels, one module per op family, registered for backend "numpy"."""
import importlib
import warnings

# NumPy reports floating-point events (log(0), 1/0, sqrt(-1)) as RuntimeWarnings attributed
# to the calling frame, a kernel here. TensorFlow returns inf/nan silently, and so do these
# kernels; a filter by module costs nothing per call (np.errstate costs ~0.8 us a call).
# Users' own NumPy code keeps its warnings.
def silence_kernel_warnings() -> None:
    """Install the filter (done at import; pytest and `catch_warnings` replace filters)."""
    warnings.filterwarnings("ignore", category=RuntimeWarning,
                            module=r"tapeflow\.backends\.numpy")


silence_kernel_warnings()

FAMILIES = ("math", "reduction", "array", "indexing", "creation", "linalg", "nn", "conv",
            "random", "state", "control_flow")

for _family in FAMILIES:
    try:
        importlib.import_module(f"{__name__}.{_family}")
    except ModuleNotFoundError as _e:  # a family not written yet
        if _e.name != f"{__name__}.{_family}":
            raise
