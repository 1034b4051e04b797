"""The REST write path: proposals sent to GMS through acryl-datahub's ``DatahubRestEmitter`` (effects role).

The emitter talks to GMS as DataHub's own SDK does: ``GET /config`` once (to check it is GMS and to choose the
endpoint), then per proposal either Rest.li ``POST /aspects?action=ingestProposal`` or the OpenAPI
``/openapi/v3/entity/<type>`` endpoints (POST for UPSERT, PATCH for PATCH). Proposals go one at a time, in
order, synchronously (``EmitMode.SYNC_PRIMARY``): a failure names the proposal GMS refused, and the order of
writes is the order given (a batch on the OpenAPI path would be regrouped by entity type).

The emitter's own retries are off: retrying is the runtime's job (backoff, DLQ), and it can only do it if
errors arrive at once and classified. Errors leave as :mod:`pareis.errors` types:

* no answer (connection refused, reset, timeout), 408, 425, 429 and 5xx → :class:`~pareis.errors.Retriable`
  (with ``Retry-After`` when GMS sent one);
* 401 → :class:`~pareis.errors.Fatal`: the configured token itself is refused, and every later write would
  fail alike (see :mod:`pareis.tickets.failures` for the same rule on ticket tools);
* any other 4xx → :class:`GmsRejected` (a :class:`~pareis.errors.Poison`) with GMS's answer;
* an endpoint that is not GMS (e.g. the frontend) → :class:`~pareis.errors.Fatal`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import requests
from datahub.cli.cli_utils import fixup_gms_url
from datahub.configuration.common import ConfigurationError, OperationalError
from datahub.emitter.rest_emitter import DataHubRestEmitter, EmitMode
from datahub.utilities.urns.urn import Urn

from pareis.config import DatahubSettings
from pareis.contracts.http import header, retry_after_seconds
from pareis.contracts.records import OutRecord
from pareis.datahub.writes.writer import Mcp, copy_mcp
from pareis.errors import Fatal, PareisError, Poison, Retriable

_RETRIABLE_STATUS = frozenset({408, 425, 429})
_BODY_LIMIT = 2000
_CONFIG_STATUS = re.compile(r"status_code: (\d{3})")


class GmsRejected(Poison):
    """GMS refused a proposal for good: the HTTP status and GMS's answer (its ``message`` when JSON)."""

    def __init__(self, what: str, status: int, body: str) -> None:
        self.status = status
        self.body = body[:_BODY_LIMIT]
        super().__init__(f"GMS rejected {what}: HTTP {status}: {self.body}")


