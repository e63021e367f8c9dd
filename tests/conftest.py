"""Test-wide set-up: quiet structured logging (warnings and errors still show)."""
from kafka_emu.logsetup import configure_logging

configure_logging(level="warning")
