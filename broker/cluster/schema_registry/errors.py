"""Confluent Schema Registry's REST errors: HTTP status, ``error_code`` and message.

Every refusal is one ``RestError`` whose ``payload`` is Confluent's ``ErrorMessage`` shape,
``{"error_code": 40401, "message": "Subject 'x' not found."}``. The codes and message formats are
the ones of Confluent's ``rest.exceptions.Errors`` and the ``Rest*Exception`` classes (one fact,
stated here once); 50005 is the code Confluent's REST layer gives a request body it cannot parse
as JSON (``JsonParseExceptionMapper``, status 400 in Jersey's mapping, code 50005).
"""
from __future__ import annotations

from typing import Any

SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403
SUBJECT_SOFT_DELETED = 40404
SUBJECT_NOT_SOFT_DELETED = 40405
SCHEMAVERSION_SOFT_DELETED = 40406
SCHEMAVERSION_NOT_SOFT_DELETED = 40407
SUBJECT_COMPATIBILITY_NOT_CONFIGURED = 40408
SUBJECT_MODE_NOT_CONFIGURED = 40409
INCOMPATIBLE_SCHEMA = 409          # RestIncompatibleSchemaException's default code is the status
INVALID_SCHEMA = 42201
INVALID_VERSION = 42202
INVALID_COMPATIBILITY_LEVEL = 42203
INVALID_MODE = 42204
OPERATION_NOT_PERMITTED = 42205
REFERENCE_EXISTS = 42206
ID_DOES_NOT_MATCH = 42207
INVALID_SUBJECT = 42208
SCHEMA_TOO_LARGE = 42209
STORE_ERROR = 50001
OPERATION_TIMEOUT = 50002
JSON_PARSE_ERROR = 50005

COMPATIBILITY_LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE",
                        "FULL", "FULL_TRANSITIVE")
MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")


class RestError(Exception):
    """One refusal: ``status`` (HTTP), ``error_code`` and ``message`` as Confluent answers them."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message

    @property
    def payload(self) -> dict[str, Any]:
        return {"error_code": self.error_code, "message": self.message}


def status_of(error_code: int) -> int:
    """The HTTP status of a Confluent error code (40401 -> 404; a 3-digit code is its own)."""
    return error_code if error_code < 1000 else error_code // 100


def subject_not_found(subject: str | None) -> RestError:
    return RestError(404, SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")


def version_not_found(version: int) -> RestError:
    return RestError(404, VERSION_NOT_FOUND, f"Version {version} not found.")


def schema_not_found(schema_id: int | None = None) -> RestError:
    message = "Schema not found" if schema_id is None else f"Schema {schema_id} not found"
    return RestError(404, SCHEMA_NOT_FOUND, message)


def subject_soft_deleted(subject: str) -> RestError:
    return RestError(404, SUBJECT_SOFT_DELETED,
                     f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently")


def subject_not_soft_deleted(subject: str) -> RestError:
    return RestError(404, SUBJECT_NOT_SOFT_DELETED,
                     f"Subject '{subject}' was not deleted first before being permanently deleted")


def version_soft_deleted(subject: str, version: int) -> RestError:
    return RestError(404, SCHEMAVERSION_SOFT_DELETED, f"Subject '{subject}' Version {version} was soft "
                     "deleted.Set permanent=true to delete permanently")


def version_not_soft_deleted(subject: str, version: int) -> RestError:
    return RestError(404, SCHEMAVERSION_NOT_SOFT_DELETED, f"Subject '{subject}' Version {version} was "
                     "not deleted first before being permanently deleted")


def compatibility_not_configured(subject: str) -> RestError:
    return RestError(404, SUBJECT_COMPATIBILITY_NOT_CONFIGURED,
                     f"Subject '{subject}' does not have subject-level compatibility configured")


def mode_not_configured(subject: str) -> RestError:
    return RestError(404, SUBJECT_MODE_NOT_CONFIGURED,
                     f"Subject '{subject}' does not have subject-level mode configured")


def incompatible_schema(subject: str, messages: list[str]) -> RestError:
    return RestError(409, INCOMPATIBLE_SCHEMA, "Schema being registered is incompatible with an earlier "
                     f"schema for subject \"{subject}\", details: [{', '.join(messages)}]")


def invalid_schema(message: str) -> RestError:
    return RestError(422, INVALID_SCHEMA, message)


def invalid_version(version: str) -> RestError:
    return RestError(422, INVALID_VERSION, f"The specified version '{version}' is not a valid version id. "
                     "Allowed values are between [1, 2^31-1] and the string \"latest\"")


def invalid_compatibility_level() -> RestError:
    return RestError(422, INVALID_COMPATIBILITY_LEVEL, "Invalid compatibility level. Valid values are none, "
                     "backward, forward, full, backward_transitive, forward_transitive, and full_transitive")


def invalid_mode(message: str = "Invalid mode. Valid values are READWRITE, READONLY, IMPORT and FORWARD."
                 ) -> RestError:
    return RestError(422, INVALID_MODE, message)


def operation_not_permitted(message: str) -> RestError:
    return RestError(422, OPERATION_NOT_PERMITTED, message)


def reference_exists(key: str) -> RestError:
    return RestError(422, REFERENCE_EXISTS, f"One or more references exist to the schema {key}.")


def id_does_not_match(message: str = "The ID of an imported schema does not match the existing ID"
                      ) -> RestError:
    return RestError(422, ID_DOES_NOT_MATCH, message)


def invalid_subject(subject: str) -> RestError:
    return RestError(422, INVALID_SUBJECT, f"The specified subject '{subject}' is not a valid.")


def schema_too_large() -> RestError:
    return RestError(422, SCHEMA_TOO_LARGE, "Register operation failed because schema is too large")


def store_error(message: str) -> RestError:
    return RestError(500, STORE_ERROR, message)

