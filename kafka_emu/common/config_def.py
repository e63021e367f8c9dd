"""ConfigDef: typed configuration definitions, after Kafka's ``org.apache.kafka.common.config.ConfigDef``.

A ``ConfigDef`` is a table of ``ConfigKey`` entries (name, type, default, validator, importance,
one-line doc). ``ConfigDef.parse`` turns a mapping of raw values (strings from a properties file,
or Python values from a dict) into typed values, filling in the defaults, exactly as Kafka's
``ConfigDef.parse`` does: values are converted with Kafka's rules for each type (``parse_type``),
then checked by the key's validator; the first failure raises ``ConfigException`` whose message is
Kafka's (``Invalid value abc for configuration num.partitions: Not a number of type INT``).

Beyond Kafka's ConfigDef, each key says whether the emulator implements it (``implemented``):
KafkaConfig warns about keys that are defined but have no effect (Kafka itself acts on them all),
and refuses them under ``emulator.strict.config``. Keys Kafka defines that the emulator does not
model at all are listed by name only (``ConfigDef.known_names``/``known_prefixes``), so they warn
as unimplemented rather than as unknown. ``prefix`` keys (e.g. ``log.level.<logger>``) match every
name that starts with the key's name. A broker key also says whether it is dynamic
(``Dynamic``: Kafka's ``DynamicBrokerConfig`` marking, narrowed to what the emulator applies at
run time), which AlterConfigs and DescribeConfigs' ``read_only`` read.

Immutable once built (definitions are module-level tables); no locking.
"""
from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Union

# A typed configuration value (None: no value, Kafka's ``null`` default).
ConfigValue = Union[bool, int, float, str, "list[str]", None]

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
SHORT_MIN, SHORT_MAX = -(1 << 15), (1 << 15) - 1
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[dDfF]?")


class ConfigException(ValueError):
    """A configuration error; ``str()`` is the one-line message shown to the user.

    ``ConfigException(name, value, message)`` gives Kafka's wording ("Invalid value V for
    configuration K: M"); ``ConfigException(message)`` any other single line.
    """

    def __init__(self, name_or_message: str, value: object = None, message: str | None = None) -> None:
        if value is None and message is None:
            text = name_or_message
        else:
            text = f"Invalid value {render(value)} for configuration {name_or_message}"
            if message:
                text += f": {message}"
        super().__init__(text)


class Type(enum.IntEnum):
    """Kafka's ``ConfigDef.Type``; the values are DescribeConfigs' ``ConfigType`` ids."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class Dynamic(enum.Enum):
    """Whether a broker key can change at run time (AlterConfigs on a BROKER resource).

    Kafka marks a key dynamic by listing it in ``DynamicBrokerConfig.AllDynamicConfigs``; the
    emulator applies only some of those at once, and says which."""

    READ_ONLY = "read-only"         # not dynamic in Kafka (AlterConfigs: INVALID_REQUEST)
    APPLIED = "dynamic"             # dynamic in Kafka, and the emulator applies a change at once
    NOT_APPLIED = "not-applied"     # dynamic in Kafka, read by the emulator at start-up only


class Importance(enum.Enum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


def render(value: object) -> str:
    """A value as Kafka prints it (booleans lower case, lists comma separated)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(render(v) for v in value)
    return str(value)


_INTEGER_KINDS = {Type.INT: "a 32-bit integer", Type.SHORT: "a 16-bit integer (short)",
                  Type.LONG: "a 64-bit integer (long)"}


def _integer(name: str, value: object, type_: Type, low: int, high: int) -> int:
    if isinstance(value, bool):
        raise ConfigException(name, value, f"Expected value to be {_INTEGER_KINDS[type_]}, but it was a bool")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        number = int(value.strip())
    else:
        raise ConfigException(name, value, f"Not a number of type {type_.name}")
    if not low <= number <= high:
        raise ConfigException(name, value, f"Not a number of type {type_.name}")
    return number


