"""Audit search in PostgreSQL: the terms agents/audit/search.py reads from what a person
types, found in each event's `body` (the text its row shows, schema.py), case-insensitively
and as substrings, as the SQLite file's trigram index finds them.

`ILIKE '%term%'` is what the trigram index (`pg_trgm`) serves. A long term is looked for by
its start that way, then confirmed whole with `strpos`, which is linear: a LIKE pattern of
thousands of characters over repetitive text backtracks for minutes.
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.audit.search import MAX_LIKE_CHARS, MAX_PHRASE_CHARS, Term, like_escaped


def postgres_text_clause(terms: Sequence[Term]) -> tuple[str, list[str]]:
    """A predicate on the event `e` that holds when every term is found, and its parameters."""
    clauses: list[str] = []
    params: list[str] = []
    for term in terms:
        alternatives: list[str] = []
        for needle in term:
            if len(needle) <= MAX_LIKE_CHARS:
                alternatives.append("e.body ILIKE ?")
                params.append(f"%{like_escaped(needle)}%")
            else:
                alternatives.append("(e.body ILIKE ? AND strpos(lower(e.body), lower(?)) > 0)")
                params += [f"%{like_escaped(needle[:MAX_PHRASE_CHARS])}%", needle]
        clauses.append(
            alternatives[0] if len(alternatives) == 1 else "(" + " OR ".join(alternatives) + ")"
        )
    return " AND ".join(clauses), params
