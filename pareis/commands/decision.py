"""The decision as the CLI prints it first (DESIGN §4 "Decision first, everywhere"): the same brief the DataHub
incident and every ticket carry (:mod:`pareis.core.brief`), as terminal text — then each command prints its
evidence below."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from pareis.commands.common import plain

if TYPE_CHECKING:
    from pareis.core.intents import IncidentFacts
    from pareis.core.serving import Recommendation

LEAD = ("Decision", "Retrain", "Owners", "Next step")
"""The sections of the brief printed before the evidence (:data:`pareis.core.brief.DECISION` … ``NEXT_STEP``)."""

STYLE = {"ROLL_BACK": "bold red", "PROMOTE": "bold yellow", "RETRAIN": "bold red", "NONE": "bold green"}


def print_lead(console: Console, facts: IncidentFacts, *, indent: str = "") -> None:
    """The headline, then the brief's Decision, Retrain, Owners and Next step sections of ``facts``."""
    from pareis.core.brief import brief
    from pareis.core.brief import plain as text_of

    found = brief(facts)
    console.print(Text(indent) + Text(plain(found.headline), style="bold"), soft_wrap=True)
    for section in found.sections:
        if section.title not in LEAD:
            continue
        console.print(Text(f"{indent}{section.title}:", style="bold"))
        for line in section.lines:
            console.print(Text(f"{indent}  • {plain(text_of(line))}"), soft_wrap=True)


def print_decisions(console: Console, decisions: Iterable[Recommendation], *, indent: str = "") -> None:
    """One line per group (the brief's Decision section), the most urgent first; "no model affected" when none."""
    from pareis.core.brief import decision_lines

    found = list(decisions)
    if not found:
        console.print(Text(f"{indent}no model affected"))
        return
    for d, line in decision_lines(found):
        console.print(Text(f"{indent}• ") + Text(plain(line), style=STYLE.get(d.action.value, "")), soft_wrap=True)
