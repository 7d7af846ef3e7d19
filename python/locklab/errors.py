"""The one error type the `locklab` command turns into a one-line message."""


class LocklabError(Exception):
    """Bad input or an unusable database; str() is the message, without 'locklab: '."""


class Interrupted(KeyboardInterrupt):
    """A signal that stops a sweep as Ctrl-C does (SIGTERM): signum is its number."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
