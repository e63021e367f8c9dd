"""Which of kafka-emu's modules run compiled, and which ``.py`` wins over its compiled extension.

The install compiles the broker's byte-crunching modules with Cython (``setup.py`` lists them
and says why those); each compiled module lies as an extension beside its ``.py``, and Python's path finder
would always take the extension. ``kafka_emu`` puts :class:`SourceFinder` first on
``sys.meta_path`` before any of its submodules is imported; it hands a module to the finders
after it (so to its extension) except when

- ``KAFKA_EMU_PURE=1`` is set: every module is loaded from its ``.py``, the same code uncompiled
  (CI's second test run, a debugger or profiler that wants Python frames, measuring what
  compiling gives);
- the ``.py`` is newer than its extension in a source tree (an editable install whose module was
  edited after the build): the edit runs, uncompiled, with a warning naming the module, rather
  than the stale extension running silently. An installed wheel's files are never edited, so
  under ``site-packages`` (``dist-packages``) the extension is taken as it is.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import re
import sys
import warnings
from importlib.machinery import ExtensionFileLoader, FileFinder, ModuleSpec, SourceFileLoader
from types import ModuleType
from typing import Sequence

PURE_ENV = "KAFKA_EMU_PURE"
_SOURCES = (SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES)
_EXTENSIONS = (ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES)
_INSTALLED = re.compile(r"[/\\](site|dist)-packages[/\\]")


class SourceFinder(importlib.abc.MetaPathFinder):
    """Returns the ``.py`` spec of a ``kafka_emu.*`` module when that is the one to run (see the
    module docstring), else None so that the usual finders load it. A name not found among its
    package's ``.py`` files (a subpackage mapped to another folder by an editable install) is
    always left to them."""

    def __init__(self, pure: bool) -> None:
        self.pure = pure
        # Per package folder: its .py finder and its extension finder (each lists the folder once).
        # No lock: threads importing at once may each build a folder's pair; the last one stays.
        self._finders: dict[str, tuple[FileFinder, FileFinder]] = {}

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if not fullname.startswith("kafka_emu.") or path is None:
            return None
        for folder in path:
            finders = self._finders.get(folder)
            if finders is None:
                finders = self._finders[folder] = (FileFinder(folder, _SOURCES), FileFinder(folder, _EXTENSIONS))
            source = finders[0].find_spec(fullname, target)
            if source is None or source.origin is None or source.submodule_search_locations is not None:
                continue
            if self.pure:
                return source
            extension = finders[1].find_spec(fullname, target)
            if extension is None or extension.origin is None or _INSTALLED.search(extension.origin):
                return None
            if os.stat(source.origin).st_mtime > os.stat(extension.origin).st_mtime:
                warnings.warn(f"{source.origin} is newer than its compiled extension: running it uncompiled "
                              f"(pip install -e . compiles it again)", stacklevel=2)
                return source
            return None
        return None


def pure_requested() -> bool:
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def install_source_finder() -> None:
    if not any(isinstance(f, SourceFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, SourceFinder(pure_requested()))


def compiled_modules() -> list[str]:
    """The ``kafka_emu`` modules imported so far that run as compiled extensions."""
    return sorted(name for name, module in list(sys.modules.items())
                  if name.startswith("kafka_emu.") and isinstance(getattr(module, "__loader__", None),
                                                                  ExtensionFileLoader))
