"""Free-text search of the audit log: the text an event is found by, and a search as SQL.

An event is found by what its row shows (the viewer's table, `shopbot audit`): thread, agent,
kind, and the detail as `key=value` pairs, strings as they are and other values as JSON
(`ok=true`, `codes=[]`, `args={"order_id":"ORD-001"}`). Each nested pair is there on its own
too (`order_id=ORD-001`), since that is how people type it. The index is FTS5 with trigrams,
so every term is found as a substring, case-insensitively.

A search is terms separated by spaces, and an event must show every one of them:
- `"two words"` or `key="two words"`: one term, spaces included, quotes removed. A quote
  that opens no such phrase (its next quote is not followed by a space or the end) is text.
- `key: value` or `"key": "value",` (a line of the detail pane's JSON): the pair
  `key=value`, or that text exactly as typed ("Status: Delivered" inside a tool result).
- Nothing else is syntax: `AND`, `OR`, `NEAR`, `*`, `-`, `(`, `:` are text to find.
- At most MAX_TERMS terms: more is an InputError that says what to do.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agents.errors import InputError
from agents.store.sqlite import storable_text

# A term: the texts that each count as finding it (a pair's two spellings, or one text).
Term = tuple[str, ...]

# Bumped whenever the indexed text changes: an older index is rebuilt on open.
INDEX_VERSION = 1
# Trigram FTS needs 3 characters; a shorter term is tested on each row's text.
_MIN_FTS_CHARS = 3
# Far more than a person types, far fewer than SQLite's expression depth (1,000) allows.
MAX_TERMS = 100
# Matching a phrase (FTS5) or a LIKE pattern costs its length times the row's on repetitive
# text: a pasted 60,000-character term took minutes. The index looks for a long term's start
# only, and a long needle is confirmed with Python's `in`, which is linear.
MAX_PHRASE_CHARS = 64
MAX_LIKE_CHARS = 100

# A value as the row shows it. JSON text for objects and arrays is the stored text (Python's
# compact dump, as the summary prints it); a real is SQLite's 15 significant digits, which
# is Python's own form for any amount.
_SHOWN_VALUE = (
    "CASE type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'null' "
    "ELSE value END"
)
# The row prints each pair on one line: a line break or tab reads as a space.
_PAIR = (
    "replace(replace(replace(key || '=' || " + _SHOWN_VALUE + ", char(13) || char(10), ' '), "
    "char(10), ' '), char(9), ' ')"
)


def indexed_text_sql(row: str) -> str:
    """SQL for the text `row` (an events row: `new`, `e`) is found by: thread, agent and kind
    on their own lines, then the detail's top-level pairs on one line as the summary shows
    them, then each nested pair on a line of its own."""
    return (
        f"coalesce({row}.thread_id, '') || char(10)"  # noqa: S608 - `row` is ours, not input
        f" || coalesce({row}.agent, '') || char(10) || {row}.kind || char(10)"
        f" || coalesce((SELECT group_concat({_PAIR}, ' ') FROM json_each({row}.detail)), '')"
        f" || coalesce((SELECT char(10) || group_concat({_PAIR}, char(10))"
        f" FROM json_tree({row}.detail) WHERE typeof(key) = 'text' AND path <> '$'), '')"
    )


_FTS_TABLE = "CREATE VIRTUAL TABLE IF NOT EXISTS events_fts USING fts5(body, tokenize='trigram')"
_SYNC_TRIGGER = f"""CREATE TRIGGER IF NOT EXISTS events_fts_sync AFTER INSERT ON events BEGIN
    INSERT INTO events_fts(rowid, body) VALUES (new.id, {indexed_text_sql("new")});
