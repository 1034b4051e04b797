"""DataHub's Kafka wire format: Confluent-framed Avro, the pinned schemas, where a schema id is found, and the
decoded change-log records (fast header and full-record readers, plain proposals written straight to Avro)."""
