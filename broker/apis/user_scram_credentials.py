"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554; Kafka's
``handleDescribeUserScramCredentialsRequest`` over the metadata's SCRAM credentials and the
controller's ``ScramControlManager.alterCredentials``).

Alter: ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED per user). A user named twice in
one request: DUPLICATE_RESOURCE; an empty name or unknown mechanism: UNACCEPTABLE_CREDENTIAL /
UNSUPPORTED_SASL_MECHANISM; fewer iterations than the mechanism's minimum (4096) or more than
16384: UNACCEPTABLE_CREDENTIAL; deleting a credential that does not exist: RESOURCE_NOT_FOUND.
The valid alterations apply together; the controller keeps the salt, StoredKey, ServerKey and
iterations, never the salted password. Describe: DESCRIBE on the cluster (else a top-level
CLUSTER_AUTHORIZATION_FAILED); no users named (null or empty) lists every user with credentials;
a named user without any: RESOURCE_NOT_FOUND; a user named twice: DUPLICATE_RESOURCE.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.broker.security.scram import MAX_ITERATIONS, ScramCredential, ScramFormatter, ScramMechanism
from kafka_emu.broker.server.auth_helper import CLUSTER, Op, authorize
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.network.request_channel import Request
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.server.metadata_store import ScramKey

_TWICE = "A user credential cannot be altered twice in the same request"


def handle_describe_user_scram_credentials(apis: KafkaApis, request: Request) -> None:
    cls = response_schema(ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, request.api_version)
    if not authorize(apis, request, Op.DESCRIBE, CLUSTER):
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=Errors.CLUSTER_AUTHORIZATION_FAILED,
                                     error_message=None, results=()))
        return
    result_cls = item_cls(cls, "results")
    info_cls = item_cls(result_cls, "credential_infos")
    by_user: dict[str, list[tuple[ScramMechanism, int]]] = {}
    for (user, mechanism), credential in sorted(apis.metadata.scram_credentials().items(),
                                                key=lambda kv: (kv[0][0], kv[0][1].type)):
        by_user.setdefault(user, []).append((mechanism, credential.iterations))
    names = [u.name for u in request.body.users] if request.body.users else list(by_user)
    results = []
    for name in dict.fromkeys(names):
        if names.count(name) > 1:
            code, message, infos = Errors.DUPLICATE_RESOURCE, ("Cannot describe SCRAM credentials for the same "
                                                               f"user twice in a single request: {name}"), []
        elif name not in by_user:
            code, message, infos = (Errors.RESOURCE_NOT_FOUND,
                                    f"Attempt to describe a user credential that does not exist: {name}", [])
        else:
            code, message, infos = Errors.NONE, None, by_user[name]
        results.append(build(result_cls, user=name, error_code=code, error_message=message, credential_infos=tuple(
            build(info_cls, mechanism=m.type, iterations=i) for m, i in infos)))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=Errors.NONE, error_message=None,
                                 results=tuple(results)))


def _validate(name: str, mechanism: ScramMechanism | None) -> tuple[int, str] | None:
    if not name:
        return Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism is None:
        return Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def handle_alter_user_scram_credentials(apis: KafkaApis, request: Request) -> None:
    body = request.body
    cls = response_schema(ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, request.api_version)
    result_cls = item_cls(cls, "results")
    users = [d.name for d in body.deletions] + [u.name for u in body.upsertions]
    if not authorize(apis, request, Op.ALTER, CLUSTER):
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, results=tuple(
            build(result_cls, user=u, error_code=Errors.CLUSTER_AUTHORIZATION_FAILED, error_message=None)
            for u in dict.fromkeys(users))))
        return
    outcome: dict[str, tuple[int, str | None]] = {}

    def alter(current: dict[ScramKey, ScramCredential]) -> dict[ScramKey, ScramCredential]:
        outcome.clear()
        errors: dict[str, tuple[int, str]] = {}
        deletions: dict[str, ScramMechanism] = {}
        upserts: dict[str, tuple[ScramMechanism, ScramCredential]] = {}
        for d in body.deletions:
            if d.name in errors:
                continue
            mechanism = ScramMechanism.from_type(int(d.mechanism))
            if deletions.pop(d.name, None) is not None:
                errors[d.name] = (Errors.DUPLICATE_RESOURCE, _TWICE)
            elif (problem := _validate(d.name, mechanism)) is not None:
                errors[d.name] = problem
            elif (d.name, mechanism) not in current:
                errors[d.name] = (Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
            else:
                deletions[d.name] = mechanism   # type: ignore[assignment]
        for u in body.upsertions:
            if u.name in errors:
                continue
            mechanism = ScramMechanism.from_type(int(u.mechanism))
            if deletions.pop(u.name, None) is not None or upserts.pop(u.name, None) is not None:
                errors[u.name] = (Errors.DUPLICATE_RESOURCE, _TWICE)
            elif (problem := _validate(u.name, mechanism)) is not None:
                errors[u.name] = problem
            elif int(u.iterations) < mechanism.min_iterations:   # type: ignore[union-attr]
                errors[u.name] = (Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
            elif int(u.iterations) > MAX_ITERATIONS:
                errors[u.name] = (Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
            else:
                formatter = ScramFormatter(mechanism)   # type: ignore[arg-type]
                upserts[u.name] = (mechanism, formatter.credential_from_salted(  # type: ignore[assignment]
                    bytes(u.salt), bytes(u.salted_password), int(u.iterations)))
        new = dict(current)
        for name, mechanism in deletions.items():
            del new[(name, mechanism)]
            outcome[name] = (Errors.NONE, None)
        for name, (mechanism, credential) in upserts.items():
            new[(name, mechanism)] = credential
            outcome[name] = (Errors.NONE, None)
        outcome.update(errors)
        return new

    apis.metadata.alter_scram_credentials(alter)
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, results=tuple(
        build(result_cls, user=user, error_code=code, error_message=message)
        for user, (code, message) in outcome.items())))


APIS = (ApiSpec(ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0,
                handle_describe_user_scram_credentials),
        ApiSpec(ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, 0, 0, handle_alter_user_scram_credentials))
