"""The composition root: the only place that turns settings into concrete adapters and starts them.

* :mod:`~pareis.compose.ports` — :class:`~pareis.compose.ports.Ports`, every role's ports, in memory or on Redis;
* :mod:`~pareis.compose.datahub` — the DataHub writer, chosen once from ``datahub.write_path``, and its route;
* :mod:`~pareis.compose.decoding` — the schema source and the change-log decoder the roles share;
* :mod:`~pareis.compose.roles` — the role registry (every entry point reads it) and the roles' pipelines;
* :mod:`~pareis.compose.process` — running roles: threads, signals, telemetry;
* :mod:`~pareis.compose.replay` — the replayer and the Kafka publisher of ``pareis replay``;
* :mod:`~pareis.compose.sources` — the read side's :class:`~pareis.answers.sources.Sources`, opened from files,
  Redis or GMS;
* :mod:`~pareis.compose.publish` — writing a read-side answer to DataHub.

Nothing here runs at import time, and nothing outside this package imports a concrete adapter to wire it.
"""
