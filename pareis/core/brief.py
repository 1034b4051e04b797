"""The brief of an incident: what a person reads, decision first (DESIGN §4 "Decision first, everywhere").

One value every human-facing rendering reads — the DataHub incident's title and description, the postmortem, Slack
(Block Kit), Jira (ADF) and Linear (Markdown) — so that they all say the same thing in the same order:

1. **Decision** — per affected group, the recommendation (DESIGN §2.3): the action, its target, the reason, the
   contaminated versions not to promote;
2. **Retrain** — per group, the retrain status Pareis writes (``io.pareis.retrain_status``): BLOCKED while the
   incident is open; after the heal, which versions stay BLOCKED;
3. **Owners** — of the failing dataset and of each affected model;
4. **Next step** — what to do now;
5. then the evidence: **Evidence** (severity, failed rows, blind window, blast radius counts), **Models at risk**,
   **Versions and verdicts**, **Assertions**.

Entities are named by their short names (:func:`pareis.core.names.short_name`) and, when DataHub's frontend URL is
given, linked to their DataHub pages (:func:`pareis.core.names.entity_url`); full URNs stay in the JSON of the
facts, never in the sentences. A brief is made of :class:`Span` lines, so each format renders links and emphasis its
own way; :meth:`Brief.to_json` is what travels in a ticket effect. Pure: same facts, same brief, byte for byte.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pareis.core.contamination import GroupContamination, ModelVersion
from pareis.core.impact import ModelImpact
from pareis.core.intents import IncidentFacts, RetrainStatus
from pareis.core.names import entity_url, short_name
from pareis.core.owners import Owner
from pareis.core.serving import Action, Recommendation, short_version_name

MAX_LISTED = 20
"""Past this many lines a section lists the first ones and counts the rest."""
HEADLINE_MAX = 150
"""A headline's length at most (Slack's header block takes 150 characters; Jira's summary 255)."""
HEADLINE_GROUPS = 3
"""The headline names at most this many groups' decisions."""

DECISION, RETRAIN, OWNERS, NEXT_STEP = "Decision", "Retrain", "Owners", "Next step"
EVIDENCE, MODELS, VERSIONS, ASSERTIONS = "Evidence", "Models at risk", "Versions and verdicts", "Assertions"
ACTIVE, RESOLVED = "ACTIVE", "RESOLVED"

_URGENCY = {Action.ROLL_BACK: 0, Action.PROMOTE: 0, Action.RETRAIN: 1, Action.NONE: 2}
"""Decisions that switch a serving version come first, then retrains, then groups with nothing to switch."""


class Span:
    """A run of text, linked when ``url`` is set, emphasised when ``strong``. ``entity``: the URN it names (None:
    plain text), so that :func:`linked` can link it to another web app; not part of its JSON nor of its equality.

    A value (equal by text, url and emphasis; its fields final), written out rather than a frozen dataclass: a brief
    makes dozens, and a frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__``
    (compiled, this ``__init__`` is native)."""

    def __init__(self, text: str, url: str | None = None, strong: bool = False, entity: str | None = None) -> None:
        self.text: Final = text
        self.url: Final = url
        self.strong: Final = strong
        self.entity: Final = entity

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Span):
            return NotImplemented
        return self.text == other.text and self.url == other.url and self.strong == other.strong

    def __hash__(self) -> int:
        return hash((self.text, self.url, self.strong))

    def __repr__(self) -> str:
        return f"Span(text={self.text!r}, url={self.url!r}, strong={self.strong!r})"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text}
        if self.url is not None:
            out["url"] = self.url
        if self.strong:
            out["strong"] = True
        return out

    @classmethod
    def from_json(cls, data: Any) -> Span:
        if not isinstance(data, Mapping) or not isinstance(data.get("text"), str):
            raise TypeError(f"a span must be an object with a text, got {data!r}")
        url, strong = data.get("url"), data.get("strong", False)
        if url is not None and not isinstance(url, str):
            raise TypeError(f"a span's url must be a string, got {url!r}")
        if not isinstance(strong, bool):
            raise TypeError(f"a span's strong must be a boolean, got {strong!r}")
        return cls(data["text"], url, strong)


