"""Errors meant for people: printed as one line by the CLI, never as a traceback."""


class UserError(Exception):
    """Bad input from the user: a missing file, a malformed value, an impossible configuration."""
