"""Loads the generated transactions into the local Postgres: database ``retail``, table ``raw.transactions``.

Contract:
- :func:`reset` drops and recreates database ``retail`` (owned by the connecting role, which needs CREATEDB, as
  the local stack's ``pareis`` role has), with schemas ``raw`` (loads) and ``analytics`` (dbt). Idempotent.
- :func:`load` appends rows with one ``COPY … FROM STDIN (FORMAT csv)`` through psycopg; a load of a date range
  that is already there first deletes that range (``replace``), in the same transaction, as a backfill does.
- ``unit_price_null=True`` is the bad load of the scenario: the same rows with the price column lost (NULL).

Connection settings come from :class:`Warehouse` (defaults: the local stack, ``127.0.0.1:5432``, user and
password ``pareis``; ``DEMO_PG_*`` environment variables override).
"""

from __future__ import annotations

import datetime as dt
import io
import os
from dataclasses import dataclass

import pandas as pd
import psycopg
from psycopg import sql

DATABASE = "retail"
DDL = """
CREATE SCHEMA IF NOT EXISTS raw;
CREATE SCHEMA IF NOT EXISTS analytics;
CREATE TABLE IF NOT EXISTS raw.transactions (
    invoice       text          NOT NULL,
    stock_code    text          NOT NULL,
    description   text,
    quantity      integer       NOT NULL,
    invoice_date  timestamp     NOT NULL,
    unit_price    numeric(10,2),
    customer_id   integer,
    country       text
);
COMMENT ON TABLE raw.transactions IS
    'Online shop transaction lines (UCI Online Retail II shape); cancellations: C-prefixed, negative quantity.';
CREATE INDEX IF NOT EXISTS transactions_invoice_date ON raw.transactions (invoice_date);
"""


@dataclass(frozen=True)
class Warehouse:
    """Where the demo warehouse lives."""

    host: str = os.environ.get("DEMO_PG_HOST", "127.0.0.1")
    port: int = int(os.environ.get("DEMO_PG_PORT", "5432"))
    user: str = os.environ.get("DEMO_PG_USER", "pareis")
    password: str = os.environ.get("DEMO_PG_PASSWORD", "pareis")
    admin_database: str = os.environ.get("DEMO_PG_ADMIN_DB", "pareis")
    database: str = DATABASE

    def dsn(self, database: str | None = None) -> str:
        return (
            f"host={self.host} port={self.port} user={self.user} password={self.password} "
            f"dbname={database or self.database}"
        )

    def connect(self, database: str | None = None, *, autocommit: bool = False) -> psycopg.Connection:
        return psycopg.connect(self.dsn(database), autocommit=autocommit)


def reset(wh: Warehouse) -> None:
    """Drop and recreate the ``retail`` database with its schemas and the empty ``raw.transactions`` table."""
    with wh.connect(wh.admin_database, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(wh.database)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(wh.database)))
    with wh.connect() as conn:
        conn.execute(DDL)


def _csv(frame: pd.DataFrame, *, unit_price_null: bool) -> str:
    out = frame.copy()
    out["invoice_date"] = out["invoice_date"].dt.strftime("%Y-%m-%d %H:%M:%S")
    out["unit_price"] = None if unit_price_null else out["unit_price"].map("{:.2f}".format)
    buffer = io.StringIO()
    out.to_csv(buffer, header=False, index=False)
    return buffer.getvalue()


def load(
    wh: Warehouse,
    frame: pd.DataFrame,
    *,
    start: dt.date,
    end: dt.date,
    replace: bool = False,
    unit_price_null: bool = False,
) -> int:
    """COPY ``frame`` (rows dated in [start, end)) into ``raw.transactions``; returns the rows loaded.

    ``replace`` first deletes the rows already loaded for [start, end) (a backfill); ``unit_price_null`` loads
    the rows with ``unit_price`` NULL (the scenario's bad load).
    """
    data = _csv(frame, unit_price_null=unit_price_null)
    columns = sql.SQL(", ").join(sql.Identifier(c) for c in frame.columns)
    with wh.connect() as conn, conn.cursor() as cur:
        if replace:
            cur.execute(
                "DELETE FROM raw.transactions WHERE invoice_date >= %s AND invoice_date < %s",
                (start, end),
            )
        copy = sql.SQL("COPY raw.transactions ({}) FROM STDIN (FORMAT csv)").format(columns)
        with cur.copy(copy) as writer:
            step = 8 << 20
            for i in range(0, len(data), step):
                writer.write(data[i : i + step])
        cur.execute("ANALYZE raw.transactions")
    return len(frame)


def count(wh: Warehouse, where: str = "true") -> int:
    """Rows of ``raw.transactions`` matching ``where`` (a trusted SQL condition)."""
    with wh.connect() as conn:
        row = conn.execute(sql.SQL("SELECT count(*) FROM raw.transactions WHERE {}").format(sql.SQL(where))).fetchone()
    return int(row[0]) if row else 0