def parse_type(name: str, value: object, type_: Type) -> ConfigValue:
    """Kafka's ``ConfigDef.parseType``: a raw value (string or Python value) as ``type_``."""
    if value is None:
        return None
    if type_ is Type.BOOLEAN:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise ConfigException(name, value, "Expected value to be either true or false")
    if type_ in (Type.STRING, Type.CLASS, Type.PASSWORD):
        if isinstance(value, str):
            return value.strip()
        raise ConfigException(name, value, f"Expected value to be a string, but it was a {type(value).__name__}")
    if type_ is Type.INT:
        return _integer(name, value, type_, INT_MIN, INT_MAX)
    if type_ is Type.SHORT:
        return _integer(name, value, type_, SHORT_MIN, SHORT_MAX)
    if type_ is Type.LONG:
        return _integer(name, value, type_, LONG_MIN, LONG_MAX)
    if type_ is Type.DOUBLE:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and _DOUBLE.fullmatch(value.strip()):
            return float(value.strip().rstrip("dDfF"))
        raise ConfigException(name, value, "Not a number of type DOUBLE")
    if type_ is Type.LIST:
        if isinstance(value, (list, tuple)):
            return [str(v).strip() for v in value]
        if isinstance(value, str):
            text = value.strip()
            return [part.strip() for part in text.split(",")] if text else []
        raise ConfigException(name, value, "Expected a comma separated list.")
    raise AssertionError(f"unhandled config type {type_}")


# ---- validators (Kafka's ConfigDef.Range, ValidString, ValidList; a plain function is Kafka's
# LambdaValidator) ------------------------------------------------------------------------------

Validator = Callable[[str, ConfigValue], None]


@dataclass(frozen=True)
class Range:
    """``ConfigDef.Range``: a number within [min, max] (either bound may be open)."""

    min: float | None = None
    max: float | None = None

    @staticmethod
    def at_least(minimum: float) -> "Range":
        return Range(minimum, None)

    @staticmethod
    def between(minimum: float, maximum: float) -> "Range":
        return Range(minimum, maximum)

    def __call__(self, name: str, value: ConfigValue) -> None:
        if value is None:
            raise ConfigException(name, value, "Value must be non-null")
        assert isinstance(value, (int, float))
        if self.min is not None and (value < self.min or (isinstance(value, float) and math.isnan(value))):
            raise ConfigException(name, value, f"Value must be at least {self.min}")
        if self.max is not None and value > self.max:
            raise ConfigException(name, value, f"Value must be no more than {self.max}")

    def __str__(self) -> str:
        if self.max is None:
            return f"[{self.min},...]"
        if self.min is None:
            return f"[...,{self.max}]"
        return f"[{self.min},...,{self.max}]"


@dataclass(frozen=True)
class ValidString:
    """``ConfigDef.ValidString`` (``case_insensitive``: ``CaseInsensitiveValidString``)."""

    valid: tuple[str, ...]
    case_insensitive: bool = False

    def __call__(self, name: str, value: ConfigValue) -> None:
        if value is None:   # a null default is allowed (Kafka checks only given values)
            return
        text = str(value).lower() if self.case_insensitive else str(value)
        valid = [v.lower() for v in self.valid] if self.case_insensitive else self.valid
        if text not in valid:
            how = " (case insensitive)" if self.case_insensitive else ""
            raise ConfigException(name, value, f"String must be one of{how}: {', '.join(self.valid)}")

    def __str__(self) -> str:
        return f"[{', '.join(self.valid)}]"


@dataclass(frozen=True)
class ValidList:
    """``ConfigDef.ValidList``: every element one of ``valid``."""

    valid: tuple[str, ...]
    allow_empty: bool = False

    def __call__(self, name: str, value: ConfigValue) -> None:
        assert isinstance(value, list)
        if not value and not self.allow_empty:
            raise ConfigException(name, value, "Empty list is not allowed")
        for item in value:
            if item not in self.valid:
                raise ConfigException(name, value, f"String must be one of: {', '.join(self.valid)}")

    def __str__(self) -> str:
        return f"[{', '.join(self.valid)}]"


