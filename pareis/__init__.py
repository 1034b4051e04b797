"""Pareis: ML incidents from DataHub's change log.

Importing this package connects to nothing and reads no settings; see :mod:`pareis.compose` (the composition root).
"""

__version__ = "0.1.0"