END"""  # noqa: S608 - constant SQL
# Part of the audit log's schema (after the events table).
SEARCH_SCHEMA = (_FTS_TABLE, _SYNC_TRIGGER)
# Run in one transaction when the file's index is older than INDEX_VERSION. The trigger keeps
# its name, so an older ShopBot opening the file afterwards keeps this one (IF NOT EXISTS).
REINDEX = (
    "DROP TRIGGER IF EXISTS events_fts_sync",
    "DROP TABLE IF EXISTS events_fts",  # far faster than deleting 100k rows from it
    *SEARCH_SCHEMA,
    f"INSERT INTO events_fts(rowid, body) SELECT e.id, {indexed_text_sql('e')} FROM events e",  # noqa: S608
    f"PRAGMA user_version = {INDEX_VERSION}",
)

# A phrase: `"..."` or `key="..."`, its next quote being the last character before a space or
# the end (or a comma there, as JSON lines end); otherwise (`"order_id":"ORD-001"` copied from a
# row) the quotes are text.
_TOKEN = re.compile(r'(?P<key>[^\s"]*=)?"(?P<phrase>[^"]*)",?(?=\s|$)|(?P<word>\S+)')
# `key:` or `"key":` — a pair's key as the detail pane (and the index before) wrote it.
_COLON_KEY = re.compile(r'"?(?P<key>[^\s"]+?)"?:')


def parse_search(text: str) -> list[Term]:
    """The terms of a search as typed (see the module docstring); [] for blank text.
    InputError for more than MAX_TERMS terms."""
    # SQLite cuts text at NUL and FTS5 calls the phrase unterminated: read it as a space.
    # Undecodable bytes were stored as U+FFFD: searched for as such (SQLite refuses them).
    text = storable_text(text.replace("\x00", " "))
    tokens = [_token_text(match) for match in _TOKEN.finditer(text)]
    terms: list[Term] = []
    index = 0
    while index < len(tokens):
        token, quoted = tokens[index]
        colon_key = None if quoted else _COLON_KEY.fullmatch(token)
        if colon_key is None:
            terms.append((token,))
            index += 1
            continue
        key = colon_key["key"]
        value = tokens[index + 1][0] if index + 1 < len(tokens) else ""
        typed = f"{key}: {value}".rstrip()
        # `"ok": true,` from the detail pane: the comma ends the JSON line, not the value.
        terms.append(tuple(dict.fromkeys((f"{key}={value.removesuffix(',')}", typed))))
        index += 2
    unique = list(dict.fromkeys(terms))
    if len(unique) > MAX_TERMS:
        raise InputError(
            f"The search has {len(unique):,} words; at most {MAX_TERMS} are searched together. "
            'Use fewer, or put a phrase in quotes ("like this").'
        )
    return unique


def _token_text(match: re.Match[str]) -> tuple[str, bool]:
    """A token's text to find, and whether it was a quoted phrase."""
    if match["word"] is not None:
        return match["word"], False
    # The row shows runs of whitespace as one space.
    phrase = " ".join(match["phrase"].split())
    key = match["key"] or ""
    if not phrase and not key:
        return " ".join(match[0].split()), False  # `""`: as shown for an empty nested string
    return key + phrase, True


def text_clause(terms: Sequence[Term], *, index: bool) -> tuple[str, list[str]]:
    """A predicate on the FTS row `f` that holds when every term is found, and its parameters.

    With `index`, terms of 3+ characters go through the trigram index (one MATCH); shorter ones,
    and all of them without `index`, are tested on the row's text, as are long ones to confirm.
    """
    indexed = [t for t in terms if index and min(map(len, t)) >= _MIN_FTS_CHARS]
    clauses: list[str] = []
    params: list[str] = []
    if indexed:
        # Every term a quoted FTS5 string: a phrase, which with trigrams is a substring, and
        # in which nothing but `"` (doubled) is syntax.
        clauses.append("events_fts MATCH ?")
        params.append(" AND ".join(_fts_term(term) for term in indexed))
    for term in terms:
        if term not in indexed or max(map(len, term)) > MAX_PHRASE_CHARS:
            predicates = [_scan_predicate(needle) for needle in term]
            clauses.append(_any_of([sql for sql, _ in predicates]))
            params.extend(param for _, param in predicates)
    return " AND ".join(clauses), params


def _fts_term(term: Term) -> str:
    starts = [needle[:MAX_PHRASE_CHARS] for needle in term]
    phrases = ['"' + start.replace('"', '""') + '"' for start in starts]
    return phrases[0] if len(phrases) == 1 else "(" + " OR ".join(phrases) + ")"


def _scan_predicate(needle: str) -> tuple[str, str]:
    if needle.isascii() and len(needle) <= MAX_LIKE_CHARS:
        # LIKE folds ASCII case only, which is all an ASCII needle needs.
        return "f.body LIKE ? ESCAPE '\\'", f"%{like_escaped(needle)}%"
    return "shopbot_contains(f.body, ?)", needle.casefold()


def _any_of(predicates: list[str]) -> str:
    return predicates[0] if len(predicates) == 1 else "(" + " OR ".join(predicates) + ")"


def like_escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def contains(body: str | None, needle: str) -> bool:
    """`shopbot_contains(body, needle)`: `needle` (casefolded) is in `body`, any case."""
    return body is not None and needle in body.casefold()
