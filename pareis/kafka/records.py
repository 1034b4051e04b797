"""Re-exports :mod:`pareis.model.records` (the messages and records that flow through a role), their home since
the adapters stopped importing each other."""

from pareis.model.records import Headers, Message, OutRecord, RawMessage, header

__all__ = ["Headers", "Message", "OutRecord", "RawMessage", "header"]