# ---- keys and the table -----------------------------------------------------------------------

@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: Type
    default: ConfigValue
    validator: Validator | None
    importance: Importance
    doc: str
    implemented: bool = True
    internal: bool = False   # Kafka's ``defineInternal``: never described, never warned about
    prefix: bool = False     # matches every name starting with ``name``
    dynamic: Dynamic = Dynamic.READ_ONLY   # broker keys only (topic configs are all dynamic)

    def parse(self, name: str, value: object) -> ConfigValue:
        parsed = parse_type(name, value, self.type)
        if self.validator is not None:
            self.validator(name, parsed)
        return parsed


@dataclass(frozen=True)
class ParsedConfig:
    """The outcome of ``ConfigDef.parse``: typed values (every defined key) and the given keys
    the emulator will not act on, each with the reason (``UNKNOWN`` or ``NOT_IMPLEMENTED``)."""

    values: dict[str, ConfigValue]
    ignored: dict[str, str]


UNKNOWN = "unknown"
NOT_IMPLEMENTED = "not implemented by the emulator"
# The broker key that turns an ignored key (of the broker's or a topic's config) into an error
STRICT_CONFIG = "emulator.strict.config"


def ignored_message(name: str, reason: str, what: str = "configuration") -> str:
    """The one line that tells a user a given key has no effect (Kafka's ``logUnused`` wording
    for unknown keys)."""
    if reason == NOT_IMPLEMENTED:
        return f"The {what} '{name}' is defined by Kafka but not implemented by the emulator."
    return f"The {what} '{name}' was supplied but isn't a known config."


def strict_refusal(name: str, reason: str, what: str = "configuration") -> ConfigException:
    return ConfigException(f"{ignored_message(name, reason, what)} ({STRICT_CONFIG}=true refuses it)")


class ConfigDef:
    """An ordered table of ``ConfigKey`` plus Kafka's names the emulator does not define."""

    def __init__(self, keys: Iterable[ConfigKey], known_names: Iterable[str] = (),
                 known_prefixes: Iterable[str] = ()) -> None:
        self.keys: dict[str, ConfigKey] = {}
        self.prefix_keys: list[ConfigKey] = []
        for key in keys:
            if key.name in self.keys or key in self.prefix_keys:
                raise AssertionError(f"config {key.name} defined twice")
            if key.prefix:
                self.prefix_keys.append(key)
            else:
                self.keys[key.name] = key
        self.known_names = frozenset(known_names) - self.keys.keys()
        self.known_prefixes = tuple(known_prefixes)

    def key(self, name: str) -> ConfigKey | None:
        """The definition of ``name`` (exact, else the longest matching prefix key)."""
        found = self.keys.get(name)
        if found is not None:
            return found
        matches = [k for k in self.prefix_keys if name.startswith(k.name) and len(name) > len(k.name)]
        return max(matches, key=lambda k: len(k.name)) if matches else None

    def is_known(self, name: str) -> bool:
        """Kafka defines ``name`` but the emulator does not (``known_names``/``known_prefixes``)."""
        return name in self.known_names or name.startswith(self.known_prefixes)

    def defaults(self) -> dict[str, ConfigValue]:
        return {name: key.default for name, key in self.keys.items()}

    def parse(self, props: Mapping[str, object]) -> ParsedConfig:
        """Typed values for every defined key (given or default); given prefix keys too.

        A given value of None counts as not given (the default applies)."""
        values = self.defaults()
        ignored: dict[str, str] = {}
        for name, raw in props.items():
            if raw is None:
                continue
            key = self.key(name)
            if key is None:
                ignored[name] = NOT_IMPLEMENTED if self.is_known(name) else UNKNOWN
                continue
            values[name] = key.parse(name, raw)
            if not key.implemented:
                ignored[name] = NOT_IMPLEMENTED
        return ParsedConfig(values, ignored)
