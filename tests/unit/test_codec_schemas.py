"""The vendored schemas are the ones the README pins, and the current ones are the installed acryl-datahub's."""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
from pathlib import Path

import datahub.metadata.schemas as installed

from pareis.datahub.wire import schemas

README = schemas.schema_dir() / "README.md"
ROW = re.compile(r"^\|\s*`([\w/]+\.avsc)`\s*\|\s*(\d+)\s*\|\s*`([0-9a-f]{64})`\s*\|", re.MULTILINE)


def _pinned() -> dict[str, tuple[int, str]]:
    return {name: (int(size), digest) for name, size, digest in ROW.findall(README.read_text())}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_readme_names_the_installed_acryl_datahub_version() -> None:
    version = importlib.metadata.version("acryl-datahub")
    assert f"acryl-datahub {version}" in README.read_text()


def test_readme_pins_every_vendored_file_and_only_those() -> None:
    on_disk = {str(p.relative_to(schemas.schema_dir())) for p in schemas.schema_dir().rglob("*.avsc")}
    assert set(_pinned()) == on_disk
    assert {*schemas.CURRENT_FILES.values(), schemas.V1_MCL, schemas.V1_MCP} == on_disk


def test_vendored_files_match_the_readme_hashes() -> None:
    for name, (size, digest) in _pinned().items():
        path = schemas.schema_dir() / name
        assert path.stat().st_size == size, name
        assert _sha256(path) == digest, name


def test_current_files_are_byte_identical_to_the_installed_package() -> None:
    package_dir = Path(installed.__file__).parent
    for name in schemas.CURRENT_FILES.values():
        assert _sha256(schemas.schema_dir() / name) == _sha256(package_dir / name), name


def test_v1_mcl_differs_from_current_only_where_datahub_says() -> None:
    v1 = schemas.vendored(schemas.V1_MCL).json
    current = schemas.current(schemas.MCL).json
    assert [f["name"] for f in v1["fields"]] == [f["name"] for f in current["fields"]]

    def system_metadata_fields(schema: dict[str, object]) -> list[str]:
        field = next(f for f in schema["fields"] if f["name"] == "systemMetadata")  # type: ignore[attr-defined]
        return [f["name"] for f in field["type"][1]["fields"]]

    added = set(system_metadata_fields(current)) - set(system_metadata_fields(v1))
    assert added == {"schemaVersion", "aspectCreated", "aspectModified"}
    assert schemas.vendored(schemas.V1_MCL).canonical != schemas.current(schemas.MCL).canonical


def test_internal_ids_resolve_to_the_expected_record_kinds() -> None:
    kinds = {sid: schemas.vendored(path, sid).kind for sid, path in schemas.INTERNAL_IDS.items()}
    assert kinds == {
        0: "MetadataChangeProposal",
        2: "MetadataChangeLog",
        3: "MetadataChangeLog",
        4: "PlatformEvent",
        9: "MetadataChangeProposal",
        11: "MetadataChangeLog",
        12: "MetadataChangeLog",
        16: "MetadataChangeProposal",
        18: "MetadataChangeLog",
        19: "MetadataChangeLog",
    }
