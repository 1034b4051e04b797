"""``pareis bootstrap``: fill the live lineage index (and run history) in Redis from DataHub file-format files
(``--metadata FILE…``) or from a running DataHub (``--datahub URL``, read through acryl's ``DataHubGraph``:
:mod:`pareis.datahub.gms.snapshot`).

For a fresh deployment, or to catch an index up without replaying the change log: every proposal goes through
the lineage role's own translation (:mod:`pareis.lineage_loader`), so the index equals the one the role builds
from the same changes, and loading is idempotent (a repeated load reports its updates as repeated; an older
aspect version never overwrites a newer one already indexed). A load that changed what the exposure index follows
advances its lineage generation, as the lineage role does, so the exposure snapshot is recomputed and no reader
trusts the old one as current. Assertion runs are recorded in the run history,
idempotent by (assertion, timestamp).

Exit codes: 0 loaded; 1 Redis or GMS unreachable or failing (nothing is rolled back: loading again is safe); 2 an
unreadable file or a value the translation rejects (nothing after it is loaded).
"""

from __future__ import annotations

import typer
from rich.console import Console

from pareis.commands.common import DatahubOption, MetadataOption, RedisOption, TokenOption, fail, gms_token, plain
from pareis.errors import Fatal, Poison, Retriable

# A command imports what it runs with inside its function: `pareis --help` imports every command module, and
# stays fast only while they load no more than their options need (pareis/cli.py).

err = Console(stderr=True)


def bootstrap_index(
    metadata: MetadataOption = None,
    datahub: DatahubOption = None,
    token: TokenOption = None,
    redis_url: RedisOption = None,
) -> None:
    """Load the Redis lineage index and run history (default: settings') from files or from DataHub GMS."""
    from pareis.compose.sources import datahub_graph, redis_target
    from pareis.config import load_settings, redact_url
    from pareis.datahub.files.metadata_file import MetadataFileError
    from pareis.datahub.gms.snapshot import GmsSnapshot
    from pareis.lineage_loader import Loaded, load_changes, load_files

    if bool(metadata) == (datahub is not None):
        err.print("pareis bootstrap: give --metadata FILE… or --datahub URL (one of them)", markup=False)
        raise typer.Exit(2)
    url = redis_url or load_settings().redis_url
    target, rebuilt = redis_target(url)
    loaded: Loaded
    try:
        if datahub is not None:
            graph = datahub_graph(datahub, gms_token(token))
            try:
                snapshot = GmsSnapshot(graph)
                loaded = load_changes(target.lineage, snapshot.all_changes())
                loaded.runs = list(snapshot.all_runs())
                loaded.operations = list(snapshot.all_operations())
            finally:
                graph.close()
        else:
            assert metadata is not None
            loaded = load_files(target.lineage, metadata)
        new_runs = sum(target.runs.record(run) for run in loaded.runs)
        for dataset, changed in loaded.operations:
            target.runs.record_operation(dataset, changed)
        if loaded.exposure_changed and target.exposure is not None:
            target.exposure.touch()
        rebuilt()  # a Redis that lost its data (or never had any) is trusted again from here
    except (MetadataFileError, Poison) as exc:
        raise fail("bootstrap", str(exc), 2) from exc
    except (Retriable, Fatal) as exc:
        raise fail("bootstrap", str(exc), 1) from exc
    finally:
        target.close()
    outcomes = ", ".join(f"{o.value} {n}" for o, n in sorted(loaded.outcomes.items())) or "none"
    source = datahub if datahub is not None else ", ".join(str(m) for m in metadata or ())
    print(plain(f"loaded {source} into {redact_url(url)}"))
    if datahub is None:
        print(f"  proposals read: {loaded.proposals}; changes logged: {loaded.changes}")
    else:
        print(f"  aspects read: {loaded.changes}")
    print(f"  lineage updates: {loaded.updates} ({outcomes})")
    print(f"  assertion runs: {len(loaded.runs)} ({new_runs} new)")
    if loaded.operations:
        print(f"  dataset operations: {len(loaded.operations)}")
