"""Dependencies point one way: an import-direction test over the project's source files.

Each rule below states which packages a package may (or may not) import; docs/architecture.md
describes them. The graph is read from the sources with ``ast`` (nothing is imported, so a rule
also holds for code a test never runs): every ``import`` and ``from ... import`` anywhere in a
module counts, inside functions and under ``if TYPE_CHECKING:`` too, since a type-only import of
a module above is still a dependency on it (such a type is a small ``Protocol`` declared beside
its user instead, as ``coordinator/coordinator_log.py`` does). Relative imports are resolved,
and ``from package import name`` counts as an import of ``package.name`` when that is a module.
The source folders are those pyproject.toml maps under ``kafka_emu`` (``package-dir``).
"""
from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "kafka_emu"


@dataclass(frozen=True)
class Import:
    importer: str     # the importing module
    imported: str     # the imported module (or package)
    line: int
    statement: str    # as written in the source

    def __str__(self) -> str:
        return f"{self.importer} (line {self.line}: {self.statement})"


def _module_files() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package's ``__init__``), for every package pyproject lists."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    package_dir: dict[str, str] = setuptools["package-dir"]
    modules: dict[str, tuple[Path, bool]] = {}
    for package in setuptools["packages"]:
        base = max((p for p in package_dir if package == p or package.startswith(p + ".")), key=len)
        folder = ROOT / package_dir[base] / Path(*package[len(base):].split(".")[1:])
        for path in sorted(folder.glob("*.py")):
            is_init = path.stem == "__init__"
            modules[package if is_init else f"{package}.{path.stem}"] = (path, is_init)
    return modules


def imports_of(module: str, source: str, is_package: bool, modules: Iterable[str]) -> list[Import]:
    """The project modules ``module`` imports (see the module docstring), in source order."""
    known = set(modules)
    package = module if is_package else module.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                       for alias in node.names]
        else:
            continue
        statement = ast.unparse(node)
        found += [Import(module, target, node.lineno, statement) for target in dict.fromkeys(targets)
                  if target == PROJECT or target.startswith(PROJECT + ".")]
    return sorted(found, key=lambda i: i.line)


@lru_cache(maxsize=None)
def graph() -> tuple[Import, ...]:
    modules = _module_files()
    return tuple(i for name, (path, is_init) in modules.items()
                 for i in imports_of(name, path.read_text(encoding="utf-8"), is_init, modules))


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _violations(importers: str | tuple[str, ...], *, allowed: tuple[str, ...] | None = None,
                forbidden: tuple[str, ...] = ()) -> list[str]:
    """Imports by modules under ``importers`` of a project module outside themselves and
    ``allowed`` (when given), or under ``forbidden``."""
    importers = (importers,) if isinstance(importers, str) else importers
    out = []
    for i in graph():
        own = next((p for p in importers if _under(i.importer, p)), None)
        if own is None or _under(i.imported, own):
            continue
        if allowed is not None and not any(_under(i.imported, p) for p in allowed):
            out.append(f"{i} imports {i.imported}")
        elif any(_under(i.imported, p) for p in forbidden):
            out.append(f"{i} imports {i.imported}")
    return out


def _check(rule: str, violations: list[str]) -> None:
    if violations:
        pytest.fail(f"{rule}, but:\n  " + "\n  ".join(violations), pytrace=False)


COMMON = "kafka_emu.common"
LOGSETUP = "kafka_emu.logsetup"
TIMER = "kafka_emu.timer"
COORDINATOR = "kafka_emu.coordinator"
BROKER = "kafka_emu.broker"
METRICS = "kafka_emu.metrics"
ABOVE_BROKER = ("kafka_emu.loadgen", "kafka_emu.bench")
STORAGE, PROTOCOL = f"{BROKER}.storage", f"{BROKER}.protocol"
NETWORK, SERVER = f"{BROKER}.network", f"{BROKER}.server"
APIS, CLUSTER = f"{BROKER}.apis", f"{BROKER}.cluster"
REQUEST_CHANNEL = f"{NETWORK}.request_channel"


# ---- the reader itself ----------------------------------------------------------------------

