"""The profiler's side in Python: running a program under liblocklab-prof.so
(session), reading the reports it leaves (reports), naming frames (names) and
finding their source lines (lines), and writing the outputs (formats, trace)."""
