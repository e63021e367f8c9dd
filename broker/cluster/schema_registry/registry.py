"""SchemaRegistry: Confluent Schema Registry's behaviour over the ``_schemas`` log of a cluster.

The state is what Confluent's ``KafkaSchemaRegistry`` keeps in its lookup cache, rebuilt from
the log by ``_apply`` (one function for the replay at start and for each acknowledged write):

* ``_versions``: subject -> version -> ``SchemaValue`` (soft-deleted ones flagged, hard-deleted
  ones gone: a tombstone);
* ``_id_keys``: schema id -> the (subject, version) keys holding it, and ``_by_content``:
  (type, canonical schema, references) -> id, so the same schema under another subject gets
  the same id; ``_max_id``: the largest id ever read, the next id being one more (Confluent's
  ``IncrementalIdGenerator``: ids are global and never reused while the log keeps them);
* ``_configs`` and ``_modes``: subject (None: global) -> the stored ``ConfigValue`` /
  ``ModeValue``.

Operations follow ``KafkaSchemaRegistry``/``AbstractSchemaRegistry`` and the REST resources:
``register`` checks the mode, resolves references, parses (and normalizes), returns the
existing id and version of an equal schema, checks compatibility against the undeleted
versions per the level in scope (``CompatibilityChecker``: latest or all, read / be read /
both), assigns version max+1 and a new id (or the one of equal content), tombstones older
soft-deleted versions carrying the same id, and writes one ``SCHEMA`` record. Soft deletes
write the value again with ``deleted: true`` (a subject: one ``DELETE_SUBJECT`` record marking
every version up to the last); a permanent delete, allowed only after a soft one, writes
tombstones and drops the subject's config and mode.

Deliberate differences from Confluent's registry (also in docs/differences.md's list):

* One registry per cluster, no leader election or forwarding, no reader thread: writes are
  applied once the cluster acknowledges them (``store.KafkaStore``).
* No contexts, tenants, metadata, rule sets, schema tags, data-contract fields, associations,
  ``guid`` lookups, ``format=logical`` or ``/subjects/{s}/metadata``: a request using them
  gets 404 (unknown path) or, for body fields that change meaning (``metadata``, ``ruleSet``),
  42201 naming the field, never silently dropped data. ``compatibilityPolicy``/
  ``compatibilityGroup``/``validateFields``/``alias`` in ``/config`` are refused the same way.
* ``READONLY_OVERRIDE`` and ``FORWARD`` modes are refused (42204).
* One lock for every write and read (``_lock``); Confluent locks per subject.

Locking: ``_lock`` (re-entrant) guards every field of the state and serialises writes with
their checks, so a register's compatibility check and its write see the same versions. The
parsed-schema cache is filled under it too. Parsing and compatibility checks run under it.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import structlog

from kafka_emu.broker.cluster.schema_registry import errors
from kafka_emu.broker.cluster.schema_registry.errors import COMPATIBILITY_LEVELS, RestError
from kafka_emu.broker.cluster.schema_registry.schema_types import (
    SCHEMA_TYPES,
    Dependency,
    InvalidSchema,
    ParsedSchema,
    Reference,
    parse,
)
from kafka_emu.broker.cluster.schema_registry.store import KafkaStore, StoreError

if TYPE_CHECKING:
    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster

_log = structlog.get_logger("broker.schema_registry")

DEFAULT_COMPATIBILITY = "BACKWARD"
DEFAULT_MODE = "READWRITE"
MAX_VERSION = 2**31 - 1
CONTEXT = "."   # the default context, as Confluent names it in messages
SUPPORTED_MODES = ("READWRITE", "READONLY", "IMPORT")
# Register-request fields refused rather than dropped (Confluent features not implemented)
_UNSUPPORTED_FIELDS = ("metadata", "ruleSet", "schemaTagsToAdd", "schemaTagsToRemove", "propagateSchemaTags")
_CONFIG_FIELDS = ("compatibility", "compatibilityLevel", "normalize")
_UNSUPPORTED_CONFIG_FIELDS = ("alias", "aliasForDeks", "validateFields", "validateNewSchemas", "validateRules",
                              "compatibilityPolicy", "compatibilityGroup", "defaultMetadata", "overrideMetadata",
                              "defaultRuleSet", "overrideRuleSet")


@dataclass
class SchemaValue:
    """One ``SCHEMA`` record's value (Confluent's ``SchemaValue`` JSON)."""

    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = ()
    deleted: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"subject": self.subject, "version": self.version, "id": self.id,
                               "schemaType": self.schema_type}
        if self.references:
            out["references"] = [r.to_json() for r in self.references]
        out["schema"] = self.schema
        out["deleted"] = self.deleted
        return out

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "SchemaValue":
        return cls(subject=str(doc["subject"]), version=int(doc["version"]), id=int(doc["id"]),
                   schema=str(doc["schema"]), schema_type=str(doc.get("schemaType") or "AVRO"),
                   references=_references(doc.get("references") or []), deleted=bool(doc.get("deleted", False)))

    def entity(self) -> dict[str, Any]:
        """The REST ``Schema`` entity of this version."""
        out: dict[str, Any] = {"subject": self.subject, "version": self.version, "id": self.id,
                               "schemaType": self.schema_type}
        if self.references:
            out["references"] = [r.to_json() for r in self.references]
        out["schema"] = self.schema
        return out

    @property
    def content(self) -> tuple[str, str, tuple[Reference, ...]]:
        return self.schema_type, self.schema, self.references


@dataclass(frozen=True)
class RegistrySnapshot:
    """What the registry holds, for its metrics (``metrics.sources.SchemaRegistryContentsView``)."""

    subjects: int                        # subjects with a live version
    versions: int                        # live (not deleted) subject versions
    soft_deleted_versions: int
    max_schema_id: int                   # the largest id given out
    schemas_by_type: Mapping[str, int]   # distinct schema ids per type, every type of SCHEMA_TYPES


def _references(raw: Any) -> tuple[Reference, ...]:
    if not isinstance(raw, list):
        raise errors.invalid_schema("references must be a list")
    out = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) \
                or not isinstance(item.get("subject"), str) or isinstance(item.get("version"), bool) \
                or not isinstance(item.get("version"), int):
            raise errors.invalid_schema(f"Invalid reference: {item}")
        out.append(Reference(item["name"], item["subject"], int(item["version"])))
    return tuple(out)


def _key(keytype: str, subject: str | None, **extra: Any) -> dict[str, Any]:
    key: dict[str, Any] = {"keytype": keytype}
    if subject is not None:
        key["subject"] = subject
    key.update(extra)
    key["magic"] = 1 if keytype == "SCHEMA" else 0
    return key


def parse_version(text: str) -> int | None:
    """A path's version: an int in [1, 2^31-1], ``latest`` (None) or -1 (latest); else 42202."""
    if text == "latest":
        return None
    try:
        version = int(text)
    except ValueError:
        raise errors.invalid_version(text) from None
    if version == -1:
        return None
    if not 1 <= version <= MAX_VERSION:
        raise errors.invalid_version(text)
    return version


