"""What the packaging tests (the wheel, the container image) check an installed Pareis with: a frame of ``TOPIC``
about ``URN``, decoded by the script ``DECODE`` run with the installed interpreter (it prints what it found as
JSON)."""

from __future__ import annotations

TOPIC = "MetadataChangeLog_Versioned_v1"
URN = "urn:li:dataset:(urn:li:dataPlatform:snowflake,db.s.orders,PROD)"

DECODE = """
import json, pathlib, sys
import pareis
from pareis.datahub import schemas
from pareis.datahub.codec import Decoder
from pareis.datahub.registry import VendoredSchemaSource
from pareis.model.agent import skill_dir
change = Decoder(VendoredSchemaSource()).decode_mcl(pathlib.Path(sys.argv[1]).read_bytes())
print(json.dumps({"package": pareis.__file__, "schemas": str(schemas.schema_root()), "skill": str(skill_dir()),
                  "skill_md": (skill_dir() / "SKILL.md").is_file(), "urn": change.entity_urn,
                  "aspect": change.aspect_name, "value": change.aspect_json()}))
"""
