"""Tickets inside DataHub (DESIGN §3): each ticket's link on the incident's ``incidentExternalLinks``, each comment
Pareis writes on a ticket mirrored to its ``incidentNotes``, so DataHub's incident shows where the work happens.

Both are PATCH proposals in the generic JSON-patch form GMS accepts (``{"arrayPrimaryKeys": …, "patch": […]}``,
:mod:`pareis.datahub.gms.patch`), one ``add`` per entry keyed so that writing it again replaces it and nothing else:

* a link is keyed by its ``system`` (the tool) and ``externalId`` (the ticket's id in the tool: a Jira key, a Linear
  issue id, a Slack channel/ts) — two tools may number their tickets alike (the demo's in-memory tools do);
* a note is keyed by its source's ``externalId`` (the comment's id: the key it carries in the tool, see
  :class:`~pareis.tickets.delivery.Posted`), then its ``created`` actor and time. The incident's notes also hold
  those people write in DataHub, which have no source: keyed by the source alone they would all share one empty
  key and the patch would keep one of them. With the author and the time, each person's note keeps its own key.

Every entry is built with acryl-datahub's classes (``IncidentExternalLinkClass``, ``IncidentNoteClass``) and
validated before it is written. Stamps use the time of the intent that caused the ticket effect, so writing an
entry again writes the same bytes.
"""

from __future__ import annotations

from datahub.emitter.mcp_patch_builder import UNIT_SEPARATOR, MetadataPatchProposal
from datahub.metadata.schema_classes import (
    IncidentExternalLinkClass,
    IncidentExternalLinksClass,
    IncidentNoteClass,
    IncidentNotesClass,
    IncidentNoteSourceClass,
    IncidentNoteSourceTypeClass,
    MetadataChangeProposalClass,
)

from pareis.config import DatahubSettings
from pareis.datahub.writes.marks import stamp, system_metadata

LINK_KEYS = {"links": ["system", "externalId"]}
NOTE_KEYS = {
    "notes": [f"source{UNIT_SEPARATOR}externalId", f"created{UNIT_SEPARATOR}actor", f"created{UNIT_SEPARATOR}time"]
}


class _IncidentPatch(MetadataPatchProposal):
    """acryl's patch builder over an incident URN, for the two aspects it has no helper for."""

    def add_link(self, link: IncidentExternalLinkClass) -> None:
        self._add_patch(
            IncidentExternalLinksClass.ASPECT_NAME,
            "add",
            ("links", link.system, link.externalId),
            link,
            array_primary_keys=LINK_KEYS,
        )

    def add_note(self, note: IncidentNoteClass) -> None:
        source = note.source
        assert source is not None and source.externalId is not None
        key = (source.externalId, note.created.actor, str(note.created.time))
        self._add_patch(IncidentNotesClass.ASPECT_NAME, "add", ("notes", *key), note, array_primary_keys=NOTE_KEYS)


def link_patch(
    settings: DatahubSettings, incident: str, system: str, external_id: str, url: str, *, at_ms: int, effect_id: str
) -> MetadataChangeProposalClass:
    """The PATCH adding (or rewriting) the link to ``system``'s ticket ``external_id`` at ``url``; ValueError when
    acryl-datahub's class refuses it."""
    link = IncidentExternalLinkClass(
        connectionId=f"pareis-{system}",
        system=system,
        externalId=external_id,
        url=url,
        created=stamp(settings, at_ms),
        syncEnabled=False,  # Pareis writes to the ticket; nothing syncs back
    )
    if not link.validate():
        raise ValueError(f"invalid incident link {system}/{external_id} on {incident}")
    patch = _IncidentPatch(incident, system_metadata=system_metadata(settings, effect_id, at_ms))
    patch.add_link(link)
    return _one(patch)


def note_patch(
    settings: DatahubSettings,
    incident: str,
    message: str,
    external_id: str,
    url: str | None,
    *,
    at_ms: int,
    effect_id: str,
) -> MetadataChangeProposalClass:
    """The PATCH adding (or rewriting) the note mirroring the ticket comment ``external_id`` (``url``: the ticket);
    ValueError when acryl-datahub's class refuses it."""
    note = IncidentNoteClass(
        message=message,
        created=stamp(settings, at_ms),
        source=IncidentNoteSourceClass(
            sourceType=IncidentNoteSourceTypeClass.EXTERNAL, externalUrl=url, externalId=external_id
        ),
    )
    if not note.validate():
        raise ValueError(f"invalid incident note {external_id} on {incident}")
    patch = _IncidentPatch(incident, system_metadata=system_metadata(settings, effect_id, at_ms))
    patch.add_note(note)
    return _one(patch)


def _one(patch: _IncidentPatch) -> MetadataChangeProposalClass:
    (mcp,) = patch.build()
    return mcp
