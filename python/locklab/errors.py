"""The one error type the `locklab` command turns into a one-line message."""


class LocklabError(Exception):
    """Bad input or an unusable database; str() is the message, without 'locklab: '."""
