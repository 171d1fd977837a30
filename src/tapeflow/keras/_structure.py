"""The nested structures Keras's data arrives in (x, y and sample weights: arrays, or
lists, tuples and dicts of them), walked the same way by `fit` and by its distributed
path."""
from __future__ import annotations


def map_leaves(fn, structure):
    """`structure` with `fn` applied to each leaf (None included), its nesting kept."""
    if isinstance(structure, (list, tuple)):
        return type(structure)(map_leaves(fn, s) for s in structure)
    if isinstance(structure, dict):
        return {k: map_leaves(fn, v) for k, v in structure.items()}
    return fn(structure)


def leaves(structure) -> list:
    """The leaves of `structure` in a fixed order (dicts by sorted key), Nones left out."""
    if isinstance(structure, (list, tuple)):
        return [leaf for s in structure for leaf in leaves(s)]
    if isinstance(structure, dict):
        return [leaf for k in sorted(structure) for leaf in leaves(structure[k])]
    return [] if structure is None else [structure]
