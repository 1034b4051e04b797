"""The behaviour of the roles that turn assertion runs into incidents and deliver them: assertions, incidents,
effects (their handlers and decoders, over injected ports; pure with respect to Kafka), and the formats of
Pareis's own topics (:mod:`pareis.roles.messages`). :mod:`pareis.compose` wires them to concrete adapters.
"""
