"""``pareis topics create``: create the topics Pareis owns (signals, effects, dlq, gate) that are missing.

Each role creates the owned topics it uses at start-up (``kafka.create_topics``); this command does it ahead of
them, e.g. as the chart's pre-install Job, or by an operator whose credentials may create topics where the roles'
may not. Topics are created with ``kafka.topic_partitions``, ``kafka.replication_factor`` and
``kafka.topic_configs``; an existing topic is never changed (one with fewer partitions than configured is said
so). One line per topic; exit 1 when a topic cannot be created (the line names what to create) or the cluster
does not answer.
"""

from __future__ import annotations

import typer

from pareis.commands.common import plain

topics = typer.Typer(
    name="topics",
    no_args_is_help=True,
    help="The topics Pareis owns: signals, effects, dlq, gate.",
    add_completion=False,
)


@topics.command("create")
def create() -> None:
    """Create the topics Pareis owns that are missing, as the settings say (partitions, replication, configs)."""
    from pareis.compose.process import create_topics
    from pareis.config import load_settings

    for line in create_topics(load_settings()):
        print(plain(line))
