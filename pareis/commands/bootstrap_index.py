"""``pareis bootstrap``: fill the live lineage index (and run history) in Redis from DataHub file-format files.

For a fresh deployment, or to catch an index up without replaying the change log: every proposal goes through
the lineage role's own translation (:mod:`pareis.lineage_loader`), so the index equals the one the role builds
from the same changes, and loading is idempotent (a repeated load reports its updates as unchanged; an older
aspect version never overwrites a newer one already indexed). Assertion runs are recorded in the run history,
idempotent by (assertion, timestamp).

Exit codes: 0 loaded; 1 Redis unreachable or failing (nothing is rolled back: loading again is safe); 2 an
unreadable file (nothing after the bad element is loaded).
"""

from __future__ import annotations

import typer
from rich.console import Console

from pareis.commands.blast import MetadataOption, RedisOption

err = Console(stderr=True)


def bootstrap_index(
    metadata: MetadataOption = None,
    redis_url: RedisOption = None,
) -> None:
    """Load DataHub file-format metadata into the Redis lineage index and run history (default: settings')."""
    from pareis import bootstrap
    from pareis.config import load_settings
    from pareis.datahub.metadata_file import MetadataFileError
    from pareis.errors import Fatal, Retriable
    from pareis.lineage_loader import load_files

    if not metadata:
        err.print("pareis bootstrap: give --metadata FILE…", markup=False, highlight=False)
        raise typer.Exit(2)
    url = redis_url or load_settings().redis_url
    target = bootstrap.analysis_source(redis_url=url)
    try:
        loaded = load_files(target.lineage, metadata)
        new_runs = sum(target.runs.record(run) for run in loaded.runs)
    except MetadataFileError as exc:
        err.print(f"pareis bootstrap: {exc}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from exc
    except (Retriable, Fatal) as exc:
        err.print(f"pareis bootstrap: {exc}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(1) from exc
    finally:
        target.close()
    outcomes = ", ".join(f"{o.value} {n}" for o, n in sorted(loaded.outcomes.items())) or "none"
    print(f"loaded {', '.join(str(m) for m in metadata)} into {_redacted(url)}")
    print(f"  proposals read: {loaded.proposals}; changes logged: {loaded.changes}")
    print(f"  lineage updates: {loaded.updates} ({outcomes})")
    print(f"  assertion runs: {len(loaded.runs)} ({new_runs} new)")


def _redacted(url: str) -> str:
    """The URL without its password."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
