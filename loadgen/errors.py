"""Errors the load and stress commands turn into one clean line and a non-zero exit code.

Users of ``kafka-emu load`` hit three predictable failures (a bad spec, no Java, an unreachable
cluster); a Python traceback for any of them hides the one fact they need, so these carry a
short message and the exit code the CLI should return.
"""
from __future__ import annotations


class LoadgenError(Exception):
    """A failure with a one-line explanation for the user; ``exit_code`` is what the CLI returns."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SpecError(LoadgenError):
    """The workload spec is invalid; the message names the offending field path."""

    exit_code = 2


class UsageError(LoadgenError):
    """A command-line option is malformed."""

    exit_code = 2


class JavaMissingError(LoadgenError):
    exit_code = 3


class ClusterUnreachableError(LoadgenError):
    exit_code = 4
