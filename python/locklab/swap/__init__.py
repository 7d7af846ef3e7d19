"""The lock swapper's side in Python: its settings as a value (settings), checked as
the library would check them before a program starts (check), and the sites of
--lock-for matched to the program's own symbols and counted after it (sites)."""
