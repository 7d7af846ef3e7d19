"""The `locklab` command (main): a module per command, each adding its parser and
running it (list, sweep, report, compare, profile, run, advise; bench, floor and moncost are
locklab-bench's own, passed through), and the plumbing they share (parser, options)."""
