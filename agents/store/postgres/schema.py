"""ShopBot's tables in a PostgreSQL database: the same tables as the home's SQLite file
(agents/store/threads.py, shop.py, leases.py, escalations.py, agents/audit/log.py), in
PostgreSQL's words. LangGraph's saver makes its own checkpoint tables (checkpoints.py).

What the database enforces here, as SQLite does at home: one refund per order (UNIQUE), an
audit log that refuses UPDATE, DELETE and TRUNCATE (triggers), valid JSON details. Text
that is compared or sorted (ids, ISO timestamps) uses the "C" collation, byte order, as
SQLite does, whatever the database's locale.
"""

from __future__ import annotations

# Bumped when the statements below change: a database holding an older schema gets them
# again (every statement is idempotent).
SCHEMA_VERSION = "1"

# The text an audit event is found by, as agents/audit/search.py's `indexed_text_sql`
# builds it in SQLite: thread, agent and kind on their own lines, then the detail's
# top-level `key=value` pairs on one line as the summary shows them, then each nested pair
# on a line of its own (depth first). A string value is its text, anything else its JSON.
# (`json`, not `jsonb`: the detail's own text and key order are kept.) NUL, which PostgreSQL
# text cannot hold, is searched for as U+FFFD.
_FUNCTIONS = (
    # (PostgreSQL's JSON functions refuse a `\u0000` anywhere in the document.)
    r"""CREATE OR REPLACE FUNCTION shopbot_searchable(detail json) RETURNS json
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT CASE WHEN strpos(detail::text, '\u0000') > 0
            THEN replace(detail::text, '\u0000', '\ufffd')::json ELSE detail END
    $$""",
    r"""CREATE OR REPLACE FUNCTION shopbot_pair(key text, value json) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT replace(replace(replace(key || '=' || CASE json_typeof(value)
                WHEN 'string' THEN value #>> '{}' ELSE value::text END,
            E'\r\n', ' '), E'\n', ' '), E'\t', ' ')
    $$""",
    # Depth first, each object member's pair before what it holds (SQLite's json_tree).
    # PL/pgSQL: its plans are kept for the session; a recursive SQL function is planned anew
    # at every call (20 ms an event).
    r"""CREATE OR REPLACE FUNCTION shopbot_nested_pairs(node json, top boolean) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
        DECLARE
            found text[] := '{}';
            item record;
            inside text;
        BEGIN
            IF json_typeof(node) = 'object' THEN
                FOR item IN SELECT key, value
                        FROM json_each(node) WITH ORDINALITY AS m(key, value, ord)
                        ORDER BY ord LOOP
                    IF NOT top THEN
                        found := found || shopbot_pair(item.key, item.value);
                    END IF;
                    inside := shopbot_nested_pairs(item.value, false);
                    IF inside IS NOT NULL THEN
                        found := found || inside;
                    END IF;
                END LOOP;
            ELSIF json_typeof(node) = 'array' THEN
                FOR item IN SELECT value
                        FROM json_array_elements(node) WITH ORDINALITY AS e(value, ord)
                        ORDER BY ord LOOP
                    inside := shopbot_nested_pairs(item.value, false);
                    IF inside IS NOT NULL THEN
                        found := found || inside;
                    END IF;
                END LOOP;
            END IF;
            RETURN nullif(array_to_string(found, E'\n'), '');
        END
    $$""",
    r"""CREATE OR REPLACE FUNCTION shopbot_event_text(
        thread_id text, agent text, kind text, detail json) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
        DECLARE
            searched json := shopbot_searchable(detail);
            pairs text;
        BEGIN
            IF json_typeof(searched) = 'object' THEN
                SELECT string_agg(shopbot_pair(key, value), ' ' ORDER BY ord) INTO pairs
                FROM json_each(searched) WITH ORDINALITY AS member(key, value, ord);
            END IF;
            RETURN coalesce(thread_id, '') || E'\n' || coalesce(agent, '') || E'\n' || kind
                || E'\n' || coalesce(pairs, '')
                || coalesce(E'\n' || shopbot_nested_pairs(searched, true), '');
        END
    $$""",
    # The append-only rule: refused by the database, whoever connects (a superuser aside).
    """CREATE OR REPLACE FUNCTION shopbot_events_append_only() RETURNS trigger
    LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'audit events are append-only: % refused', TG_OP
                USING ERRCODE = 'restrict_violation';
        END
    $$""",
)

