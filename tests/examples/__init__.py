"""Tests of the runnable examples under examples/."""
