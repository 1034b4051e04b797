"""Mission Control (``pareis serve``): server-rendered pages over the answers layer, live over server-sent events.

:mod:`~pareis.web.app` builds the Starlette application from an opened
:class:`~pareis.answers.sources.Sources`; :mod:`~pareis.web.pages` renders the answers (templates in
``templates/``, vendored htmx, its SSE extension and cytoscape in ``static/vendor/``), asked through
:mod:`~pareis.web.context` (the answers kept between requests) and shown by :mod:`~pareis.web.present` (names, times,
the timeline, the decision panel); :mod:`~pareis.web.live` follows the incident store and pushes changes;
:mod:`~pareis.web.guard` holds the token check. Nothing here reads a store, Kafka or settings: only
``pareis.answers.*`` (and pure functions of ``pareis.core``: the one rule for short names).
"""
