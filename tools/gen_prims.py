"""Writes src/tapeflow/_core/prims.py: one thin binding per registered op (run_kernel by
name, no validation), as TensorFlow generates its gen_*_ops.py from the op registry.

Run it after adding or renaming an op: `python tools/gen_prims.py` (tests/_core/
test_prims.py fails while the checked-in file differs from what this writes; `--print`
writes the text to standard output instead).
"""
from __future__ import annotations

import keyword
import os
import re
import sys

HEADER = '''"""Primitive bindings: one plain function per registered op, calling `run_kernel` by
name with no validation (inputs positionally or by name, attributes as keywords). Rules,
Variable and the engine's helpers call these instead of the public ops of other families,
so nothing reaches up or sideways at run time.

Generated from the op registry by tools/gen_prims.py, checked in; do not edit by hand.
Example:
    >>> prims.sum(tf.ones([2, 3]), axis=(0,), keepdims=False).numpy()
    array([2., 2., 2.], dtype=float32)
"""
from __future__ import annotations

from .dispatch import run_kernel
'''


def snake_name(op_name: str) -> str:
    """The binding's name: "MatMul" -> "mat_mul", "Conv2DBackpropInput" ->
    "conv2d_backprop_input", "If" -> "if_" (a keyword gets a trailing underscore)."""
    name = re.sub(r"([0-9])D", r"\1d", op_name)
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
    return name + "_" if keyword.iskeyword(name) else name


def _where(site: str) -> str:
    """The module that defines an op, from its registration site ('.../ops/math.py:12')."""
    path = site.rsplit(":", 1)[0].replace(os.sep, "/")
    return path[path.rfind("tapeflow/"):] if "tapeflow/" in path else "?"


def render() -> str:
    """The text of prims.py for the ops registered once tapeflow is imported."""
    from tapeflow._core import registry
    import tapeflow  # noqa: F401  (registers every op)

    parts = [HEADER]
    seen: dict = {}
    for op_name in sorted(registry.OPS):
        op = registry.OPS[op_name]
        name = snake_name(op_name)
        if name in seen:
            raise SystemExit(f"gen_prims: {op_name} and {seen[name]} both map to {name}")
        seen[name] = op_name
        params = ", ".join(list(op.inputs) + ["**attrs"])
        inputs = ", ".join(f'"{k}": {k}' for k in op.inputs)
        signature = f"def {name}({params}):"
        if len(signature) > 100:
            signature = f"def {name}(\n        " + f",\n        ".join(
                list(op.inputs) + ["**attrs"]) + "):"
        call = f'    return run_kernel("{op_name}", {{{inputs}}}, attrs)'
        if len(call) > 100:
            call = (f'    return run_kernel("{op_name}", {{\n        '
                    + ",\n        ".join(f'"{k}": {k}' for k in op.inputs) + "}, attrs)")
        parts.append(f'''

{signature}
    """{op_name} ({_where(op.site)})."""
{call}
''')
    return "".join(parts)


TARGET = os.path.join(os.path.dirname(__file__), "..", "src", "tapeflow", "_core", "prims.py")

if __name__ == "__main__":
    text = render()
    if "--print" in sys.argv[1:]:  # for the test that compares it with the checked-in file
        sys.stdout.write(text)
        sys.exit(0)
    with open(TARGET, "w") as f:
        f.write(text)
    print(f"wrote {os.path.normpath(TARGET)}: {text.count(chr(10) + 'def ')} bindings",
          file=sys.stderr)