class RestWriter:
    """A :class:`~pareis.datahub.writes.writer.DatahubWriter` that delivers proposals to GMS over HTTP.

    ``openapi``: force the OpenAPI (True) or Rest.li (False) endpoints; None lets the server's ``/config``
    decide, as acryl's SDK does. Nothing connects until the first :meth:`write`.
    """

    def __init__(
        self,
        gms_url: str,
        token: str | None = None,
        *,
        openapi: bool | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self._url = fixup_gms_url(gms_url)
        """The URL as the emitter uses it (acryl's normalisation), for the reads the emitter does not wrap."""
        self._emitter = DataHubRestEmitter(
            gms_server=gms_url,
            token=token,
            openapi_ingestion=openapi,
            timeout_sec=timeout_s,
            retry_max_times=0,
            retry_status_codes=[],
        )
        self._connected = False

    @classmethod
    def from_settings(cls, settings: DatahubSettings) -> RestWriter:
        """A writer for ``settings.gms_url`` with ``settings.token``; Fatal when no GMS URL is configured."""
        if not settings.gms_url:
            raise Fatal("datahub.write_path is rest but datahub.gms_url is not set")
        token = settings.token.get_secret_value() if settings.token else None
        return cls(settings.gms_url, token)

    def write(self, mcps: Sequence[Mcp]) -> tuple[OutRecord, ...]:
        """Send each proposal in order; raise at the first failure (earlier ones stay written)."""
        if mcps and not self._connected:
            self._connect()
        for mcp in mcps:
            what = f"{mcp.changeType} {mcp.aspectName} of {mcp.entityUrn}"
            try:
                # A copy: the emitter stamps client properties into the system metadata it is given.
                self._emitter.emit_mcp(copy_mcp(mcp), emit_mode=EmitMode.SYNC_PRIMARY)
            except (OperationalError, requests.RequestException) as exc:
                raise from_rest_error(exc, what) from exc
        return ()

    def read_aspect(self, entity_urn: str, aspect_name: str) -> dict[str, Any] | None:
        """The latest value of an aspect (Pegasus JSON), None when there is none (404): Rest.li ``GET
        /aspects/<urn>?aspect=<name>&version=0``, what acryl's ``DataHubGraph.get_aspect`` asks, on the emitter's
        session (its token and timeouts)."""
        if not self._connected:
            self._connect()
        what = f"GET {aspect_name} of {entity_urn}"
        url = f"{self._url}/aspects/{Urn.url_encode(entity_urn)}?aspect={aspect_name}&version=0"
        try:
            response = self._emitter.session.get(url)
            if response.status_code == 404:
                return None
            response.raise_for_status()
            found = response.json()
        except requests.RequestException as exc:
            raise from_rest_error(exc, what) from exc
        except ValueError as exc:
            raise Retriable(f"GMS answered non-JSON to {what}") from exc
        values = found.get("aspect") if isinstance(found, dict) else None
        if not isinstance(values, dict) or len(values) != 1:
            raise GmsRejected(what, response.status_code, response.text)
        (value,) = values.values()
        return value if isinstance(value, dict) else None

    def close(self) -> None:
        self._emitter.close()

    def _connect(self) -> None:
        try:
            self._emitter.test_connection()
        except (ConfigurationError, requests.RequestException) as exc:
            raise from_rest_error(exc, "GET /config") from exc
        self._connected = True


def from_rest_error(exc: BaseException, what: str) -> PareisError:
    """The Pareis error for an exception raised by acryl's REST emitter while doing ``what``."""
    if isinstance(exc, ConfigurationError):
        return _config_error(exc, what)
    response = _response(exc)
    if response is None:
        if isinstance(exc, requests.RequestException) or isinstance(exc.__cause__, requests.RequestException):
            return Retriable(f"GMS unreachable during {what}: {_message(exc)}")
        # The emitter refused the proposal itself, before any request (e.g. an unsupported DELETE).
        return Poison(f"cannot send {what}: {_message(exc)}")
    status, body = response.status_code, response.text
    if status >= 500 or status in _RETRIABLE_STATUS:
        hint = retry_after_seconds(header(dict(response.headers), "Retry-After"))
        return Retriable(f"GMS answered HTTP {status} to {what}: {body[:200]}", retry_after=hint)
    if status == 401:
        return Fatal(f"GMS refused the configured token ({what}): HTTP 401: {body[:_BODY_LIMIT]}")
    return GmsRejected(what, status, body)


def _response(exc: BaseException) -> requests.Response | None:
    for candidate in (exc, exc.__cause__):
        response = getattr(candidate, "response", None)
        if isinstance(candidate, requests.RequestException) and isinstance(response, requests.Response):
            return response
    return None


def _config_error(exc: ConfigurationError, what: str) -> PareisError:
    text = str(exc)
    found = _CONFIG_STATUS.search(text)
    status = int(found.group(1)) if found else None
    if "authentication error" in text or status == 401:
        return Fatal(f"GMS refused the configured token ({what}): {text}")
    if status is not None and (status >= 500 or status in _RETRIABLE_STATUS):
        return Retriable(f"GMS answered HTTP {status} to {what}")
    return Fatal(f"{what}: the configured gms_url does not answer as DataHub GMS: {text}")


def _message(exc: BaseException) -> str:
    return getattr(exc, "message", None) or str(exc) or type(exc).__name__
