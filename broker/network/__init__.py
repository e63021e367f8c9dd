"""Kafka's network layer (``kafka.network``): the ``SocketServer`` with its acceptor and processor
threads, and the ``RequestChannel`` that carries requests to the handler pool and responses back.

Import the modules themselves: this package imports none of them, so that taking the request
channel's types does not start the socket server's imports.
"""
