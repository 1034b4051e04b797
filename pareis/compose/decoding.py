"""What the roles decode with: the schema source and the change-log decoder they share."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from pareis.config import Settings
from pareis.errors import DecodeError
from pareis.kafka.role import Decoder
from pareis.model.records import RawMessage

if TYPE_CHECKING:
    from pareis.datahub.changelog import ChangeLog
    from pareis.datahub.registry import SchemaSource


def schema_source(settings: Settings, *, register: bool = False) -> SchemaSource:
    """The registry named in settings (``register``: registering subjects as DataHub's emitters do), else
    DataHub's internal-registry ids over the vendored schemas."""
    from pareis.datahub.registry import VendoredSchemaSource
    from pareis.datahub.schema_registry import RegistrySchemaSource

    url = settings.kafka.schema_registry_url
    if url:
        return RegistrySchemaSource.connect(url, auto_register=register)
    return VendoredSchemaSource(settings.kafka.topics.mcl_timeseries)


def changelog_decoder(settings: Settings, aspects: Collection[str] | None = None) -> Decoder[ChangeLog]:
    """A decoder of MetadataChangeLog messages for a role.

    Filters (returns None) before the full decode when the aspect is not in ``aspects`` (None: keep all), and
    after it when the change is Pareis's own write coming back (``systemMetadata.pipelineName``). Errors are
    DecodeErrors located at the message. The prior value is skipped (``decode_mcl(..., previous=False)``):
    ``previous_aspect`` is always None here, as no role reads it.
    """
    from pareis.datahub.codec import Decoder as Codec

    codec = Codec(schema_source(settings))
    wanted = frozenset(aspects) if aspects is not None else None
    own_pipeline = settings.datahub.pipeline_name

    def decode(raw: RawMessage) -> ChangeLog | None:
        value = raw.value
        assert value is not None  # the runtime filters tombstones before decoding
        try:
            if wanted is not None and codec.header(value).aspect_name not in wanted:
                return None
            change = codec.decode_mcl(value, raw.origin, previous=False)
        except DecodeError as exc:
            if exc.origin is not None:
                raise
            raise exc.at(raw.origin) from exc
        system = change.system_metadata
        if system is not None and system.get("pipelineName") == own_pipeline:
            return None
        return change

    return decode
