"""DataHub adapters, one room each: ``wire`` (the change log's Kafka format), ``files`` (file-format metadata),
``gms`` (what DataHub's server does, emulated or read), ``translate`` (aspects into the lineage index) and
``writes`` (Pareis's writes back to DataHub)."""
