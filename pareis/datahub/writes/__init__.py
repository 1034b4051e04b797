"""Pareis's writes back to DataHub (DESIGN §3): the write port and its writers (Kafka, REST, memory), what an
incident intent and a reliability score write, the start-up definitions, Pareis's marks on its own writes, and the
documents it publishes (postmortems, evidence packs)."""
