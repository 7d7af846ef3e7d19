"""Sweeps: named grids (presets), the two kinds of sweep behind one interface (kinds:
the benchmark's, bench; real programs', programs with their drivers), where a sweep
is (progress) and what a dry run shows (plan), the runs' database (store), and two
runs compared (compare)."""