Line = tuple[Span, ...]


def plain(line: Iterable[Span]) -> str:
    """A line's text without links or emphasis."""
    return "".join(s.text for s in line)


@dataclass(frozen=True)
class Section:
    """A titled list of lines (a section without lines is never part of a brief)."""

    title: str
    lines: tuple[Line, ...]

    def to_json(self) -> dict[str, Any]:
        return {"lines": [[s.to_json() for s in line] for line in self.lines], "title": self.title}

    @classmethod
    def from_json(cls, data: Any) -> Section:
        if not isinstance(data, Mapping) or not isinstance(data.get("title"), str):
            raise TypeError(f"a section must be an object with a title, got {data!r}")
        lines = data.get("lines")
        if not isinstance(lines, list) or not all(isinstance(line, list) for line in lines):
            raise TypeError(f"a section's lines must be a list of lists of spans, got {lines!r}")
        return cls(data["title"], tuple(tuple(Span.from_json(s) for s in line) for line in lines))


@dataclass(frozen=True)
class Brief:
    """An incident as a person reads it (module docstring). ``headline``: the decision in one plain line (at most
    :data:`HEADLINE_MAX` characters); ``state``: ACTIVE or RESOLVED; ``links``: where to act on the incident (its
    page in DataHub, in Mission Control), as given to :func:`brief`."""

    incident: str
    headline: str
    state: str
    severity: str
    sections: tuple[Section, ...]
    links: tuple[Span, ...] = ()

    def section(self, title: str) -> Section | None:
        return next((s for s in self.sections if s.title == title), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "headline": self.headline,
            "incident": self.incident,
            "links": [s.to_json() for s in self.links],
            "sections": [s.to_json() for s in self.sections],
            "severity": self.severity,
            "state": self.state,
        }

    @classmethod
    def from_json(cls, data: Any) -> Brief:
        """Inverse of :meth:`to_json`; TypeError naming the faulty field."""
        if not isinstance(data, Mapping):
            raise TypeError(f"a brief must be an object, got {type(data).__name__}")
        for key in ("incident", "headline", "state", "severity"):
            if not isinstance(data.get(key), str) or not data[key]:
                raise TypeError(f"brief.{key} must be a non-empty string, got {data.get(key)!r}")
        sections, links = data.get("sections"), data.get("links", [])
        if not isinstance(sections, list) or not isinstance(links, list):
            raise TypeError("brief.sections and brief.links must be lists")
        return cls(
            data["incident"],
            data["headline"],
            data["state"],
            data["severity"],
            tuple(Section.from_json(s) for s in sections),
            tuple(Span.from_json(s) for s in links),
        )


def brief(facts: IncidentFacts, *, ui_url: str | None = None, links: Sequence[Span] = ()) -> Brief:
    """The brief of ``facts`` (module docstring); entities linked to DataHub's web app at ``ui_url`` (None: not
    linked); ``links`` say where to act on the incident."""
    names = _Names((v.version for g in facts.contamination for v in g.versions), ui_url)
    decisions = sorted(facts.decisions, key=lambda d: (_URGENCY[d.action], d.group))
    sections = (
        Section(DECISION, _capped(_decision(d, names) for d in decisions)),
        Section(RETRAIN, _capped(_retrain(facts, d.group, names) for d in decisions)),
        Section(OWNERS, _owners(facts, names)),
        Section(NEXT_STEP, _next_steps(facts, decisions, names)),
        Section(EVIDENCE, _evidence(facts, names)),
        Section(MODELS, _capped(_model(m, names) for m in facts.blast.models)),
        Section(VERSIONS, _capped(_verdicts(g, names) for g in facts.contamination)),
        Section(ASSERTIONS, _capped((Span(short_name(a)),) for a in facts.window.assertions)),
    )
    return Brief(
        incident=facts.urn,
        headline=headline(facts),
        state=ACTIVE if facts.window.is_open else RESOLVED,
        severity=facts.severity.value,
        sections=tuple(s for s in sections if s.lines),
        links=tuple(links),
    )


