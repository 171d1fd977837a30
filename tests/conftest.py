"""Tests run kernels as users' programs do: fused kernels and numba loops compile in the
background (in the compile worker process), once their NumPy tier has cost more than a
compile is worth (function/fuse.py, COMPILE_AFTER_SECONDS), and load from the disk cache
when a process compiled them before. The tiers give the same bits, so no test's values
depend on which ran. Tests of the compiled loops themselves (tests/function/test_fuse.py,
test_vmath.py, test_conv_fusion.py, tests/_core/test_compile_worker.py) switch to compiling
on the first call, or wait for the background compile, where they need it.
"""
