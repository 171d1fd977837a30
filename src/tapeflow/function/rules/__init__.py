"""The rule tables of the graph optimizer (function/optimizer.py), each a PatternMatcher
for the rewrite engine (function/rewrite.py): cleanup (simplification, identities,
constant folding), products, convolutions. No rule names a workload."""
from .cleanup import FOLD, IDENTITIES, SIMPLIFY
from .convolution import CONVOLUTIONS
from .products import PRODUCTS, UPDATES

__all__ = ["CONVOLUTIONS", "FOLD", "IDENTITIES", "PRODUCTS", "SIMPLIFY", "UPDATES"]