def linked(found: Brief, ui_url: str | None, links: Sequence[Span] = ()) -> Brief:
    """What :func:`brief` with ``ui_url`` and ``links`` gives for the facts of ``found``, without analysing them
    again: its entities linked to DataHub's web app at ``ui_url`` (None: not linked). ``found`` comes from
    :func:`brief` (a brief read from JSON does not name its entities: its links stay as they are)."""
    urls: dict[str, str | None] = {}

    def relinked(span: Span) -> Span:
        urn = span.entity
        if urn is None:
            return span
        url = urls[urn] if urn in urls else urls.setdefault(urn, entity_url(ui_url, urn))
        return span if url == span.url else Span(span.text, url, span.strong, urn)

    sections = tuple(
        Section(s.title, tuple(tuple(relinked(span) for span in line) for line in s.lines)) for s in found.sections
    )
    return Brief(found.incident, found.headline, found.state, found.severity, sections, tuple(links))


def headline(facts: IncidentFacts) -> str:
    """The decision in one line: each group's switch or retrain (the most urgent first, at most
    :data:`HEADLINE_GROUPS`), then the failing dataset and whether it still fails."""
    decisions = sorted(facts.decisions, key=lambda d: (_URGENCY[d.action], d.group))
    phrases = [_phrase(d) for d in decisions if d.action is not Action.NONE]
    if phrases:
        head = "; ".join(phrases[:HEADLINE_GROUPS])
        if len(phrases) > HEADLINE_GROUPS:
            head += f"; {len(phrases) - HEADLINE_GROUPS} more group(s)"
    elif decisions:
        head = "Nothing to switch: no contaminated version serves"
    else:
        head = "No model affected"
    state = "failing" if facts.window.is_open else "healed"
    text = f"{head[0].upper()}{head[1:]} — {short_name(facts.dataset)} {state}"
    return text if len(text) <= HEADLINE_MAX else text[: HEADLINE_MAX - 1] + "…"


def decision_lines(decisions: Iterable[Recommendation]) -> list[tuple[Recommendation, str]]:
    """The Decision section of the brief of any incident with these ``decisions``, as plain text: each decision and
    its line, the most urgent first (what the CLI prints first)."""
    ordered = sorted(decisions, key=lambda d: (_URGENCY[d.action], d.group))
    known = [v for d in ordered for v in (*d.contaminated, *(s.version for s in d.serving))]
    names = _Names(known, None)
    return [(d, plain(_decision(d, names))) for d in ordered]


def action_words(action: str, target: str | None) -> str:
    """An action as the decision line says it: ``ROLL BACK to churn_2``, ``PROMOTE churn_4``, ``RETRAIN``,
    ``NOTHING TO SWITCH`` (``target`` already a readable name)."""
    if action == Action.ROLL_BACK.value:
        return f"ROLL BACK to {target}"
    if action == Action.PROMOTE.value:
        return f"PROMOTE {target}"
    if action == Action.RETRAIN.value:
        return "RETRAIN on clean data"
    return "NOTHING TO SWITCH"


def iso(ms: int | None) -> str:
    """``2024-05-01T12:00:00.000Z``; ``-`` for None."""
    if ms is None:
        return "-"
    seconds, millis = divmod(ms, 1000)  # integers: no float rounding (a datetime costs several times more)
    days, second = divmod(seconds, 86_400)
    if not _DAY_1000 <= days <= _DAY_9999:  # outside four-digit years: as the C library writes them
        return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(seconds))}.{millis:03d}Z"
    year, month, day = _civil(days)
    hour, second = divmod(second, 3600)
    minute, second = divmod(second, 60)
    # %-formatting: compiled, an f-string's format specs cost 2.5 times as much
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (year, month, day, hour, minute, second, millis)  # noqa: UP031


_DAY_1000, _DAY_9999 = -354_285, 2_932_896
"""1000-01-01 and 9999-12-31 as days since 1970-01-01."""


