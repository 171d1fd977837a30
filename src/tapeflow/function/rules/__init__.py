"""The rule tables of the graph optimizer (function/optimizer.py), each a PatternMatcher
for the rewrite engine (function/rewrite.py): cleanup (simplification, identities,
constant folding), products, convolutions, loops, normalization. No rule names a workload."""
from .cleanup import FOLD, IDENTITIES, SIMPLIFY
from .convolution import CONVOLUTIONS
from .loops import LOOPS
from .normalization import NORMALIZATION
from .products import PRODUCTS, UPDATES

__all__ = ["CONVOLUTIONS", "FOLD", "IDENTITIES", "LOOPS", "NORMALIZATION", "PRODUCTS",
           "SIMPLIFY", "UPDATES"]
