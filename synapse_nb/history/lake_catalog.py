"""The lake's Iceberg side: its catalog, one table per relation (partitioned by day), their schemas, and
pyiceberg's, SQLAlchemy's and the storage's errors mapped once to one-line LakeErrors (`lake_errors`).

Every table has the relation's columns (JSON as text, timestamps as naive UTC microseconds), then
`_schema` (the history schema version of the writer), `_source` (the history file's id) and `_seq`
(the row's number in that file): (`_source`, `_seq`) is unique across the lake. Each is partitioned by
`day(<time column>)`. A newer synapse_nb adds its new columns to a table with an Iceberg schema update
(`union_by_name`); older rows read them as null. Columns are never renamed or dropped.
"""

from __future__ import annotations

import contextlib
import random
import time
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import DayTransform
from pyiceberg.types import (
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    NestedField,
    PrimitiveType,
    StringType,
    TimestampType,
)

from ..errors import LakeError
from .lake_spec import LakeSpec
from .schema import COLUMNS, TIME_COLUMN, Kind

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table

__all__ = [
    "BOOKKEEPING",
    "COMMIT_TIMEOUT",
    "LakeTables",
    "conform",
    "lake_errors",
    "partition_spec",
    "retry_commits",
    "table_schema",
]

T = TypeVar("T")

_KIND: dict[Kind, PrimitiveType] = {
    "str": StringType(),
    "int": LongType(),
    "float": DoubleType(),
    "bool": BooleanType(),
    "ts": TimestampType(),
    "json": StringType(),  # plain text: every engine reads it
}
BOOKKEEPING: dict[str, PrimitiveType] = {"_schema": IntegerType(), "_source": StringType(), "_seq": LongType()}
COMMIT_TIMEOUT = 120.0  # seconds a commit keeps retrying while other writers win the race
_FIRST_WAIT, _MAX_WAIT = 0.02, 1.0  # seconds between attempts: jittered, doubling
_CREATE_ATTEMPTS = 5  # creating the catalog's own tables, for publishers that open a new catalog at once


class LakeTables:
    """The catalog of `spec` and its tables, opened once, loaded fresh when asked (`load`), created on first
    write (`ensure`). `close()` (or garbage collection) closes the catalog's database connections."""

    def __init__(self, spec: LakeSpec) -> None:
        self.spec = spec
        if spec.folder is not None:
            _ensure_folder(spec)
        with lake_errors(spec, "open"):
            self.catalog: Catalog = _open_catalog(spec)
        engine = getattr(self.catalog, "engine", None)  # a SQL catalog's pool of connections
        self._close = weakref.finalize(self, engine.dispose) if engine is not None else None

    def close(self) -> None:
        if self._close is not None:
            self._close()

    def __enter__(self) -> LakeTables:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def identifier(self, relation: str) -> tuple[str, str]:
        return (self.spec.namespace, relation)

    def load(self, relation: str) -> Table | None:
        """The table of `relation` as the catalog has it now; None if nothing was published to it yet."""
        with lake_errors(self.spec, "read"):
            try:
                return self.catalog.load_table(self.identifier(relation))
            except NoSuchTableError:
                return None

    def ensure(self, relation: str, arrow: pa.Schema) -> Table:
        """The table of `relation`, created if missing, with every column of `arrow` (added if missing)."""
        with lake_errors(self.spec, "publish to"):
            table = self.load(relation)
            if table is None:
                with contextlib.suppress(*_namespace_races()):
                    self.catalog.create_namespace_if_not_exists(self.spec.namespace)
                try:
                    table = self.catalog.create_table(
                        self.identifier(relation), schema=table_schema(relation),
                        partition_spec=partition_spec(relation),
                        properties={"commit.retry.num-retries": "0"},  # see no_retry
                    )
                except TableAlreadyExistsError:  # another publisher created it first
                    table = self.catalog.load_table(self.identifier(relation))
            missing = [f for f in arrow if f.name not in {c.name for c in table.schema().fields}]
            if missing:
                table = self._evolve(relation, missing)
            return table

    def _evolve(self, relation: str, added: list[pa.Field]) -> Table:
        """Add columns of a newer history schema (older rows read them as null)."""
        fields = [NestedField(i + 1, f.name, _iceberg_type(f.type), required=False) for i, f in enumerate(added)]

        def attempt() -> Table:
            table = self.catalog.load_table(self.identifier(relation))
            with table.update_schema() as update:
                update.union_by_name(Schema(*fields))
            return self.catalog.load_table(self.identifier(relation))

        return retry_commits(attempt, self.spec)