_TABLES = (
    """CREATE TABLE IF NOT EXISTS meta (
        key text COLLATE "C" PRIMARY KEY,
        value text NOT NULL
    )""",
    # The thread registry (threads.py). `touched` orders the list: from a sequence here,
    # since two processes' transactions can run at once (SQLite has one writer at a time).
    "CREATE SEQUENCE IF NOT EXISTS threads_touched_seq",
    """CREATE TABLE IF NOT EXISTS threads (
        thread_id text COLLATE "C" PRIMARY KEY,
        customer text,
        title text NOT NULL DEFAULT '',
        created_at text COLLATE "C" NOT NULL,
        updated_at text COLLATE "C" NOT NULL,
        active_agent text NOT NULL,
        status text NOT NULL CHECK (status IN ('idle', 'answering', 'awaiting_approval', 'error')),
        turns integer NOT NULL DEFAULT 0,
        touched bigint NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX IF NOT EXISTS threads_touched ON threads(touched)",
    """CREATE TABLE IF NOT EXISTS lines (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        thread_id text COLLATE "C" NOT NULL REFERENCES threads(thread_id),
        ts text COLLATE "C" NOT NULL,
        role text NOT NULL CHECK (role IN ('customer', 'assistant', 'note')),
        text text NOT NULL,
        agent text
    )""",
    "CREATE INDEX IF NOT EXISTS lines_thread ON lines(thread_id, id)",
    """CREATE TABLE IF NOT EXISTS drafts (
        thread_id text COLLATE "C" PRIMARY KEY,
        text text NOT NULL,
        saved_at text COLLATE "C" NOT NULL
    )""",
    # Who holds a turn, for naming them; whether they hold it is their advisory lock's
    # (leases.py).
    """CREATE TABLE IF NOT EXISTS turn_leases (
        thread_id text COLLATE "C" PRIMARY KEY,
        host text NOT NULL,
        pid integer NOT NULL,
        owner text NOT NULL,
        expires_at double precision NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS escalations (
        thread_id text COLLATE "C" PRIMARY KEY,
        since text COLLATE "C" NOT NULL,
        agent text,
        reason text NOT NULL
    )""",
    # The shop and its refund ledger (shop.py): UNIQUE(order_id) is the once-per-order rule.
    """CREATE TABLE IF NOT EXISTS orders (
        order_id text COLLATE "C" PRIMARY KEY,
        customer text NOT NULL,
        product text NOT NULL,
        status text NOT NULL,
        amount_cents bigint NOT NULL CHECK (amount_cents >= 0),
        delivery text NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS refunds (
        reference text COLLATE "C" PRIMARY KEY,
        order_id text COLLATE "C" NOT NULL UNIQUE REFERENCES orders(order_id),
        amount_cents bigint NOT NULL CHECK (amount_cents > 0),
        reason text NOT NULL,
        thread_id text COLLATE "C",
        created_at text COLLATE "C" NOT NULL
    )""",
    # The audit log (agents/audit/log.py), with the text it is searched by kept beside.
    """CREATE TABLE IF NOT EXISTS events (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        ts text COLLATE "C" NOT NULL,
        thread_id text COLLATE "C",
        agent text,
        kind text COLLATE "C" NOT NULL,
        detail json NOT NULL DEFAULT '{}',
        body text GENERATED ALWAYS AS (shopbot_event_text(thread_id, agent, kind, detail)) STORED
    )""",
    "CREATE INDEX IF NOT EXISTS events_thread ON events(thread_id, id)",
    "CREATE INDEX IF NOT EXISTS events_kind ON events(kind, id)",
    "CREATE INDEX IF NOT EXISTS events_ts ON events(ts)",
    # (Dropped and made again rather than CREATE OR REPLACE TRIGGER, which needs 14.)
    "DROP TRIGGER IF EXISTS events_no_update_or_delete ON events",
    """CREATE TRIGGER events_no_update_or_delete BEFORE UPDATE OR DELETE ON events
        FOR EACH ROW EXECUTE FUNCTION shopbot_events_append_only()""",
    "DROP TRIGGER IF EXISTS events_no_truncate ON events",
    """CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
        FOR EACH STATEMENT EXECUTE FUNCTION shopbot_events_append_only()""",
)

SCHEMA: tuple[str, ...] = (*_FUNCTIONS, *_TABLES)

# Trigram search (the `pg_trgm` extension, shipped with PostgreSQL and trusted: a database's
# owner may create it): an index that finds substrings, as SQLite's trigram FTS5 does.
# Without it search still works, scanning every event.
TRIGRAM_EXTENSION = "CREATE EXTENSION IF NOT EXISTS pg_trgm"
TRIGRAM_INDEX = "CREATE INDEX IF NOT EXISTS events_body ON events USING gin (body gin_trgm_ops)"

# What the schema makes, by name: when all are there (and the version is this one), opening
# the database writes nothing.
TABLES = (
    "meta",
    "threads_touched_seq",
    "threads",
    "lines",
    "drafts",
    "turn_leases",
    "escalations",
    "orders",
    "refunds",
    "events",
)
