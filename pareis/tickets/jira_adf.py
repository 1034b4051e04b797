"""Atlassian Document Format (ADF) for Jira's descriptions and comments: ``{"type": "doc", "version": 1, "content":
[…]}`` with the nodes Jira Cloud's REST API v3 documents — ``heading`` (``attrs.level`` 1–6), ``paragraph``,
``bulletList`` of ``listItem`` (each a paragraph), ``text`` (never empty) with ``strong``, ``em`` and ``link``
(``attrs.href``) marks, ``hardBreak``.

:func:`brief_doc` renders an incident's brief (:mod:`pareis.core.brief`), decision first: a heading and a bullet list
per section, then its links; :func:`adf` renders plain text (comments, and tickets from effects without a brief).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pareis.core.brief import Brief, Span

Node = dict[str, Any]


def brief_doc(brief: Brief, *, footer: str | None = None) -> Node:
    """The brief as a document: per section a level-3 heading and a bullet list of its lines; the links in one
    paragraph; then ``footer`` in italics."""
    content: list[Node] = []
    for section in brief.sections:
        content.append({"type": "heading", "attrs": {"level": 3}, "content": [_text(section.title)]})
        items = [_item(_inline(line)) for line in section.lines]
        content.append({"type": "bulletList", "content": [i for i in items if i is not None]})
    links = [s for s in brief.links if s.url]
    if links:
        nodes: list[Node] = []
        for i, link in enumerate(links):
            if i:
                nodes.append(_text(" · "))
            nodes.extend(_inline([link]))
        content.append({"type": "paragraph", "content": nodes})
    if footer:
        content.append({"type": "paragraph", "content": [_text(footer, {"type": "em"})]})
    return {"type": "doc", "version": 1, "content": [n for n in content if n.get("content")]}


def adf(text: str, *, link: str | None = None, footer: str | None = None) -> Node:
    """Plain text as a document: a paragraph per blank-line-separated block, lines joined by hard breaks; then the
    link, then the footer in italics."""
    content: list[Node] = []
    for block in (b for b in text.strip().split("\n\n") if b.strip()):
        nodes: list[Node] = []
        for line in block.strip().split("\n"):
            if nodes:
                nodes.append({"type": "hardBreak"})
            if line:
                nodes.append(_text(line))
        content.append({"type": "paragraph", "content": nodes})
    if link:
        mark = {"type": "link", "attrs": {"href": link}}
        content.append({"type": "paragraph", "content": [_text("Open the incident", mark)]})
    if footer:
        content.append({"type": "paragraph", "content": [_text(footer, {"type": "em"})]})
    return {"type": "doc", "version": 1, "content": content}


def _inline(spans: Iterable[Span]) -> list[Node]:
    """Text nodes of the spans (an empty span has none: ADF refuses empty text)."""
    nodes = []
    for span in spans:
        if not span.text:
            continue
        marks: list[Node] = []
        if span.strong:
            marks.append({"type": "strong"})
        if span.url:
            marks.append({"type": "link", "attrs": {"href": span.url}})
        nodes.append(_text(span.text, *marks))
    return nodes


def _item(nodes: list[Node]) -> Node | None:
    return {"type": "listItem", "content": [{"type": "paragraph", "content": nodes}]} if nodes else None


def _text(value: str, *marks: Node) -> Node:
    node: Node = {"type": "text", "text": value}
    if marks:
        node["marks"] = list(marks)
    return node