def _namespace_races() -> tuple[type[BaseException], ...]:
    """What creating the namespace raises when another publisher created it meanwhile: pyiceberg's own error, or, from
    a SQL catalog (which checks, then inserts), the database's unique-key violation of the insert that lost."""
    try:
        from sqlalchemy.exc import IntegrityError
    except ImportError:  # a REST catalog's install: no SQL catalog, no such race here
        return (NamespaceAlreadyExistsError,)
    return (NamespaceAlreadyExistsError, IntegrityError)


def _ensure_folder(spec: LakeSpec) -> None:
    """A folder lake: the folder exists, and holds a lake or nothing (never someone's photos)."""
    folder = spec.folder
    assert folder is not None
    if folder.exists() and not folder.is_dir():
        raise LakeError(f"lake {folder} is a file: name a folder", lake=str(folder))
    if (folder / "_lake.json").exists():
        raise LakeError(
            f"{folder} is a Parquet lake of the retired format: move it into an Iceberg lake with "
            f"%synapse lake migrate {folder} NEW (then use NEW)",
            lake=str(folder),
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        others = [p.name for p in folder.iterdir() if not p.name.startswith(".")
                  and p.name not in (spec.catalog.rpartition("/")[2], "warehouse")]
    except OSError as exc:
        raise LakeError(f"lake {folder} cannot be used ({exc.strerror or exc}): name a writable folder",
                        lake=str(folder)) from exc
    if others:
        raise LakeError(f"lake {folder} holds other files ({others[0]}, ...): name an empty folder or a lake",
                        lake=str(folder))


def _iceberg_type(arrow: pa.DataType) -> PrimitiveType:
    """The Iceberg type of a column a newer history schema added (anything unusual is kept as text)."""
    if pa.types.is_boolean(arrow):
        return BooleanType()
    if pa.types.is_int32(arrow) or pa.types.is_int16(arrow) or pa.types.is_int8(arrow):
        return IntegerType()
    if pa.types.is_integer(arrow):
        return LongType()
    if pa.types.is_floating(arrow):
        return DoubleType()
    if pa.types.is_timestamp(arrow):
        return TimestampType()
    return StringType()


def _open_catalog(spec: LakeSpec) -> Catalog:
    if spec.is_rest:
        from pyiceberg.catalog.rest import RestCatalog

        return RestCatalog("synapse", **spec.catalog_properties())
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("synapse", **{**spec.catalog_properties(), "init_catalog_tables": "false"})
    try:
        _create_catalog_tables(catalog)
    except BaseException:
        catalog.engine.dispose()
        raise
    return catalog


def _create_catalog_tables(catalog: SqlCatalog) -> None:
    """Create the catalog's own tables where missing. pyiceberg would check for them, then create them: the first
    publishers of a new team catalog race in between, and the losers failed with PostgreSQL's duplicate-key error
    on its type catalog. Here a lost race is tried again, and the check then finds the winner's tables."""
    import sqlalchemy.exc

    for attempt in range(_CREATE_ATTEMPTS):
        try:
            catalog.create_tables()
            return
        except (sqlalchemy.exc.IntegrityError, sqlalchemy.exc.ProgrammingError):
            if attempt == _CREATE_ATTEMPTS - 1:
                raise
            time.sleep(random.uniform(_FIRST_WAIT, 2 * _FIRST_WAIT) * (attempt + 1))


def table_schema(relation: str) -> Schema:
    """The Iceberg schema a relation's table is created with (field ids in this order)."""
    columns = [(c, _KIND[k]) for c, k in COLUMNS[relation].items()] + list(BOOKKEEPING.items())
    return Schema(*(NestedField(i, c, t, required=False) for i, (c, t) in enumerate(columns, start=1)))


def partition_spec(relation: str) -> PartitionSpec:
    """`day(<time column>)`: a scan with a time filter reads only the days it covers."""
    time_column = TIME_COLUMN[relation]
    source_id = list(COLUMNS[relation]).index(time_column) + 1
    return PartitionSpec(PartitionField(source_id=source_id, field_id=1000, transform=DayTransform(),
                                        name=f"{time_column}_day"))


def conform(rows: pa.Table, table: Table) -> pa.Table:
    """`rows` with exactly the table's columns, in its order and types: null for the ones they lack (a
    table a newer synapse_nb has widened)."""
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    target = schema_to_pyarrow(table.schema(), include_field_ids=False)
    arrays = []
    for f in target:
        if f.name in rows.column_names:
            column = rows.column(f.name)
            arrays.append(column if column.type == f.type else column.cast(f.type))
        else:
            arrays.append(pa.nulls(rows.num_rows, f.type))
    return pa.Table.from_arrays(arrays, schema=target)


def retry_commits(attempt: Callable[[], T], spec: LakeSpec, timeout: float = COMMIT_TIMEOUT) -> T:
    """Run `attempt` until no other writer's commit beats it (optimistic concurrency: each attempt reads the
    table afresh); LakeError after `timeout` seconds of losing."""
    deadline = time.monotonic() + timeout
    wait = _FIRST_WAIT
    while True:
        try:
            with lake_errors(spec, "publish to", passthrough=(CommitFailedException,)):
                return attempt()
        except CommitFailedException as exc:
            if time.monotonic() + wait > deadline:
                raise LakeError(
                    f"lake {spec.name}: other writers kept committing for {timeout:.0f} s ({_first_line(exc)}); "
                    "nothing of this commit landed: try again",
                    lake=spec.name,
                ) from exc
            time.sleep(random.uniform(wait / 2, wait))  # backoff between attempts, not synchronisation
            wait = min(wait * 2, _MAX_WAIT)


@contextlib.contextmanager
def lake_errors(spec: LakeSpec, doing: str, passthrough: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
    """Map what the catalog, pyiceberg and the storage raise to one LakeError line naming the part at fault."""
    import sqlalchemy.exc

    try:
        yield
    except LakeError:
        raise
    except passthrough:
        raise
    except sqlalchemy.exc.SQLAlchemyError as exc:
        raise LakeError(
            f"could not {doing} lake {spec.name}: its catalog cannot be used ({_first_line(exc)}); nothing was "
            "changed: check the catalog database is running and reachable, then try again",
            lake=spec.name,
        ) from exc
    except (OSError, pa.ArrowException) as exc:
        raise LakeError(
            f"could not {doing} lake {spec.name}: its storage {spec.warehouse} failed ({_first_line(exc)}); nothing "
            "was committed: check it is reachable, writable and has space, then try again",
            lake=spec.name,
        ) from exc
    except CommitFailedException as exc:
        raise LakeError(f"could not {doing} lake {spec.name}: {_first_line(exc)}; nothing was committed: try again",
                        lake=spec.name) from exc
    except ModuleNotFoundError as exc:
        raise LakeError(
            f"could not {doing} lake {spec.name}: {exc.name} is not installed (a PostgreSQL catalog needs "
            "pip install 'synapse_nb[lake-postgres]')",
            lake=spec.name,
        ) from exc


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split("\n", 1)[0].split()) or type(exc).__name__
    return text if len(text) <= 240 else text[:237] + "..."
