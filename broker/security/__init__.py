"""Kafka's security layer (``org.apache.kafka.common.security`` and the metadata module's
authorizer): listeners' security protocols, TLS, SASL (PLAIN, SCRAM, OAUTHBEARER), principals
and the ``StandardAuthorizer``.

Import the modules themselves; this package imports none of them.
"""
