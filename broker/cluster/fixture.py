"""pytest plugin: an in-process Kafka cluster for any project's tests.

PYTEST_DONT_REWRITE (see "Start-up cost" below)

Registered through the ``pytest11`` entry point (``kafka_emu = "kafka_emu.broker.cluster.fixture"``), so after
``pip install kafka-emu`` a test can simply ask for ``kafka_cluster``::

    def test_roundtrip(kafka_cluster):
        producer = confluent_kafka.Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers})

Choosing the cluster: ``@pytest.mark.kafka_cluster(brokers=3, kafka_version="4.1", config=None,
scope="module")`` on a module (``pytestmark = ...``), a class or a single test; the closest marker
wins, as for any pytest marker. ``kafka_version`` is the Kafka release the cluster answers as
(``emulator.kafka.version``: its API versions, features and defaults; default the newest the
emulator knows, ``kafka_emu.common.kafka_releases.LATEST``). Test-control options go next to
``brokers`` (``CLUSTER_OPTIONS``, passed on to
``EmbeddedCluster``): ``record_requests`` (True or a ring capacity: ``cluster.requests()``) and
``time`` (``"real"``, ``"offset"`` or ``"manual"``: ``cluster.advance_time(ms)``); see
docs/testing-failure.md. ``schema_registry_port=0`` starts the embedded schema registry
(``cluster.schema_registry_url``; the ``registry`` extra). ``security`` (``"SASL_SSL"``,
``"SSL"``, ... or a ``ClusterSecurity``) gives the cluster a secured listener with throwaway
certificates and users; ``kafka_cluster.client_config(user="alice")`` returns the client settings
that reach it. The marker's values go over the ``kafka_cluster_config`` fixture's
(three brokers; a module or conftest may override that fixture: ``{"brokers": n, "config":
{...}}`` and any of the options), whose ``config`` goes over ``DEFAULT_TEST_CONFIG (replication factor 3 for new
topics, capped at the cluster size unless configured; group timeouts shortened for tests;
``emulator.strict.config``, so a misspelt config key fails the set-up). A keyword the marker
does not know is a usage error, reported at collection.

Which tests share a cluster: a cluster belongs to the node that carries the closest marker (the
module when there is none), so the tests of a module or of a marked class share one, and a
marked test has its own. ``scope`` narrows this: ``"class"`` gives each class its own (and the
module's tests outside classes theirs), ``"function"`` gives every test a fresh cluster. The
``kafka_cluster`` fixture is function-scoped: it resolves each test's closest marker and takes
the cluster from a per-session cache keyed by (owner node, brokers, config); a cluster starts at
the first test that asks for it and is closed (every thread joined) by a finalizer on its owner
node, i.e. when pytest tears that module, class or test down. A fixture that asks for
``kafka_cluster`` is therefore function-scoped too; what it gets is the shared cluster.

Tests that share a cluster share its topics, groups, dynamic broker configs and client quotas;
``kafka_cluster.reset()`` deletes every group and every non-internal topic, removes the dynamic
broker configs and the client quotas and clears faults and recorded requests, so an autouse
fixture gives each test a clean cluster::

    @pytest.fixture(autouse=True)
    def clean_cluster(kafka_cluster):
        kafka_cluster.reset()

``kafka_bootstrap`` is the bootstrap string alone.

Locking: none; pytest sets up and tears down fixtures on its one thread, so the cache needs no lock.

Start-up cost: this module imports nothing of the broker; the first test that asks for a
cluster imports it (``import_cluster_class``, which keeps kio from importing hypothesis).
pytest rewrites the assertions of every module of a plugin's distribution, which would put the
whole product through its rewriter (parsed and compiled again instead of loaded from the
installed bytecode, about 0.3 s per session) although none of it is test code.
``pytest_addhooks`` runs as this plugin is registered, before any of the product but this
module and its packages' ``__init__`` is imported, and takes the product's package back out of
pytest's rewrite list; PYTEST_DONT_REWRITE above spares this module, imported just before.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Mapping

import pytest

if TYPE_CHECKING:
    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster

DEFAULT_TEST_CONFIG: dict[str, Any] = {
    "default.replication.factor": 3,
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": 10,
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 100,
    "emulator.strict.config": True,   # a typo in a test's config fails loudly
}
# capped at the cluster size unless the fixture's or the marker's config sets them
REPLICATION_FACTOR_KEYS = ("default.replication.factor", "offsets.topic.replication.factor")
CLUSTER_OPTIONS = ("record_requests", "time", "schema_registry_port", "security")   # EmbeddedCluster keywords
MARKER_KEYWORDS = ("brokers", "kafka_version", "config", "scope", *CLUSTER_OPTIONS)
KAFKA_VERSION = "emulator.kafka.version"   # the marker's kafka_version="4.1" sets this key
SCOPES = ("module", "class", "function")

# (owner node id, brokers, config and options) -> the running cluster; one dict per pytest session
_CLUSTERS = pytest.StashKey[dict[tuple[str, int, str], "EmbeddedCluster"]]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Take the product back out of pytest's assertion-rewrite list (see the module docstring).

    pytest offers no public way to do this; without the attributes (another pytest version, or
    ``--assert=plain``) nothing changes but the start-up cost.
    """
    hook = getattr(pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    cache = getattr(hook, "_marked_for_rewrite_cache", None)
    if isinstance(marked, set) and isinstance(cache, dict):
        marked.discard(__name__.partition(".")[0])
        cache.clear()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "kafka_cluster(brokers=3, kafka_version=None, config=None, scope='module', "
        "record_requests=False, time='real', security=None): size, Kafka release "
        "(emulator.kafka.version, default the newest), configuration and sharing of the test's "
        "in-process Kafka cluster (kafka-emu); the closest marker wins")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Refuse a misspelt marker before anything runs, wherever it sits."""
    for item in items:
        for node, mark in item.iter_markers_with_node("kafka_cluster"):
            marker_values(mark, node.nodeid)


def marker_values(mark: pytest.Mark, where: str) -> tuple[int | None, dict[str, Any], str, dict[str, Any]]:
    """(brokers or None, config, scope, options) of a ``kafka_cluster`` marker; pytest.UsageError
    naming the first thing wrong with it (``EmbeddedCluster`` checks the options' values)."""
    def refuse(problem: str) -> pytest.UsageError:
        return pytest.UsageError(f"{where}: @pytest.mark.kafka_cluster: {problem}")

    if mark.args:
        raise refuse(f"takes keywords only ({', '.join(MARKER_KEYWORDS)}), got {mark.args!r}")
    unknown = sorted(set(mark.kwargs) - set(MARKER_KEYWORDS))
    if unknown:
        raise refuse(f"unknown keyword {', '.join(map(repr, unknown))} "
                     f"(accepted: {', '.join(MARKER_KEYWORDS)})")
    brokers = mark.kwargs.get("brokers")
    if brokers is not None and (type(brokers) is not int or brokers < 1):
        raise refuse(f"brokers must be a positive int, got {brokers!r}")
    config = mark.kwargs.get("config") or {}
    if not isinstance(config, Mapping):
        raise refuse(f"config must be a mapping of Kafka config keys, got {config!r}")
    config = dict(config)
    if "kafka_version" in mark.kwargs:
        if KAFKA_VERSION in config and str(config[KAFKA_VERSION]) != str(mark.kwargs["kafka_version"]):
            raise refuse(f"kafka_version={mark.kwargs['kafka_version']!r} and config's {KAFKA_VERSION}="
                         f"{config[KAFKA_VERSION]!r} disagree")
        config[KAFKA_VERSION] = str(mark.kwargs["kafka_version"])
    scope = mark.kwargs.get("scope", "module")
    if scope not in SCOPES:
        raise refuse(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    return brokers, config, scope, {k: mark.kwargs[k] for k in CLUSTER_OPTIONS if k in mark.kwargs}


def resolve(item: pytest.Item, base: Mapping[str, Any]
            ) -> tuple[pytest.Item | pytest.Collector, int, dict[str, Any], dict[str, Any]]:
    """(owner node, brokers, broker config, ``EmbeddedCluster`` options) of ``item``'s cluster;
    ``base`` is the ``kafka_cluster_config`` fixture's value."""
    module = item.getparent(pytest.Module) or item
    owner: pytest.Item | pytest.Collector = module
    brokers = int(base.get("brokers", 3))
    fixture_config = dict(base.get("config") or {})
    marker_config: dict[str, Any] = {}
    options = {k: base[k] for k in CLUSTER_OPTIONS if k in base}
    scope = "module"
    closest = next(item.iter_markers_with_node("kafka_cluster"), None)
    if closest is not None:
        owner, mark = closest
        marked_brokers, marker_config, scope, marker_options = marker_values(mark, owner.nodeid)
        brokers = marked_brokers or brokers
        options.update(marker_options)
    widest = {"module": module, "class": item.getparent(pytest.Class) or module, "function": item}[scope]
    if len(widest.listchain()) > len(owner.listchain()):
        owner = widest
    config = {**DEFAULT_TEST_CONFIG, **fixture_config, **marker_config}
    for key in REPLICATION_FACTOR_KEYS:
        if key not in fixture_config and key not in marker_config:
            config[key] = min(int(config[key]), brokers)
    return owner, brokers, config, options


def import_cluster_class() -> type[EmbeddedCluster]:
    """``EmbeddedCluster``, imported on first use; the wire codec kio without hypothesis.

    kio registers hypothesis strategies for its primitive types when it is imported with
    hypothesis installed (``kio.static._phantom``); the broker never uses them, but importing
    hypothesis and building its text strategy costs 0.3 s, and over 1 s in a pytest session that
    rewrites hypothesis (it is a pytest plugin's distribution) without cached bytecode. So when
    neither is imported yet, kio is imported while ``import hypothesis`` raises ImportError
    (a None entry in ``sys.modules``); the entry is removed right after, and hypothesis imports
    normally from then on. A test that imported hypothesis before keeps kio's strategies.
    """
    if "kio" not in sys.modules and "hypothesis" not in sys.modules:
        sys.modules["hypothesis"] = None  # type: ignore[assignment]
        try:
            import kio.static.primitive  # noqa: F401  (its phantom types look hypothesis up)
        finally:
            del sys.modules["hypothesis"]
    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster

    return EmbeddedCluster


@pytest.fixture(scope="module")
def kafka_cluster_config() -> dict[str, Any]:
    """Override in a module (or conftest) to change the cluster: {"brokers": n, "config": {...}}
    and any of ``CLUSTER_OPTIONS``."""
    return {"brokers": 3, "config": {}}


@pytest.fixture()
def kafka_cluster(request: pytest.FixtureRequest, kafka_cluster_config: dict[str, Any]) -> EmbeddedCluster:
    """The started ``EmbeddedCluster`` of this test (see the module docstring for sharing)."""
    owner, brokers, config, options = resolve(request.node, kafka_cluster_config)
    clusters = request.config.stash.setdefault(_CLUSTERS, {})
    key = (owner.nodeid, brokers, repr((sorted(config.items()), sorted(options.items()))))
    cluster = clusters.get(key)
    if cluster is None:
        cluster = import_cluster_class()(brokers=brokers, config=config, start=False, **options)
        try:
            cluster.start()
        except BaseException:
            cluster.close()
            raise
        clusters[key] = cluster

        def close() -> None:
            del clusters[key]
            cluster.close()

        owner.addfinalizer(close)
    return cluster


@pytest.fixture()
def kafka_bootstrap(kafka_cluster: EmbeddedCluster) -> str:
    return kafka_cluster.bootstrap_servers
