"""Rules for the graphs of loops and their gradients (rule table for function/rewrite.py).

Empty for now: rules land here as they are written (issue #29)."""
from __future__ import annotations

from ..rewrite import PatternMatcher

LOOPS = PatternMatcher([])