def test_the_reader_sees_every_kind_of_import() -> None:
    """Relative imports, ``from package import module``, function-local and type-only imports,
    on a made-up module; and the real graph holds an edge every broker has."""
    source = (
        "from __future__ import annotations\n"
        "import os\n"
        "import kafka_emu.timer.time\n"
        "from typing import TYPE_CHECKING\n"
        "from . import sibling\n"
        "from ..server.config import KafkaConfig\n"
        "from kafka_emu.broker import apis\n"
        "if TYPE_CHECKING:\n"
        "    from kafka_emu.broker.cluster.control import ClusterControl\n"
        "def f():\n"
        "    from kafka_emu.broker.apis.fetch import replica_id_of\n"
    )
    modules = ["kafka_emu.broker.network.sibling", "kafka_emu.broker.server.config", "kafka_emu.broker.apis",
               "kafka_emu.broker.apis.fetch", "kafka_emu.broker.cluster.control", "kafka_emu.timer.time"]
    found = [(i.imported, i.line) for i in imports_of("kafka_emu.broker.network.x", source, False, modules)]
    assert found == [("kafka_emu.timer.time", 3), ("kafka_emu.broker.network.sibling", 5),
                     ("kafka_emu.broker.server.config", 6), ("kafka_emu.broker.apis", 7),
                     ("kafka_emu.broker.cluster.control", 9), ("kafka_emu.broker.apis.fetch", 11)]
    package = [(i.imported, i.line) for i in imports_of("kafka_emu.broker.network", "from . import sibling\n",
                                                        True, modules)]
    assert package == [("kafka_emu.broker.network.sibling", 1)]
    assert any(i.importer == f"{SERVER}.kafka_server" and i.imported == f"{NETWORK}.socket_server"
               for i in graph())


# ---- leaves ---------------------------------------------------------------------------------

def test_common_imports_nothing_of_the_project() -> None:
    """``kafka_emu.common`` is the vocabulary every package shares (Kafka's clients ``common``)."""
    _check("kafka_emu.common imports nothing of the project", _violations(COMMON, allowed=()))


def test_logsetup_imports_nothing_of_the_project() -> None:
    _check("kafka_emu.logsetup imports nothing of the project", _violations(LOGSETUP, allowed=()))


def test_timer_imports_only_logsetup() -> None:
    """The timer package is Kafka's server-common utilities: timer, purgatory, scheduler."""
    _check("kafka_emu.timer imports only kafka_emu.logsetup", _violations(TIMER, allowed=(LOGSETUP,)))


def test_metrics_imports_no_component() -> None:
    """Metrics read typed snapshots, described as Protocols in ``metrics/sources.py``."""
    _check("kafka_emu.metrics imports nothing of broker, coordinator, timer, loadgen or bench",
           _violations(METRICS, forbidden=(BROKER, COORDINATOR, TIMER, *ABOVE_BROKER)))


# ---- timer <- coordinator <- broker <- loadgen ----------------------------------------------

def test_coordinator_never_imports_the_broker() -> None:
    """The broker hands the coordinators what they need (``CoordinatorLog``, ``TxnMarkerSender``)."""
    _check("kafka_emu.coordinator never imports kafka_emu.broker (nor loadgen or bench)",
           _violations(COORDINATOR, forbidden=(BROKER, *ABOVE_BROKER)))


def test_broker_never_imports_loadgen_or_bench() -> None:
    _check("kafka_emu.broker never imports loadgen or bench", _violations(BROKER, forbidden=ABOVE_BROKER))


# ---- inside the broker ----------------------------------------------------------------------

def test_protocol_imports_only_common() -> None:
    """The wire codecs (Kafka's clients ``protocol``/``requests``) know bytes, not the server."""
    _check("broker.protocol imports only kafka_emu.common", _violations(PROTOCOL, allowed=(COMMON,)))


def test_storage_imports_only_what_is_below_it() -> None:
    """The log layer (Kafka's ``storage`` module) uses the common vocabulary, the timer
    package (Time, the scheduler), logging and the record formats; what it needs of the server
    (the broker's config, the controller's state) it is handed, typed by Protocols."""
    _check("broker.storage imports only kafka_emu.common, kafka_emu.timer, kafka_emu.logsetup and broker.protocol",
           _violations(STORAGE, allowed=(COMMON, TIMER, LOGSETUP, PROTOCOL)))


def test_nothing_below_the_front_ends_imports_them() -> None:
    """``broker.cluster`` (embedded cluster, pytest plugin, serve, test control) sits on top;
    its test-control hooks are Protocols declared where they are called."""
    _check("broker.network, server, apis, storage and protocol never import broker.cluster",
           _violations((NETWORK, SERVER, APIS, STORAGE, PROTOCOL), forbidden=(CLUSTER,)))


def test_request_channel_imports_no_handler_and_no_server() -> None:
    """What a request needs (its API's name, a follower's replica id) is stamped on it when it
    is created, so the channel between network and handlers needs neither."""
    _check("broker.network.request_channel imports nothing of broker.apis or broker.server",
           _violations(REQUEST_CHANNEL, forbidden=(APIS, SERVER)))


def test_network_imports_no_handler() -> None:
    """The processors admit requests with what ``KafkaServer`` hands the socket server
    (an ``ApiVersionManager``), not by reading the handler modules."""
    _check("broker.network imports nothing of broker.apis", _violations(NETWORK, forbidden=(APIS,)))
