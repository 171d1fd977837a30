"""Rules for normalization, softmax and activation subgraphs, forward and backward (rule
table for function/rewrite.py).

Empty for now: rules land here as they are written (issue #29)."""
from __future__ import annotations

from ..rewrite import PatternMatcher

NORMALIZATION = PatternMatcher([])