class SchemaRegistry:
    def __init__(self, cluster: "EmbeddedCluster", topic: str = "_schemas",
                 default_compatibility: str = DEFAULT_COMPATIBILITY, max_schema_bytes: int = 1 << 20) -> None:
        self.store = KafkaStore(cluster, topic)
        self.default_compatibility = default_compatibility
        self.max_schema_bytes = max_schema_bytes
        self._lock = threading.RLock()
        self._clear()

    def _clear(self) -> None:
        self._versions: dict[str, dict[int, SchemaValue]] = {}
        self._id_keys: dict[int, set[tuple[str, int]]] = {}
        self._by_content: dict[tuple[str, str, tuple[Reference, ...]], int] = {}
        self._max_id = 0
        self._configs: dict[str | None, dict[str, Any]] = {}
        self._modes: dict[str | None, str] = {}
        self._parsed: dict[tuple[str, str, tuple[Reference, ...]], ParsedSchema] = {}

    # ------------------------------------------------------------------ start and the log
    def start(self) -> "SchemaRegistry":
        with self._lock:
            self.store.ensure_topic()
            self._clear()
            applied = self.store.replay(self._apply)
        _log.info("schema_registry_loaded", records=applied, subjects=len(self._live_subjects()),
                  max_id=self._max_id)
        return self

    def reset(self) -> None:
        """Empty the registry: the topic deleted and created again, the state cleared
        (``EmbeddedCluster.reset``)."""
        with self._lock:
            self.store.cluster.delete_topic(self.store.topic)
            self._clear()
            self.store.ensure_topic()

    def _apply(self, key: dict[str, Any], value: dict[str, Any] | None) -> None:
        keytype = key.get("keytype")
        subject = key.get("subject")
        if keytype == "SCHEMA":
            self._apply_schema(str(subject), int(key["version"]), value)
        elif keytype == "CONFIG":
            if value is None:
                self._configs.pop(subject, None)
            else:
                self._configs[subject] = {k: v for k, v in value.items() if k != "subject"}
        elif keytype == "MODE":
            if value is None:
                self._modes.pop(subject, None)
            else:
                self._modes[subject] = str(value["mode"])
        elif keytype == "DELETE_SUBJECT" and value is not None:
            upto = int(value["version"])
            for version, schema in self._versions.get(str(subject), {}).items():
                if version <= upto:
                    schema.deleted = True
        elif keytype == "CLEAR_SUBJECT" and value is not None:
            for name in list(self._versions):
                if subject is None or name == subject:
                    for version, schema in list(self._versions[name].items()):
                        if schema.deleted:
                            self._apply_schema(name, version, None)
        # NOOP and key types of Confluent features not implemented (contexts, keys of DEKs) carry
        # nothing this registry serves

    def _apply_schema(self, subject: str, version: int, value: dict[str, Any] | None) -> None:
        versions = self._versions.setdefault(subject, {})
        old = versions.pop(version, None)
        if old is not None:
            keys = self._id_keys.get(old.id)
            if keys is not None:
                keys.discard((subject, version))
                if not keys:
                    del self._id_keys[old.id]
                    if self._by_content.get(old.content) == old.id:
                        del self._by_content[old.content]
        if value is not None:
            schema = SchemaValue.from_json(value)
            versions[version] = schema
            self._id_keys.setdefault(schema.id, set()).add((subject, version))
            self._by_content.setdefault(schema.content, schema.id)
            self._max_id = max(self._max_id, schema.id)
        if not versions:
            del self._versions[subject]

    def _put(self, key: dict[str, Any], value: dict[str, Any] | None) -> None:
        """Write one record and apply it once acknowledged (50001 when the cluster refuses)."""
        try:
            self.store.put(key, value)
        except StoreError as exc:
            raise errors.store_error(f"Error while writing to the Kafka store: {exc}") from None
        self._apply(key, value)

    # ------------------------------------------------------------------ lookups
    def _live_subjects(self) -> list[str]:
        return [s for s, vs in self._versions.items() if any(not v.deleted for v in vs.values())]

    def _has_subject(self, subject: str, include_deleted: bool) -> bool:
        versions = self._versions.get(subject)
        return bool(versions) and (include_deleted or any(not v.deleted for v in versions.values()))

    def _sorted(self, subject: str, include_deleted: bool) -> list[SchemaValue]:
        return [v for _, v in sorted(self._versions.get(subject, {}).items())
                if include_deleted or not v.deleted]

    def _get(self, subject: str, version: int | None, include_deleted: bool) -> SchemaValue | None:
        if version is None:
            live = self._sorted(subject, include_deleted)
            return live[-1] if live else None
        value = self._versions.get(subject, {}).get(version)
        return value if value is not None and (include_deleted or not value.deleted) else None

    def _version_or_404(self, subject: str, version_text: str, include_deleted: bool) -> SchemaValue:
        version = parse_version(version_text)
        value = self._get(subject, version, include_deleted)
        if value is None:
            if not self._has_subject(subject, include_deleted):
                raise errors.subject_not_found(subject)
            raise errors.version_not_found(-1 if version is None else version)
        return value

    def _by_id(self, schema_id: int) -> SchemaValue:
        keys = self._id_keys.get(schema_id)
        if not keys:
            raise errors.schema_not_found(schema_id)
        subject, version = min(keys)
        return self._versions[subject][version]

    def config_in_scope(self, subject: str | None) -> dict[str, Any]:
        merged = {"compatibilityLevel": self.default_compatibility}
        merged.update(self._configs.get(None, {}))
        if subject is not None:
            merged.update(self._configs.get(subject, {}))
        return merged

    def mode_in_scope(self, subject: str | None) -> str:
        if subject is not None and subject in self._modes:
            return self._modes[subject]
        return self._modes.get(None, DEFAULT_MODE)

    # ------------------------------------------------------------------ parsing
    def _dependencies(self, references: Iterable[Reference], include_deleted: bool,
                      path: tuple[tuple[str, int], ...] = ()) -> tuple[Dependency, ...]:
        out = []
        for ref in references:
            value = self._get(ref.subject, None if ref.version == -1 else ref.version, include_deleted)
            if value is None:
                raise InvalidSchema(f"No schema reference found for subject \"{ref.subject}\" and version "
                                    f"{ref.version}")
            if (value.subject, value.version) in path:
                raise InvalidSchema(f"Circular reference to subject \"{ref.subject}\" version {value.version}")
            inner = self._dependencies(value.references, True, path + ((value.subject, value.version),))
            out.append(Dependency(ref.name, value.schema, inner))
        return tuple(out)

    def _parse(self, schema_type: str, schema: str, references: tuple[Reference, ...],
               new: bool = True) -> ParsedSchema:
        """Parse (cached by content); 42201 with Confluent's wording when it is not a schema."""
        content = (schema_type, schema, references)
        parsed = self._parsed.get(content)
        if parsed is not None:
            return parsed
        if schema_type not in SCHEMA_TYPES:
            raise errors.invalid_schema(f"Invalid schema type {schema_type}")
        try:
            parsed = parse(schema_type, schema, self._dependencies(references, not new))
        except InvalidSchema as exc:
            refs = "[" + ", ".join(f"{{name='{r.name}', subject='{r.subject}', version={r.version}}}"
                                   for r in references) + "]"
            raise errors.invalid_schema(f"Invalid schema of type {schema_type}, details: {exc}"
                                        f" (references {refs})") from None
        if len(self._parsed) > 10_000:
            self._parsed.clear()
        self._parsed[content] = parsed
        return parsed

    def _parsed_value(self, value: SchemaValue) -> ParsedSchema:
        return self._parse(value.schema_type, value.schema, value.references, new=False)

    @staticmethod
    def _request(body: Any) -> tuple[str, str, tuple[Reference, ...]]:
        """(type, schema, references) of a register/lookup body; 42201 when malformed."""
        if not isinstance(body, dict):
            raise errors.invalid_schema("The request body must be a JSON object with a schema field")
        for name in _UNSUPPORTED_FIELDS:
            if body.get(name) not in (None, [], {}, False):
                raise errors.invalid_schema(f"The field {name} is not supported by kafka-emu's schema registry")
        schema = body.get("schema")
        if schema is None or (isinstance(schema, str) and not schema.strip()):
            raise errors.invalid_schema("Empty schema")
        if not isinstance(schema, str):
            raise errors.invalid_schema("The schema field must be a string")
        schema_type = body.get("schemaType") or "AVRO"
        if not isinstance(schema_type, str):
            raise errors.invalid_schema("The schemaType field must be a string")
        return schema_type.upper(), schema, _references(body.get("references") or [])

    # ------------------------------------------------------------------ compatibility
    def _compatibility_messages(self, subject: str, parsed: ParsedSchema, previous: list[SchemaValue],
                                level: str) -> list[str]:
        """CompatibilityChecker over ``previous`` (ascending versions), Confluent's messages."""
        if level == "NONE" or not previous:
            return []
        candidates = list(reversed(previous))
        if not level.endswith("_TRANSITIVE"):
            candidates = candidates[:1]
        base = level.removesuffix("_TRANSITIVE")
        messages: list[str] = []
        try:
            messages = self._check_candidates(parsed, candidates, base)
        except InvalidSchema as exc:   # a rule the type's checker does not implement
            raise errors.invalid_schema(f"Invalid schema of type {parsed.schema_type}, details: {exc}") from None
        if messages:
            messages.append(f"{{validateFields: 'false', compatibility: '{level}'}}")
        return messages

    def _check_candidates(self, parsed: ParsedSchema, candidates: list[SchemaValue], base: str) -> list[str]:
        messages: list[str] = []
        for old in candidates:
            old_parsed = self._parsed_value(old)
            if old_parsed.schema_type != parsed.schema_type:
                messages = ["Incompatible because of different schema type"]
            else:
                messages = []
                if base in ("FORWARD", "FULL"):
                    messages += _format(old_parsed.backward_messages(parsed), "old", "new", None)
                if base in ("BACKWARD", "FULL"):
                    messages += _format(parsed.backward_messages(old_parsed), "new", "old", old)
                elif messages:
                    messages += _old_schema(old)
            if messages:
                break
        return messages

    # ------------------------------------------------------------------ operations
    def register(self, subject: str, body: Any, normalize: bool) -> dict[str, Any]:
        schema_type, schema, references = self._request(body)
        if len(schema.encode()) > self.max_schema_bytes:
            raise errors.schema_too_large()
        import_id = body.get("id")
        import_version = body.get("version")
        for name, value in (("id", import_id), ("version", import_version)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise errors.invalid_schema(f"The {name} field must be an integer")
        schema_id = -1 if import_id is None else int(import_id)
        with self._lock:
            mode = self.mode_in_scope(subject)
            if mode == "READONLY":
                raise errors.operation_not_permitted(f"Subject {subject} in context {CONTEXT} is in read-only mode")
            if schema_id >= 0 and mode != "IMPORT":
                raise errors.operation_not_permitted(f"Subject {subject} in context {CONTEXT} is not in import mode")
            if schema_id < 0 and mode != "READWRITE":
                raise errors.operation_not_permitted(f"Subject {subject} in context {CONTEXT} is not in "
                                                     "read-write mode")
            all_versions = self._sorted(subject, True)
            new_version = max((v.version for v in all_versions), default=0) + 1
            undeleted = [v for v in all_versions if not v.deleted]
            config = self.config_in_scope(subject)
            normalize = normalize or bool(config.get("normalize"))
            parsed = self._parse(schema_type, schema, references)
            if normalize:
                parsed = parsed.normalized()
            canonical = parsed.canonical()
            content = (schema_type, canonical, references)
            existing_id = self._by_content.get(content)
            if existing_id is not None and (schema_id < 0 or schema_id == existing_id):
                if not import_version:
                    for value in reversed(undeleted):
                        if value.id == existing_id:
                            return _registered(value)
                schema_id = existing_id
            if mode != "IMPORT":
                messages = self._compatibility_messages(subject, parsed, undeleted,
                                                        str(config["compatibilityLevel"]))
                if messages:
                    raise errors.incompatible_schema(subject, messages)
            if import_version:
                if not 1 <= int(import_version) <= MAX_VERSION:
                    raise errors.invalid_version(str(import_version))
                version = int(import_version)
                if version != new_version and mode != "IMPORT":
                    raise errors.invalid_schema("Version is not one more than previous version")
            else:
                version = new_version
            if schema_id >= 0:
                holders = self._id_keys.get(schema_id)
                if holders:
                    other = self._versions[min(holders)[0]][min(holders)[1]]
                    if other.content != content:
                        raise errors.operation_not_permitted(
                            f"Overwrite new schema with id {schema_id} in context {CONTEXT} is not permitted.")
            else:
                schema_id = self._max_id + 1
            for old in all_versions:
                if old.deleted and old.id == schema_id and old.version < version \
                        and not self._referenced_by(old.subject, old.version, True):
                    self._put(_key("SCHEMA", subject, version=old.version), None)
            value = SchemaValue(subject, version, schema_id, canonical, schema_type, references)
            self._put(_key("SCHEMA", subject, version=version), value.to_json())
            _log.info("schema_registered", subject=subject, version=version, id=schema_id, schema_type=schema_type)
            return _registered(value)

    def lookup(self, subject: str, body: Any, normalize: bool, deleted: bool) -> dict[str, Any]:
        schema_type, schema, references = self._request(body)
        with self._lock:
            normalize = normalize or bool(self.config_in_scope(subject).get("normalize"))
            parsed = self._parse(schema_type, schema, references)
            if normalize:
                parsed = parsed.normalized()
            content = (schema_type, parsed.canonical(), references)
            for value in reversed(self._sorted(subject, deleted)):
                if value.content == content:
                    return value.entity()
            if not self._has_subject(subject, deleted):
                raise errors.subject_not_found(subject)
            raise errors.schema_not_found()

    def list_subjects(self, deleted: bool, deleted_only: bool, prefix: str) -> list[str]:
        with self._lock:
            names = []
            for subject, versions in self._versions.items():
                states = {v.deleted for v in versions.values()}
                if deleted_only:
                    keep = True in states and False not in states
                else:
                    keep = deleted or False in states
                if keep and subject.startswith(prefix):
                    names.append(subject)
            return sorted(names)

    def list_versions(self, subject: str, deleted: bool, deleted_only: bool) -> list[int]:
        with self._lock:
            if not self._has_subject(subject, deleted or deleted_only):
                raise errors.subject_not_found(subject)
            values = self._sorted(subject, True)
            if deleted_only:
                return [v.version for v in values if v.deleted]
            return [v.version for v in values if deleted or not v.deleted]

    def get_version(self, subject: str, version: str, deleted: bool) -> SchemaValue:
        with self._lock:
            return self._version_or_404(subject, version, deleted)

    def formatted(self, value: SchemaValue, fmt: str) -> str:
        if not fmt:
            return value.schema
        with self._lock:
            try:
                return self._parsed_value(value).formatted(fmt)
            except InvalidSchema as exc:
                raise errors.invalid_schema(str(exc)) from None

    def referenced_by(self, subject: str, version: str) -> list[int]:
        with self._lock:
            value = self._version_or_404(subject, version, False)
            return sorted(self._referenced_by(value.subject, value.version, False))

    def _referenced_by(self, subject: str, version: int, include_deleted: bool) -> set[int]:
        ids = set()
        for versions in self._versions.values():
            for value in versions.values():
                if (include_deleted or not value.deleted) and any(
                        r.subject == subject and r.version == version for r in value.references):
                    ids.add(value.id)
        return ids

    def delete_version(self, subject: str, version_text: str, permanent: bool) -> int:
        version = parse_version(version_text)
        with self._lock:
            if not self._has_subject(subject, True):
                raise errors.subject_not_found(subject)
            value = self._get(subject, version, permanent)
            if value is None:
                if version is not None and version in self._versions[subject]:
                    raise errors.version_soft_deleted(subject, version)
                raise errors.version_not_found(-1 if version is None else version)
            if self.mode_in_scope(subject) == "READONLY":
                raise errors.operation_not_permitted(f"Subject {subject} in context {CONTEXT} is in read-only mode")
            if self._referenced_by(subject, value.version, permanent):
                raise errors.reference_exists(_key_text(subject, value.version))
            if permanent:
                if not value.deleted:
                    raise errors.version_not_soft_deleted(subject, value.version)
                self._put(_key("SCHEMA", subject, version=value.version), None)
                if subject not in self._versions:
                    self._drop_subject_settings(subject)
            else:
                deleted = SchemaValue(value.subject, value.version, value.id, value.schema, value.schema_type,
                                      value.references, deleted=True)
                self._put(_key("SCHEMA", subject, version=value.version), deleted.to_json())
            _log.info("schema_version_deleted", subject=subject, version=value.version, permanent=permanent)
            return value.version

    def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        with self._lock:
            if not self._has_subject(subject, True):
                raise errors.subject_not_found(subject)
            if not permanent and not self._has_subject(subject, False):
                raise errors.subject_soft_deleted(subject)
            if self.mode_in_scope(subject) == "READONLY":
                raise errors.operation_not_permitted(f"Subject {subject} in context {CONTEXT} is in read-only mode")
            values = self._sorted(subject, permanent)
            for value in values:
                referrers = {v.subject for vs in self._versions.values() for v in vs.values()
                             if (permanent or not v.deleted)
                             and any(r.subject == subject and r.version == value.version for r in v.references)}
                referrers.discard(subject)
                if referrers:
                    raise errors.reference_exists(_key_text(subject, value.version))
                if permanent and not value.deleted:
                    raise errors.subject_not_soft_deleted(subject)
            if permanent:
                for value in reversed(values):
                    self._put(_key("SCHEMA", subject, version=value.version), None)
                self._drop_subject_settings(subject)
            else:
                self._put(_key("DELETE_SUBJECT", subject), {"subject": subject, "version": values[-1].version})
            _log.info("subject_deleted", subject=subject, permanent=permanent)
            return [v.version for v in values]

    def _drop_subject_settings(self, subject: str) -> None:
        if subject in self._modes:
            self._put(_key("MODE", subject), None)
        if subject in self._configs:
            self._put(_key("CONFIG", subject), None)

    def schema_by_id(self, schema_id: int) -> SchemaValue:
        with self._lock:
            return self._by_id(schema_id)

    def subject_versions_by_id(self, schema_id: int, deleted: bool) -> list[tuple[str, int]]:
        with self._lock:
            self._by_id(schema_id)
            return sorted((s, v) for s, v in self._id_keys.get(schema_id, ())
                          if deleted or not self._versions[s][v].deleted)

    # ------------------------------------------------------------------ config and mode
    def get_config(self, subject: str | None, default_to_global: bool) -> dict[str, Any]:
        with self._lock:
            if default_to_global:
                return self.config_in_scope(subject)
            if subject is None:
                return {"compatibilityLevel": self.default_compatibility, **self._configs.get(None, {})}
            config = self._configs.get(subject)
            if config is None:
                raise errors.compatibility_not_configured(subject)
            return dict(config)

    def set_config(self, subject: str | None, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise errors.invalid_compatibility_level()
        for name in _UNSUPPORTED_CONFIG_FIELDS:
            if body.get(name) is not None:
                raise errors.invalid_schema(f"The config field {name} is not supported by kafka-emu's "
                                            "schema registry")
        level = body.get("compatibility", body.get("compatibilityLevel"))
        normalize = body.get("normalize")
        if level is not None and (not isinstance(level, str) or level.upper() not in COMPATIBILITY_LEVELS):
            raise errors.invalid_compatibility_level()
        if normalize is not None and not isinstance(normalize, bool):
            raise errors.invalid_compatibility_level()
        with self._lock:
            if subject is not None and self.mode_in_scope(subject) == "READONLY":
                raise errors.operation_not_permitted(f"Subject {subject} in context {CONTEXT} is in read-only mode")
            value = dict(self._configs.get(subject, {}))
            if level is not None:
                value["compatibilityLevel"] = level.upper()
            if normalize is not None:
                value["normalize"] = normalize
            stored = dict(value)
            if subject is not None:
                stored["subject"] = subject
            self._put(_key("CONFIG", subject), stored)
            out: dict[str, Any] = {}
            if "compatibilityLevel" in value:
                out["compatibility"] = value["compatibilityLevel"]
            if "normalize" in value:
                out["normalize"] = value["normalize"]
            return out

    def delete_config(self, subject: str | None) -> dict[str, Any]:
        with self._lock:
            config = self._configs.get(subject)
            if subject is not None and config is None:
                raise errors.subject_not_found(subject)
            deleted = dict(config) if config is not None else {"compatibilityLevel": self.default_compatibility}
            if config is not None:
                self._put(_key("CONFIG", subject), None)
            return deleted

    def get_mode(self, subject: str | None, default_to_global: bool) -> str:
        with self._lock:
            if default_to_global or subject is None:
                return self.mode_in_scope(subject)
            mode = self._modes.get(subject)
            if mode is None:
                raise errors.mode_not_configured(subject)
            return mode

    def set_mode(self, subject: str | None, body: Any, force: bool) -> str:
        mode = body.get("mode") if isinstance(body, dict) else None
        if not isinstance(mode, str) or mode.upper() not in errors.MODES + ("FORWARD",):
            raise errors.invalid_mode()
        mode = mode.upper()
        if mode not in SUPPORTED_MODES:
            raise errors.invalid_mode(f"Mode {mode} is not supported by kafka-emu's schema registry "
                                      f"(supported: {', '.join(SUPPORTED_MODES)})")
        with self._lock:
            if mode == "IMPORT" and self.mode_in_scope(subject) != "IMPORT" and not force:
                subjects = [subject] if subject is not None else list(self._versions)
                if any(self._has_subject(s, False) for s in subjects):
                    raise errors.operation_not_permitted("Cannot import since found existing subjects")
                for s in subjects:
                    for value in self._sorted(s, True):
                        if self._referenced_by(s, value.version, True):
                            raise errors.reference_exists(_key_text(s, value.version))
                for s in subjects:
                    for value in self._sorted(s, True):
                        self._put(_key("SCHEMA", s, version=value.version), None)
                self._put(_key("CLEAR_SUBJECT", subject), {"subject": subject} if subject else {})
            stored: dict[str, Any] = {"mode": mode}
            if subject is not None:
                stored = {"subject": subject, "mode": mode}
            self._put(_key("MODE", subject), stored)
            return mode

    def delete_mode(self, subject: str | None) -> str:
        with self._lock:
            mode = self._modes.get(subject)
            if mode is None:
                raise errors.subject_not_found(subject)
            self._put(_key("MODE", subject), None)
            return mode

    def check_compatibility(self, subject: str, version_text: str | None, body: Any, normalize: bool,
                            verbose: bool) -> dict[str, Any]:
        with self._lock:
            if version_text is None:
                previous = self._sorted(subject, False)
            else:
                version = parse_version(version_text)
                value = self._get(subject, version, False)
                if value is None and version is not None:
                    raise errors.version_not_found(version)
                previous = [value] if value is not None else []
            config = self.config_in_scope(subject)
            try:
                schema_type, schema, references = self._request(body)
                parsed = self._parse(schema_type, schema, references)
                if normalize or config.get("normalize"):
                    parsed = parsed.normalized()
                level = str(config["compatibilityLevel"])
                if version_text is not None and level.endswith("_TRANSITIVE"):
                    level = level.removesuffix("_TRANSITIVE")
                messages = self._compatibility_messages(subject, parsed, previous, level)
            except RestError as exc:
                if not verbose or exc.error_code != errors.INVALID_SCHEMA:
                    raise
                messages = [exc.message]
            out: dict[str, Any] = {"is_compatible": not messages}
            if verbose:
                out["messages"] = messages
            return out

    # ------------------------------------------------------------------ metrics
    @property
    def max_id(self) -> int:
        """The largest schema id given out (``fetchMaxId``)."""
        with self._lock:
            return self._max_id

    def snapshot(self) -> RegistrySnapshot:
        """One pass over the versions under ``_lock`` (a scrape holds requests back for that long)."""
        with self._lock:
            subjects = versions = soft_deleted = 0
            for by_version in self._versions.values():
                live = sum(not v.deleted for v in by_version.values())
                subjects += bool(live)
                versions += live
                soft_deleted += len(by_version) - live
            by_type = dict.fromkeys(SCHEMA_TYPES, 0)
            for keys in self._id_keys.values():
                subject, version = min(keys)
                by_type[self._versions[subject][version].schema_type] += 1
            return RegistrySnapshot(subjects, versions, soft_deleted, self._max_id, by_type)


def _key_text(subject: str, version: int) -> str:
    return f"{{magic=1,keytype=SCHEMA,subject={subject},version={version}}}"


def _registered(value: SchemaValue) -> dict[str, Any]:
    """RegisterSchemaResponse of a stored version."""
    out: dict[str, Any] = {"id": value.id, "version": value.version, "schemaType": value.schema_type}
    if value.references:
        out["references"] = [r.to_json() for r in value.references]
    out["schema"] = value.schema
    return out


def _old_schema(old: SchemaValue) -> list[str]:
    return [f"{{oldSchemaVersion: {old.version}}}", f"{{oldSchema: '{old.schema}'}}"]


def _format(messages: list[str], reader: str, writer: str, old: SchemaValue | None) -> list[str]:
    """SchemaValidatorBuilder.formatErrorMessages: roles filled in, the old schema appended."""
    out = [m.replace("%s", reader, 1).replace("%s", writer, 1) for m in messages]
    if out and old is not None:
        out += _old_schema(old)
    return out
