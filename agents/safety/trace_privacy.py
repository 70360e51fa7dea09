"""LangSmith traces redacted as the audit log is: with tracing on, no secret leaves in one.

`LANGSMITH_TRACING=true` makes LangChain trace every run through the process's langsmith
client, which sends the model's settings (`serialized`: the endpoint, a proxy's password in
it), error texts (httpx quotes the URL whole, and a proxy may echo what it was sent) and the
provider's error body (recorded as the model run's outputs). The client takes two hooks;
each covers what the other misses, and both run `redact_data`:

- `anonymizer`: inputs, outputs, error and metadata, before a run is queued;
- `process_buffered_run_ops`: every field of the run as it will be sent (`serialized`,
  `extra`, `events`, tags...), on the client's own threads.

langsmith's `create_anonymizer` stops ten levels deep and leaves dict keys alone, and its
secret patterns miss a bare Mistral key: the audit log's redaction covers all three.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from agents.safety.redaction import redact_data, register_secret

if TYPE_CHECKING:
    from langsmith import Client

# Left as they are. What places a run: the client drops a batch whose ids come back changed
# (a UUID turned into its text included), and none of them holds text. Attachments: files,
# which text redaction cannot read (ShopBot attaches none).
_UNTOUCHED = frozenset(
    {
        "id",
        "trace_id",
        "parent_run_id",
        "dotted_order",
        "start_time",
        "end_time",
        "session_id",
        "reference_example_id",
        "attachments",
    }
)
# Each run is redacted and sent as soon as it is recorded: with a larger buffer the last
# runs wait until it fills (an idle app's last turn, or all of them lost at exit).
_RUNS_PER_BATCH = 1


def keep_secrets_out_of_traces(secrets: Iterable[str]) -> None:
    """With LangSmith tracing on, trace this process's runs through a client that redacts
    `secrets`, every registered one and anything credential-shaped from all it sends. Call
    it before the first run; with tracing off it does nothing (no client is made)."""
    import langsmith
    from langsmith.utils import tracing_is_enabled

    if not tracing_is_enabled():
        return
    for secret in secrets:
        register_secret(secret)  # what the client's hooks redact
    global _client  # noqa: PLW0603 (one client per process: see below)
    if _client is None:
        _client = redacting_client()
    # Process-wide: every LangChainTracer takes this client (langsmith.run_trees), so a run
    # outside any context we set is covered too. One client, not one per engine: a client
    # replaced here keeps the runs it has not sent yet, and a flush no longer reaches them.
    langsmith.configure(client=_client)


_client: Client | None = None


def redacting_client() -> Client:
    """A langsmith client (endpoint, key and project from the environment) that redacts
    every registered secret and anything credential-shaped from every run."""
    from langsmith import Client

    def anonymize(data: dict[str, Any]) -> dict[str, Any]:
        # JSON already: the client round-trips the data, and wraps an error as {"error": str}.
        redacted: dict[str, Any] = redact_data(data)
        return redacted

    def redact_runs(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {
                name: value if name in _UNTOUCHED else redact_data(_as_sent(value))
                for name, value in run.items()
            }
            for run in runs
        ]

    return Client(
        anonymizer=anonymize,
        process_buffered_run_ops=redact_runs,
        run_ops_buffer_size=_RUNS_PER_BATCH,
    )


def _as_sent(value: Any) -> Any:
    """`value` as the plain JSON the client will send for it: a secret inside a message or
    a pydantic object is then a string `redact_data` reaches."""
    try:
        # The client's own serializer (private: there is no public one), so what is redacted
        # is what would have been sent.
        from langsmith._internal._serde import dumps_json
    except ImportError:  # moved in a later langsmith: plain text of what json cannot write
        return json.loads(json.dumps(value, default=str))
    return json.loads(dumps_json(value))
