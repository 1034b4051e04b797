"""What the roles decode with: the schema source and the change-log decoder they share."""

from __future__ import annotations

from collections.abc import Collection

from pareis.config import Settings
from pareis.contracts.records import RawMessage
from pareis.datahub.wire.changelog import ChangeLog
from pareis.datahub.wire.codec import Decoder as Codec
from pareis.datahub.wire.registry import SchemaSource, VendoredSchemaSource
from pareis.datahub.wire.schema_registry import RegistrySchemaSource
from pareis.datahub.writes.marks import is_own_write
from pareis.errors import DecodeError
from pareis.kafka.role import Decoder


def schema_source(settings: Settings, *, register: bool = False) -> SchemaSource:
    """The registry named in settings (``register``: registering subjects as DataHub's emitters do), else
    DataHub's internal-registry ids over the vendored schemas."""
    url = settings.kafka.schema_registry_url
    if url:
        return RegistrySchemaSource.connect(url, auto_register=register)
    return VendoredSchemaSource(settings.kafka.topics.mcl_timeseries)


def changelog_decoder(settings: Settings, aspects: Collection[str] | None = None) -> Decoder[ChangeLog]:
    """A decoder of MetadataChangeLog messages for a role.

    Filters (returns None) before the full decode when the aspect is not in ``aspects`` (None: keep all), and
    after it when the change is Pareis's own write coming back (:func:`~pareis.datahub.writes.marks.is_own_write`, the
    one rule for that). Errors are
    DecodeErrors located at the message. The filter and the decode are one pass (``Decoder.kept_mcl``), which
    builds only what the roles read: ``previous_aspect`` and ``headers`` are always None here, and
    ``system_metadata``/``created`` hold only the keys the roles read (``codec.ROLE_SYSTEM_METADATA``,
    ``codec.ROLE_CREATED``); the frames dropped and the errors raised are those of ``header`` +
    ``decode_mcl(previous=False)``.
    """
    codec = Codec(schema_source(settings))
    wanted = frozenset(aspects) if aspects is not None else None
    datahub = settings.datahub
    kept = codec.kept_mcl

    def decode(raw: RawMessage) -> ChangeLog | None:
        value = raw.value
        assert value is not None  # the runtime filters tombstones before decoding
        try:
            change = kept(value, wanted, raw.origin)
        except DecodeError as exc:
            if exc.origin is not None:
                raise
            raise exc.at(raw.origin) from exc
        if change is None:
            return None
        return None if is_own_write(change.system_metadata, change.created, datahub) else change

    return decode
