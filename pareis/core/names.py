"""How a person names an entity and where DataHub shows it (DESIGN §4: entities are named by their short names and
linked to DataHub's own pages; full URNs stay in the JSON).

:func:`short_name` is the one rule for a readable name; :func:`entity_url` the one rule for the DataHub frontend page
of an entity (the routes of DataHub's web app, ``datahub-web-react``'s ``getPathName`` per entity type).
"""

from __future__ import annotations

from urllib.parse import quote

_PAGES = {
    "dataset": "dataset",
    "mlModel": "mlModels",
    "mlModelGroup": "mlModelGroup",
    "mlFeature": "features",
    "mlFeatureTable": "featureTables",
    "mlPrimaryKey": "mlPrimaryKeys",
    "dataJob": "tasks",
    "dataFlow": "pipelines",
    "mlModelDeployment": "mlModelDeployment",
    "corpuser": "user",
    "corpGroup": "group",
}
"""Entity type → the path segment of its page in DataHub's web app."""


def _entity_type(urn: str) -> str:
    parts = urn.split(":", 3)
    return parts[2] if len(parts) > 3 and parts[0] == "urn" and parts[1] == "li" else ""


def _inner(urn: str) -> list[str] | None:
    """The comma-separated parts of a URN's ``(…)`` key at the top level (nested URNs kept whole), or None."""
    start = urn.find("(")
    if start < 0 or not urn.endswith(")"):
        return None
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in urn[start + 1 : -1]:
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += ch == "("
        depth -= ch == ")"
        current.append(ch)
    parts.append("".join(current))
    return parts


def short_name(urn: str | None) -> str:
    """The readable name of an entity: the name inside ``(platform,name,ENV)`` for datasets, models, groups and
    deployments; a column's field path; a feature's name; else the part after the last colon; ``—`` for None."""
    if not urn:
        return "—"
    kind = _entity_type(urn)
    parts = _inner(urn)
    if parts is not None:
        if kind == "schemaField" and len(parts) >= 2:
            return parts[-1]
        if kind in ("mlFeature", "mlPrimaryKey") and len(parts) >= 2:
            return parts[-1]
        if len(parts) >= 3:
            return ",".join(parts[1:-1])
        return parts[-1]
    return urn.rsplit(":", 1)[-1]


def entity_url(ui_url: str | None, urn: str) -> str | None:
    """The page of ``urn`` in DataHub's web app at ``ui_url`` (a column: its dataset's schema tab; an assertion or
    an incident: None, they have no page of their own); None without ``ui_url``."""
    if not ui_url:
        return None
    base = ui_url.rstrip("/")
    kind = _entity_type(urn)
    if kind == "schemaField":
        parts = _inner(urn)
        if parts is None or len(parts) < 2:
            return None
        dataset = ",".join(parts[:-1])
        return f"{base}/dataset/{quote(dataset, safe='')}/Schema?schemaFilter={quote(parts[-1], safe='')}"
    page = _PAGES.get(kind)
    return None if page is None else f"{base}/{page}/{quote(urn, safe='')}"


def markdown_link(ui_url: str | None, urn: str, text: str | None = None) -> str:
    """``[short name](page)`` when the entity has a page, else the short name (Markdown-escaped brackets)."""
    label = (text if text is not None else short_name(urn)).replace("[", "\\[").replace("]", "\\]")
    url = entity_url(ui_url, urn)
    return f"[{label}]({url})" if url else label
