"""The pure core: lineage walks, blast radius, blind window, verdicts, the incident state machine.

Standard library only; time is an argument; every list in an output is sorted.
"""
