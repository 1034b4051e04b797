"""Role handlers: the behaviour of each consumer role, wired into pipelines by :mod:`pareis.bootstrap`."""
