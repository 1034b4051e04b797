"""The pure core: lineage walks, blast radius, blind window, verdicts, the incident state machine.

Standard library only; time is an argument; every list in an output is sorted.

The walks' modules are compiled to C extensions by mypyc at install (``pyproject.toml`` ``[tool.pareis] compiled``):
the same source, checked against its annotations at run time, so they must be exact (a ``frozenset & dict_keys`` is a
``set``, whatever the stubs say).
"""
