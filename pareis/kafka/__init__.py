"""Kafka adapters: the only package that uses the Kafka clients (consumer, producer, admin); the schema registry
client is :mod:`pareis.datahub.wire.schema_registry`'s."""
