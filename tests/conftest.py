"""Test-wide set-up: quiet structured logging (warnings and errors still show)."""
from metrics.logging import configure_logging

configure_logging(level="warning")
