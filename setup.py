"""Compiles the broker's byte-crunching modules with Cython; the rest of the build is in pyproject.toml.

The modules in ``COMPILED`` are ordinary Python, read and tested as such; Cython turns each into a
C extension that runs the same code without the interpreter's per-bytecode dispatch
(``kafka-emu bench replication`` and ``bench wire`` print ``compiled_modules``; docs/benchmarks.md has
the before and after, and why the list stops where it does). Python picks the extension over the
``.py`` beside it; ``KAFKA_EMU_PURE=1`` at run time makes it take the ``.py`` again
(``kafka_emu.compiled``), which is how CI tests both.

Annotations are not used as C types (``annotation_typing``): they are hints for readers and
mypy, and Cython would otherwise make ``float`` a C double and ``list[...]`` an exact-type
check, which the same code uncompiled does not do. ``binding`` keeps functions introspectable
and picklable by name, as plain functions are.

``KAFKA_EMU_COMPILE=0`` installs without compiling. A failed compile (no C compiler, no Python
headers) is a warning, not a failed install: the extensions are optional and the pure modules run.
"""
from __future__ import annotations

import os
import sys

from setuptools import Extension, setup

# Folder of each package in the repository (pyproject's package-dir, for the compiled ones).
PACKAGE_DIRS = {"broker": "kafka_emu.broker", "kafka_emu": "kafka_emu"}

# Where a request's work is loops over bytes and records: batch parsing, the LogValidator's
# record walk, the segment's scans, the wire codecs. Compiled, they take 10-20 % off a replicated
# batch's CPU and raise bench wire's rates 1.05-1.25x. The object plumbing around them (threads,
# purgatory, delayed operations, partitions, replica manager, handlers) stays interpreted:
# CPython 3.11 specialises its attribute lookups per bytecode, and compiled it cost 15 % more CPU
# per request at low rates (docs/benchmarks.md, "Compiled and uncompiled").
COMPILED = [
    "broker/storage/log_segment.py",
    "broker/storage/log_validator.py",
    "broker/storage/record_batch.py",
    "broker/protocol/adapter.py",
    "broker/protocol/codec.py",
    "broker/protocol/fast_fetch.py",
    "broker/protocol/fast_produce.py",
    "broker/protocol/fast_wire.py",
    "kafka_emu/common/varint.py",
]


def _module_name(path: str) -> str:
    folder, *rest = path[: -len(".py")].split("/")
    return ".".join([PACKAGE_DIRS[folder], *rest])


def _extensions() -> list[Extension]:
    if os.environ.get("KAFKA_EMU_COMPILE", "1") == "0":
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:   # a build without isolation, in an environment without Cython
        print("kafka-emu: Cython is not installed, installing uncompiled", file=sys.stderr)
        return []

    extensions = cythonize([Extension(_module_name(path), [path]) for path in COMPILED],
                           nthreads=os.cpu_count() or 1, quiet=True,
                           compiler_directives={"language_level": 3, "annotation_typing": False, "binding": True})
    for extension in extensions:
        extension.optional = True   # set after cythonize, which does not carry it over
    return extensions


if __name__ == "__main__":   # as setuptools runs it; tests import COMPILED (tests/packaging/test_compiled.py)
    setup(ext_modules=_extensions(), options={"build_ext": {"parallel": os.cpu_count() or 1}})
