"""Where a lake is: `LakeSpec` (an Iceberg catalog + a warehouse) and `lake_spec(TARGET)`, which reads one.

A lake is a set of Apache Iceberg tables (one per history relation) registered in a catalog, with
their files in a warehouse. TARGET names one in any of these forms:

    /shared/team-lake                 a folder: its catalog is the SQLite file catalog.db in it, its
                                      files under warehouse/ beside it. Nothing to set up.
    s3://bucket/prefix                a warehouse in object storage; the catalog comes from
                                      SYNAPSE_LAKE_CATALOG (e.g. postgresql+psycopg://user@db/lake)
    postgresql+psycopg://user@db/lake a catalog; the warehouse comes from SYNAPSE_LAKE_WAREHOUSE
    https://catalog.example/api       a REST catalog (the warehouse, if it needs one, likewise)
    team-lake.json                    a lake config file:
        {"catalog": "postgresql+psycopg://lake@db.internal/lake",
         "warehouse": "s3://team-bucket/synapse",
         "namespace": "synapse",
         "s3": {"endpoint": "https://minio.internal:9000", "region": "eu-west-1",
                "access_key_id": "${env:LAKE_KEY}", "secret_access_key": "${env:LAKE_SECRET}"}}

`${env:VAR}` / `${VAR}` in the file expand from the environment, so secrets need not live in it. Any
field a target leaves out comes from SYNAPSE_LAKE_CATALOG, SYNAPSE_LAKE_WAREHOUSE,
SYNAPSE_LAKE_NAMESPACE and SYNAPSE_LAKE_S3_ENDPOINT / _REGION / _ACCESS_KEY_ID / _SECRET_ACCESS_KEY /
_SESSION_TOKEN / _CONNECT_TIMEOUT / _REQUEST_TIMEOUT (the file's "s3" keys are the same names in lower case);
S3 credentials not given at all come from the usual AWS chain (AWS_ACCESS_KEY_ID, ~/.aws, ...).
SYNAPSE_LAKE names the lake `%synapse publish` and `%synapse lake ...` use when none is given.

An `s3://` target is never a local path: without a catalog it is refused with one line (the retired
Parquet lake quietly wrote it to a local folder named `s3:`). No pyiceberg here: reading a spec is cheap.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..envvars import expand_vars
from ..errors import LakeError
from ..masking import mask_url

__all__ = [
    "CATALOG_FILE",
    "ENV_CATALOG",
    "ENV_LAKE",
    "ENV_NAMESPACE",
    "ENV_WAREHOUSE",
    "OLD_MARKER",
    "WAREHOUSE_DIR",
    "LakeSpec",
    "is_lake_target",
    "lake_spec",
]

ENV_LAKE = "SYNAPSE_LAKE"
ENV_CATALOG = "SYNAPSE_LAKE_CATALOG"
ENV_WAREHOUSE = "SYNAPSE_LAKE_WAREHOUSE"
ENV_NAMESPACE = "SYNAPSE_LAKE_NAMESPACE"
_ENV_S3 = {  # SYNAPSE_LAKE_S3_<NAME> -> the pyiceberg FileIO property
    "ENDPOINT": "s3.endpoint",
    "REGION": "s3.region",
    "ACCESS_KEY_ID": "s3.access-key-id",
    "SECRET_ACCESS_KEY": "s3.secret-access-key",
    "SESSION_TOKEN": "s3.session-token",
    "CONNECT_TIMEOUT": "s3.connect-timeout",  # seconds
    "REQUEST_TIMEOUT": "s3.request-timeout",  # seconds
}
_FILE_S3 = {k.lower(): v for k, v in _ENV_S3.items()}  # the config file's "s3" keys
CATALOG_FILE = "catalog.db"  # a folder lake's SQLite catalog
WAREHOUSE_DIR = "warehouse"  # a folder lake's data and metadata files
OLD_MARKER = "_lake.json"  # the retired Parquet lake's marker (lake_migrate.py reads such lakes)
DEFAULT_NAMESPACE = "synapse"
_CATALOG_SCHEMES = ("sqlite", "postgresql", "postgres", "mysql", "http", "https")
_STORAGE_SCHEMES = ("s3", "s3a", "s3n")
_FILE_KEYS = {"catalog", "warehouse", "namespace", "s3"}


@dataclass(frozen=True, slots=True)
class LakeSpec:
    """An Iceberg lake: a catalog URI (SQLAlchemy or REST), a warehouse (a local folder or s3://...), the
    namespace of its tables, and the FileIO properties of its storage (secrets: never shown)."""

    catalog: str
    warehouse: str
    namespace: str = DEFAULT_NAMESPACE
    storage: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    folder: Path | None = None  # the folder of a zero-setup lake (its catalog and warehouse are inside)

    @property
    def name(self) -> str:
        """What to show for this lake: the folder, or the warehouse and the catalog (credentials masked)."""
        if self.folder is not None:
            return str(self.folder)
        return f"{self.warehouse} (catalog {mask_url(self.catalog)})"

    @property
    def is_rest(self) -> bool:
        return self.catalog.startswith(("http://", "https://"))

    def catalog_properties(self) -> dict[str, str]:
        """The pyiceberg catalog's properties: s3:// through pyarrow's own S3 filesystem (PyArrowFileIO)."""
        props = {"uri": self.catalog, "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO", **self.storage}
        if self.warehouse:
            props["warehouse"] = self.warehouse
        return props

    def __repr__(self) -> str:
        return f"<LakeSpec {self.name}>"

    def __str__(self) -> str:
        return self.name


def lake_spec(target: str | Path | LakeSpec | None, environ: Mapping[str, str] | None = None) -> LakeSpec:
    """The lake TARGET names (see the module docstring); None: SYNAPSE_LAKE. LakeError with one line if
    it cannot be one (an s3:// warehouse with no catalog, a bad config file, an unsupported scheme)."""
    env = os.environ if environ is None else environ
    if isinstance(target, LakeSpec):
        return target
    if target is None or not str(target).strip():
        named = env.get(ENV_LAKE, "").strip()
        if not named:
            raise LakeError(
                "no lake named: give one (a folder, s3://bucket/prefix with SYNAPSE_LAKE_CATALOG set, or a lake "
                "config .json), or set SYNAPSE_LAKE"
            )
        target = named
    text = str(target).strip()
    scheme = _scheme(text)
    if scheme is None and text.endswith(".json"):
        return _from_file(Path(text).expanduser().absolute(), env)
    if scheme is None or scheme == "file":
        folder = Path(text.removeprefix("file://")).expanduser().absolute()
        return LakeSpec(
            catalog=f"sqlite:///{folder / CATALOG_FILE}", warehouse=str(folder / WAREHOUSE_DIR),
            namespace=env.get(ENV_NAMESPACE) or DEFAULT_NAMESPACE, folder=folder,
        )
    if scheme in _STORAGE_SCHEMES:
        return _complete({"warehouse": text}, env, text)
    if scheme.partition("+")[0] in _CATALOG_SCHEMES:
        return _complete({"catalog": text}, env, text)
    raise LakeError(
        f"lake {mask_url(text)}: unsupported scheme {scheme!r}; name a folder, s3://bucket/prefix, a catalog URI "
        "(postgresql+psycopg://, sqlite:///, https:// for REST) or a lake config .json",
        lake=mask_url(text),
    )


def is_lake_target(target: str | Path | LakeSpec) -> bool:
    """Whether `synapse_nb.history(TARGET)` means a lake rather than a history file: a spec, a URI, a lake
    config file, or a folder (a history file is a file)."""
    if isinstance(target, LakeSpec):
        return True
    text = str(target).strip()
    if _scheme(text) is not None or text.endswith(".json"):
        return True
    return Path(text).expanduser().is_dir()


def _scheme(text: str) -> str | None:
    head, sep, _ = text.partition("://")
    return head.lower() if sep and head and all(c.isalnum() or c in "+-." for c in head) else None


def _from_file(path: Path, env: Mapping[str, str]) -> LakeSpec:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LakeError(f"lake config {path} does not exist: write it (see the README's lake section) or name a "
                        "folder", lake=str(path)) from None
    except (OSError, ValueError) as exc:
        raise LakeError(f"lake config {path} cannot be read ({exc}): fix it", lake=str(path)) from exc
    if not isinstance(data, dict) or set(data) - _FILE_KEYS:
        extra = sorted(set(data) - _FILE_KEYS) if isinstance(data, dict) else []
        raise LakeError(
            f"lake config {path}: expected an object with catalog, warehouse, namespace, s3"
            + (f"; unknown key(s) {', '.join(extra)}" if extra else ""),
            lake=str(path),
        )
    missing: list[str] = []
    fields: dict[str, Any] = {}
    for key in ("catalog", "warehouse", "namespace"):
        if key in data:
            if not isinstance(data[key], str):
                raise LakeError(f"lake config {path}: {key} must be a string", lake=str(path))
            fields[key] = expand_vars(data[key], env, missing, key)
    s3 = data.get("s3", {})
    if not isinstance(s3, dict) or set(s3) - set(_FILE_S3) or not all(isinstance(v, str) for v in s3.values()):
        raise LakeError(f"lake config {path}: s3 takes string values for {', '.join(_FILE_S3)}", lake=str(path))
    fields["storage"] = {_FILE_S3[k]: expand_vars(v, env, missing, f"s3.{k}") for k, v in s3.items()}
    if missing:
        raise LakeError(f"lake config {path}: environment variable(s) not set: {', '.join(missing)}", lake=str(path))
    warehouse = fields.get("warehouse")
    if warehouse and _scheme(warehouse) is None:  # a relative folder is relative to the config file
        fields["warehouse"] = str((path.parent / Path(warehouse).expanduser()).absolute())
    return _complete(fields, env, str(path))


def _complete(fields: dict[str, Any], env: Mapping[str, str], shown: str) -> LakeSpec:
    """Fill what `fields` lack from the SYNAPSE_LAKE_* variables; refuse a lake with no catalog."""
    catalog = fields.get("catalog") or env.get(ENV_CATALOG, "").strip()
    warehouse = fields.get("warehouse") or env.get(ENV_WAREHOUSE, "").strip()
    if not catalog:
        raise LakeError(
            f"lake {mask_url(shown)} has no catalog: set SYNAPSE_LAKE_CATALOG (e.g. postgresql+psycopg://user@host/"
            "lake) or name a lake config .json with \"catalog\"; a plain folder needs none",
            lake=mask_url(shown),
        )
    if not warehouse and not catalog.startswith(("http://", "https://")):
        raise LakeError(
            f"lake {mask_url(shown)} has no warehouse: set SYNAPSE_LAKE_WAREHOUSE (e.g. s3://bucket/prefix) or "
            "name a lake config .json with \"warehouse\"",
            lake=mask_url(shown),
        )
    if warehouse and (s := _scheme(warehouse)) is not None and s not in _STORAGE_SCHEMES and s != "file":
        raise LakeError(f"lake warehouse {warehouse}: unsupported scheme {s!r}; use s3://bucket/prefix or a folder",
                        lake=mask_url(shown))
    storage = {prop: env[f"SYNAPSE_LAKE_S3_{name}"] for name, prop in _ENV_S3.items()
               if env.get(f"SYNAPSE_LAKE_S3_{name}")}
    storage.update(fields.get("storage", {}))
    namespace = fields.get("namespace") or env.get(ENV_NAMESPACE) or DEFAULT_NAMESPACE
    return LakeSpec(catalog=catalog, warehouse=warehouse, namespace=namespace, storage=storage)
