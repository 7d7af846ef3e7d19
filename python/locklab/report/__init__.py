"""A run's report: index.html and its charts and data (index), the verdict (verdict),
the sections of program and rwlock runs (programs, rwlocks), the targets' rows
(checks), and the plumbing every table and figure is drawn with (render)."""
