"""Plain data and ports shared by the adapters, so that no adapter imports another (the import contracts in
``pyproject.toml`` hold this): what flows through a role (:mod:`~pareis.contracts.records`), what the lineage index
stores (:mod:`~pareis.contracts.lineage`), the effect ledger's port (:mod:`~pareis.contracts.ledger`) and the reading of
an HTTP answer's headers every HTTP adapter shares (:mod:`~pareis.contracts.http`). Standard library and
:mod:`pareis.core` / :mod:`pareis.errors` only."""
