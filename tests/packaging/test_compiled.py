"""The compiled modules (setup.py) and the finder that decides which modules run compiled
(``kafka_emu.compiled``): the install compiles every module it lists, ``KAFKA_EMU_PURE=1`` runs
them all from their ``.py``, and an edited ``.py`` in a source tree wins over its stale extension."""
from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_emu.compiled import PURE_ENV, SourceFinder, pure_requested

ROOT = Path(__file__).resolve().parents[2]


def _setup_module():
    spec = importlib.util.spec_from_file_location("kafka_emu_setup", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)   # not as __main__: defines COMPILED, builds nothing
    return module


def _loaded_compiled(env: dict[str, str], names: list[str]) -> list[str]:
    code = ("import importlib, sys; from kafka_emu.compiled import compiled_modules\n"
            "for n in sys.argv[1:]: importlib.import_module(n)\n"
            "print(' '.join(compiled_modules()))")
    out = subprocess.run([sys.executable, "-c", code, *names], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


@pytest.mark.timeout(90)
@pytest.mark.skipif(os.environ.get("KAFKA_EMU_COMPILE") == "0" or pure_requested(),
                    reason="installed without compiling (KAFKA_EMU_COMPILE=0) or run uncompiled (KAFKA_EMU_PURE=1)")
def test_every_listed_module_runs_compiled_and_pure_runs_none() -> None:
    setup = _setup_module()
    names = [setup._module_name(path) for path in setup.COMPILED]
    env = {k: v for k, v in os.environ.items() if k != PURE_ENV}
    assert _loaded_compiled(env, names) == sorted(names)
    assert _loaded_compiled({**env, PURE_ENV: "1"}, names) == []


@pytest.mark.timeout(10)
def test_edited_source_wins_over_a_stale_extension_in_a_source_tree(tmp_path: Path) -> None:
    folder = tmp_path / "broker"
    folder.mkdir()
    extension = folder / f"hot{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    source = folder / "hot.py"
    source.write_text("X = 1\n")
    extension.write_bytes(b"")   # found, never loaded: find_spec only looks at names
    old = time.time() - 60
    os.utime(source, (old, old))
    finder = SourceFinder(pure=False)
    # the extension is newer: the usual finders are left to load it
    assert finder.find_spec("kafka_emu.broker.hot", [str(folder)]) is None
    os.utime(source, None)
    os.utime(extension, (old, old))
    with pytest.warns(UserWarning, match="newer than its compiled extension"):
        spec = SourceFinder(pure=False).find_spec("kafka_emu.broker.hot", [str(folder)])
    assert spec is not None and spec.origin == str(source)
    # pure: the source, whatever the times; other packages and packages themselves: not ours to find
    assert SourceFinder(pure=True).find_spec("kafka_emu.broker.hot", [str(folder)]).origin == str(source)
    assert SourceFinder(pure=True).find_spec("other.hot", [str(folder)]) is None
    (folder / "sub").mkdir()
    (folder / "sub" / "__init__.py").write_text("")
    assert SourceFinder(pure=True).find_spec("kafka_emu.broker.sub", [str(folder)]) is None


@pytest.mark.timeout(10)
def test_an_installed_extension_is_taken_as_it_is(tmp_path: Path) -> None:
    folder = tmp_path / "lib" / "site-packages" / "kafka_emu" / "broker"
    folder.mkdir(parents=True)
    (folder / f"hot{importlib.machinery.EXTENSION_SUFFIXES[0]}").write_bytes(b"")
    (folder / "hot.py").write_text("X = 1\n")   # written last: newer, as a wheel's files may be
    assert SourceFinder(pure=False).find_spec("kafka_emu.broker.hot", [str(folder)]) is None
