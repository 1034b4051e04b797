"""The DataHub write port: where Pareis's proposals go, and the two writers that need no network.

Which writer runs follows ``datahub.write_path``:

* ``kafka`` — :class:`KafkaWriter` in the incidents role: it delivers nothing itself, it returns the encoded
  ``MetadataChangeProposal_v1`` records (key = entity URN, as ``DatahubKafkaEmitter`` keys them) for the role to
  produce in the same Kafka transaction as its input offsets, so a write commits exactly once with the step
  that caused it;
* ``rest`` — :class:`pareis.datahub.writes.rest.RestWriter` in the effects role (at-least-once; redelivery is harmless
  because every write is an UPSERT of a deterministic value or an idempotent PATCH);
* :class:`MemoryWriter` for tests and the demo.

What to write comes from :mod:`pareis.datahub.writes.incident_writes` (incident intents) and
:mod:`pareis.datahub.writes.definitions` (start-up definitions).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import MetadataChangeProposalClass

from pareis.contracts.records import OutRecord

if TYPE_CHECKING:
    from pareis.datahub.wire.registry import SchemaSource

Mcp: TypeAlias = MetadataChangeProposalWrapper | MetadataChangeProposalClass
"""A proposal: a wrapper (full aspect, UPSERT) or acryl's raw class (what its PATCH builders produce)."""

DEFAULT_MCP_TOPIC = "MetadataChangeProposal_v1"


@dataclass(frozen=True, slots=True)
class SerialMcp:
    """A proposal built straight in its serial form, without acryl's classes
    (:mod:`pareis.datahub.writes.incident_serial`):
    ``record`` is the Avro-shaped ``MetadataChangeProposal`` that ``to_obj(tuples=True)`` of the equivalent acryl
    proposal gives, union branches left for the encoder to pick by type (the same bytes once encoded). Only a
    :class:`SerialWriter` takes one."""

    entityUrn: str
    aspectName: str
    record: dict[str, Any]

    def to_obj(self, tuples: bool = True) -> dict[str, Any]:
        """The Avro-shaped record (what :meth:`pareis.datahub.wire.codec.Encoder.encode_mcp` encodes)."""
        return self.record


@runtime_checkable
class DatahubWriter(Protocol):
    """Writes proposals to DataHub, in the order given.

    :meth:`write` returns the Kafka records the caller must produce itself (in its transaction), or ``()`` when
    the writer delivered the proposals. It raises only :class:`~pareis.errors.Retriable` (DataHub unreachable,
    5xx, 429), :class:`~pareis.errors.Poison` (a proposal DataHub refuses, with its answer) or
    :class:`~pareis.errors.Fatal` (credentials refused, misconfiguration). Writing the same proposals twice
    leaves DataHub as writing them once.
    """

    def write(self, mcps: Sequence[Mcp]) -> tuple[OutRecord, ...]: ...


@runtime_checkable
class SerialWriter(Protocol):
    """A writer that also takes proposals in serial form (:class:`SerialMcp`, mixed with acryl ones): the Kafka
    writer, whose records are the proposals' bytes; the incidents role then skips acryl's classes."""

    def write_serial(self, mcps: Sequence[Mcp | SerialMcp]) -> tuple[OutRecord, ...]: ...


@runtime_checkable
class AspectReader(Protocol):
    """A writer that can also read an aspect back (the REST writer): what keeps human edits of ``incidentInfo``
    (:mod:`pareis.datahub.writes.incident_merge`). Errors as :class:`DatahubWriter`'s."""

    def read_aspect(self, entity_urn: str, aspect_name: str) -> dict[str, Any] | None:
        """The aspect's current value as Pegasus JSON; None when the entity has none."""
        ...


class MemoryWriter:
    """Records every proposal it is given (as copies), for tests and the demo; delivers nothing."""

    def __init__(self) -> None:
        self.proposals: list[Mcp] = []

    def write(self, mcps: Sequence[Mcp]) -> tuple[OutRecord, ...]:
        self.proposals.extend(copy_mcp(mcp) for mcp in mcps)
        return ()

    def aspects(self, entity_urn: str) -> list[str]:
        """The aspect names written for ``entity_urn``, in write order."""
        return [str(m.aspectName) for m in self.proposals if m.entityUrn == entity_urn]

    def lists_incidents(self, kind: str, urn: str) -> bool:
        """As a server that accepts every write, it lists incidents on every entity type (the start-up probe's
        :class:`~pareis.datahub.writes.capabilities.IncidentLister`)."""
        return True


class McpEncoder(Protocol):
    """Serialises a proposal as a Kafka record value: :meth:`pareis.datahub.wire.codec.Encoder.encode_mcp`."""

    def encode_mcp(self, mcp: Any, topic: str | None = None) -> bytes: ...


class KafkaWriter:
    """Turns proposals into ``MetadataChangeProposal_v1`` records for the caller's transactional producer.

    ``encoder`` frames each proposal exactly as ``DatahubKafkaEmitter`` would (Confluent framing + Avro). The
    record key is the entity URN (UTF-8), so all of one entity's proposals stay ordered in one partition.
    Encoding failures surface as the encoder's errors (a proposal off-schema is :class:`~pareis.errors.Poison`).
    """

    def __init__(self, encoder: McpEncoder, topic: str = DEFAULT_MCP_TOPIC) -> None:
        self._encoder = encoder
        self.topic = topic

    @classmethod
    def from_source(cls, source: SchemaSource, topic: str = DEFAULT_MCP_TOPIC) -> KafkaWriter:
        """A writer encoding with :class:`pareis.datahub.wire.codec.Encoder` over ``source`` (registry or vendored)."""
        from pareis.datahub.wire.codec import Encoder

        return cls(Encoder(source, topic), topic)

    def write(self, mcps: Sequence[Mcp]) -> tuple[OutRecord, ...]:
        return tuple(self.record(mcp) for mcp in mcps)

    def write_serial(self, mcps: Sequence[Mcp | SerialMcp]) -> tuple[OutRecord, ...]:
        """:meth:`write` of proposals some or all of which are in serial form (the same records)."""
        return tuple(self.record(mcp) for mcp in mcps)

    def record(self, mcp: Mcp | SerialMcp) -> OutRecord:
        if not mcp.entityUrn:
            raise ValueError(f"proposal of {mcp.aspectName} has no entity URN to key it by")
        value = self._encoder.encode_mcp(mcp, self.topic)
        return OutRecord(topic=self.topic, key=mcp.entityUrn.encode("utf-8"), value=value)


def copy_mcp(mcp: Mcp) -> Mcp:
    """A deep copy through acryl's own serial form (emitters mutate the system metadata they are given)."""
    if isinstance(mcp, MetadataChangeProposalWrapper):
        return MetadataChangeProposalWrapper.from_obj(mcp.to_obj())
    return MetadataChangeProposalClass.from_obj(mcp.to_obj())


def validate_all(mcps: Iterable[Mcp]) -> None:
    """Raise ValueError naming the first proposal acryl-datahub's own validation rejects."""
    for mcp in mcps:
        if not mcp.validate():
            raise ValueError(f"invalid proposal {mcp.changeType} {mcp.aspectName} on {mcp.entityUrn}")
