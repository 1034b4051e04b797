"""A cheap change token of the incident state, for surfaces that follow it live (Mission Control's SSE).

Mission Control follows the **incident store** (not the MetadataChangeProposal topic): the incidents role writes a
dataset's state there in the same step as its Kafka transaction, so a state change is visible to the read side as
soon as the role has made it, with no consumer group of its own and no Kafka client in the web process. The token is
a digest of every ACTIVE state's (dataset, incident URN, revision): the role bumps the revision on every Open and
Update, and a Resolve takes the state out of the active set, so every new, changed or resolved incident changes the
token — one ``SMEMBERS`` + ``HMGET`` on Redis, however long the history. Sources opened from files have no incident
store and never change: their token is constant.

Two states with the same active incidents give the same token (nothing active before an incident opened and
after it resolved), so a follower compares each token with the previous one, not with every one it has seen
(Mission Control numbers the changes it observes). A change undone between two reads (an incident opened and
resolved within one poll) is not seen as a change.

A surface polls :func:`incidents_revision` (Mission Control: every 250 ms, once per server, not per client) and
re-renders only when the token differs from the last one it read.
"""

from __future__ import annotations

import hashlib

from pareis.answers.sources import Sources, SourceUnavailable

STATIC = "static"


def incidents_revision(sources: Sources) -> str:
    """The change token (16 hex digits), or :data:`STATIC` for sources without an incident store.

    Raises :class:`~pareis.answers.sources.SourceUnavailable` when the store can't be read."""
    if sources.incidents is None:
        return STATIC
    from pareis.errors import Fatal, Retriable

    try:
        states = sources.incidents.active()
    except (Retriable, Fatal) as exc:
        raise SourceUnavailable(str(exc)) from exc
    digest = hashlib.sha256()
    for state in states:
        tracked = state.incident
        urn, revision = (tracked.urn, tracked.revision) if tracked else ("", 0)
        digest.update(f"{state.dataset}\0{state.status.value}\0{urn}\0{revision}\n".encode())
    return digest.hexdigest()[:16]
