"""Measure attacks and defenses on held-out text: inversion quality, defense cost and benefit, calibration."""
