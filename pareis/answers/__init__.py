"""The read side (DESIGN §6): every question a person or program asks Pareis, answered once.

Each module holds one kind of answer — :mod:`~pareis.answers.blast` (what a failure poisons),
:mod:`~pareis.answers.incidents` (incident analysis and the incident list), and the gate, reliability and evidence
answers beside them — computed with the core over a :class:`~pareis.answers.sources.Sources` value. Every answer is
a typed value whose ``to_json()`` is the contract the CLI (``--json``), the MCP server and Mission Control's
``/api`` print alike. Nothing here opens a connection or imports Kafka: the composition root
(:func:`pareis.compose.sources.open_sources`) opens sources; surfaces parse requests, call an answer, render it.
"""
