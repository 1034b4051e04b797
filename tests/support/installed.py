"""What the packaging tests (the wheel, the container image) check an installed Pareis with: a frame of ``TOPIC``
about ``URN``, decoded by the script ``DECODE`` run with the installed interpreter (it prints what it found as
JSON). Further arguments name modules whose files it reports under ``compiled``, to check that the installed copy
has them as the extensions mypyc builds (:func:`compiled_modules`)."""

from __future__ import annotations

import tomllib
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

TOPIC = "MetadataChangeLog_Versioned_v1"
URN = "urn:li:dataset:(urn:li:dataPlatform:snowflake,db.s.orders,PROD)"

DECODE = """
import importlib, json, pathlib, sys
import pareis
from pareis.datahub.wire import schemas
from pareis.datahub.wire.codec import Decoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.contracts.agent import skill_dir
change = Decoder(VendoredSchemaSource()).decode_mcl(pathlib.Path(sys.argv[1]).read_bytes())
print(json.dumps({"package": pareis.__file__, "schemas": str(schemas.schema_root()), "skill": str(skill_dir()),
                  "skill_md": (skill_dir() / "SKILL.md").is_file(), "urn": change.entity_urn,
                  "aspect": change.aspect_name, "value": change.aspect_json(),
                  "compiled": {m: importlib.import_module(m).__file__ for m in sys.argv[2:]}}))
"""


def compiled_modules() -> list[str]:
    """The modules ``[tool.pareis] compiled`` of pyproject.toml lists, by dotted name."""
    root = Path(__file__).resolve().parents[2]
    paths = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["pareis"]["compiled"]
    return [str(Path(p).with_suffix("")).replace("/", ".") for p in paths]


def is_extension(path: str) -> bool:
    """Whether ``path`` is a compiled extension module's file."""
    return path.endswith(tuple(EXTENSION_SUFFIXES))