def _civil(days: int) -> tuple[int, int, int]:
    """The proleptic Gregorian (year, month, day) of ``days`` since 1970-01-01 (H. Hinnant's ``civil_from_days``:
    integer arithmetic over 400-year eras of 146,097 days, years starting in March)."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1_460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (1 if month <= 2 else 0), month, day


# --- the sections ---------------------------------------------------------------------------------------------
class _Names:
    """Short names and DataHub links of the entities of one incident (model versions by their version name)."""

    def __init__(self, versions: Iterable[ModelVersion], ui_url: str | None) -> None:
        self._ui_url = ui_url
        self._versions: dict[str, ModelVersion] = {v.urn: v for v in versions}

    def span(self, urn: str, *, strong: bool = False) -> Span:
        known = self._versions.get(urn)
        name = short_version_name(known) if known is not None else short_name(urn)
        return Span(name, entity_url(self._ui_url, urn), strong, urn)

    def version(self, version: ModelVersion, *, strong: bool = False) -> Span:
        return Span(short_version_name(version), entity_url(self._ui_url, version.urn), strong, version.urn)

    def owner(self, owner: Owner) -> Span:
        return Span(owner.email or owner.name, entity_url(self._ui_url, owner.urn), False, owner.urn)


def _phrase(d: Recommendation) -> str:
    group = short_name(d.group)
    target = short_version_name(d.target) if d.target is not None else None
    if d.action is Action.ROLL_BACK:
        return f"roll back {group} to {target}"
    if d.action is Action.PROMOTE:
        return f"promote {target} in {group}"
    if d.action is Action.RETRAIN:
        return f"retrain {group}"
    return f"{group}: nothing to switch"


def _decision(d: Recommendation, names: _Names) -> Line:
    target = short_version_name(d.target) if d.target is not None else None
    words = action_words(d.action.value, target)
    spans = [names.span(d.group, strong=True), Span(": ")]
    if d.action is Action.NONE:  # its reason says so and names the versions not to promote
        return (*spans, Span(d.reason))
    if d.target is not None:
        verb = words.removesuffix(target or "")
        spans += [Span(verb, strong=True), names.version(d.target, strong=True)]
    else:
        spans.append(Span(words, strong=True))
    spans.append(Span(f" — {d.reason}"))
    spare = d.do_not_promote
    if spare:
        spans.append(Span(" Do not promote "))
        spans += _joined(names.version(v) for v in spare)
        spans.append(Span("."))
    return tuple(spans)


def _retrain(facts: IncidentFacts, group: str, names: _Names) -> Line:
    statuses = dict(facts.retrain)
    found = next((g for g in facts.contamination if g.group == group), None)
    versions = [v.version for v in found.versions] if found else []
    blocked = [v for v in versions if statuses.get(v.urn) is RetrainStatus.BLOCKED]
    head = [names.span(group, strong=True), Span(": ")]
    if facts.window.is_open:
        return (*head, Span("BLOCKED", strong=True), Span(" while the incident is open (the retrain gate says when)"))
    if not blocked:
        return (*head, Span("OK", strong=True), Span(": every version may be retrained or promoted"))
    return (
        *head,
        Span("OK", strong=True),
        Span(", except "),
        *_joined(names.version(v) for v in blocked),
        Span(": "),
        Span("BLOCKED", strong=True),
        Span(" (trained on corrupt data)"),
    )


def _owners(facts: IncidentFacts, names: _Names) -> tuple[Line, ...]:
    owners = facts.owners
    lines: list[Line] = []
    if owners.dataset:
        lines.append(
            (names.span(facts.dataset), Span(" (failing dataset): "), *_joined(map(names.owner, owners.dataset)))
        )
    models = [(m, found) for m, found in owners.models if found]
    lines.extend((names.span(m), Span(": "), *_joined(map(names.owner, found))) for m, found in models)
    return _capped(lines)


def _next_steps(facts: IncidentFacts, decisions: Sequence[Recommendation], names: _Names) -> tuple[Line, ...]:
    switches = [d for d in decisions if d.action in (Action.ROLL_BACK, Action.PROMOTE)]
    retrains = [d for d in decisions if d.action is Action.RETRAIN]
    lines: list[Line] = []
    if switches:
        lines.append((Span("Switch serving now: "), *_listed(_phrase(d) for d in switches), Span(".")))
    dataset = names.span(facts.dataset)
    if facts.window.is_open:
        count = len(facts.window.assertions)
        line = [Span("Fix the data of "), dataset, Span(f" ({count} failing assertion(s))")]
        if decisions:
            line += [Span("; retraining "), *_joined(names.span(d.group) for d in decisions)]
            line.append(Span(" stays blocked until it heals"))
        if retrains:
            line += [Span(", then retrain "), *_joined(names.span(d.group) for d in retrains), Span(" on clean data")]
        lines.append((*line, Span(".")))
    elif retrains:
        lines.append(
            (
                Span("Retrain "),
                *_joined(names.span(d.group) for d in retrains),
                Span(" on clean data now: the data has healed."),
            )
        )
    elif not switches:
        lines.append(
            (
                Span("Nothing left to do: "),
                dataset,
                Span(" has healed and no contaminated version serves."),
            )
        )
    return tuple(lines)


def _evidence(facts: IncidentFacts, names: _Names) -> tuple[Line, ...]:
    w, blast = facts.window, facts.blast
    rows = "unknown" if w.failed_rows is None else str(w.failed_rows)
    good = iso(w.last_success_ms) if w.last_success_ms is not None else "never (no earlier passing run)"
    severity = facts.severity  # a property over every model's impact: read once
    lines: list[Line] = [
        (
            Span(f"Severity {severity.value} (priority {severity.priority}); "),
            Span(f"class of failure: {facts.failure_class}; "),
            Span(f"{len(w.assertions)} failing assertion(s); failed rows: {rows}."),
        ),
        (
            Span(f"Blind window: last known good {good}, first failure {iso(w.first_failure_ms)}; "),
            Span("still failing." if w.is_open else f"healed {iso(w.healed_ms)}."),
        ),
        (
            Span(f"Blast radius: {len(blast.models)} model(s), {len(blast.features)} feature(s), "),
            Span(f"{len(blast.columns)} column(s) downstream of "),
            names.span(facts.dataset),
            Span("."),
        ),
    ]
    if blast.incomplete:
        lines.append(
            (
                Span("Lineage incomplete: part of the lineage of "),
                *_joined(names.span(u) for u in blast.incomplete[:MAX_LISTED]),
                Span(" could not be indexed (see the dead-letter topic); the blast radius may be larger."),
            )
        )
    return tuple(lines)


def _model(model: ModelImpact, names: _Names) -> Line:
    poisoned = len(model.poisoned_features)
    ratio = f"{poisoned}/{model.total_features} feature(s) poisoned"
    head = (names.span(model.urn), Span(f": {model.severity.value}, {ratio} ({model.precision} precision)"))
    if not poisoned:
        return head
    features = _joined(names.span(f) for f in model.poisoned_features[:MAX_LISTED])
    more = [Span(f" and {poisoned - MAX_LISTED} more")] if poisoned > MAX_LISTED else []
    return (*head, Span(": "), *features, *more)


def _verdicts(group: GroupContamination, names: _Names) -> Line:
    spans: list[Span] = [names.span(group.group), Span(": ")]
    for i, v in enumerate(group.versions):
        if i:
            spans.append(Span(", "))
        spans += [names.version(v.version), Span(f" {v.verdict.value}")]
    rollback = group.safe_rollback
    spans += [Span("; safe rollback: "), names.version(rollback)] if rollback else [Span("; no safe rollback")]
    return tuple(spans)


def _capped(lines: Iterable[Line]) -> tuple[Line, ...]:
    found = list(lines)
    if len(found) <= MAX_LISTED:
        return tuple(found)
    return (*found[:MAX_LISTED], (Span(f"… and {len(found) - MAX_LISTED} more"),))


def _joined(spans: Iterable[Span]) -> list[Span]:
    """``a, b and c`` as spans."""
    items = list(spans)
    out: list[Span] = []
    for i, span in enumerate(items):
        if i:
            out.append(Span(" and " if i == len(items) - 1 else ", "))
        out.append(span)
    return out


def _listed(texts: Iterable[str]) -> list[Span]:
    return _joined(Span(t) for t in texts)
