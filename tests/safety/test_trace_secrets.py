"""With LangSmith tracing on, no secret ShopBot knows reaches a trace.

A whole refund conversation (message, approval, approve) runs through the `shopbot` command
in process, with the real ChatMistralAI client against the strict fake Mistral server, and
the real langsmith client posting to a capture server on 127.0.0.1. Every decoded string and
key it received is searched for the API key, the proxy password of MISTRAL_BASE_URL and the
Basic auth httpx makes of it. One answer is a 500 whose body echoes a credential: the error
is traced as the client raised it, the URL with its password included.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import langsmith
import pytest
from langchain_core.load import dumpd
from langsmith import run_trees
from langsmith import utils as langsmith_utils

from agents.models.factory import make_model
from agents.runner import engine as engine_module
from agents.safety import redaction, trace_privacy
from agents.settings import Settings
from shopbot_tui.cli.main import main
from tests.support.fake_mistral import FakeMistralServer, basic_auth, text, tool_call
from tests.support.langsmith_capture import LangSmithCapture, Mode

KEY = "Tr4ceSecretKey" + "7" * 18  # the Mistral shape: 32 alphanumerics
PROXY_USER = "proxy"
PASSWORD = "s3cret-pw"
# What httpx sends for the URL's userinfo; short enough (20 characters) that no pattern
# for key-shaped text finds it: only knowing it does.
BASIC = basic_auth(PROXY_USER, PASSWORD).removeprefix("Basic ")
REASON = "the left earcup stopped working"


@dataclass(frozen=True)
class Setup:
    """How ShopBot reaches Mistral, and what the failing answer echoes."""

    name: str
    password_in_url: bool

    def fake(self) -> FakeMistralServer:
        if self.password_in_url:
            # httpx sends the URL's userinfo as Basic auth instead of the key: a proxy's job.
            return FakeMistralServer(proxy_credentials=(PROXY_USER, PASSWORD))
        return FakeMistralServer(api_key=KEY)

    def base_url(self, fake: FakeMistralServer) -> str:
        if self.password_in_url:
            return fake.base_url.replace("http://", f"http://{PROXY_USER}:{PASSWORD}@")
        return fake.base_url

    def echo(self) -> dict[str, Any]:
        # A proxy quoting what it was sent, bare: no `Authorization:` label to recognise.
        sent = BASIC if self.password_in_url else KEY
        return {"object": "error", "message": f"upstream refused {sent}", "code": "1000"}


SETUPS = [
    Setup("proxy password in the URL", password_in_url=True),
    Setup("key only", password_in_url=False),
]
SECRETS = (KEY, PASSWORD, BASIC)


@pytest.fixture
def fresh_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No tracing settings but the test's, and nothing left configured afterwards."""
    for name in os.environ:
        if name.startswith(("MISTRAL_", "SHOPBOT_", "LANGSMITH_", "LANGCHAIN_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("SHOPBOT_HOME", str(tmp_path))
    # Registered secrets and the tracing client are per process: this test's own.
    monkeypatch.setattr(redaction, "_registered", set())
    monkeypatch.setattr(trace_privacy, "_client", None)
    root = logging.getLogger()
    before = list(root.handlers)
    threads = set(threading.enumerate())
    yield tmp_path
    run_trees.configure(client=None)
    # The servers' threads and the client's; the library's shared thread pools stay.
    for thread in set(threading.enumerate()) - threads:
        if not thread.name.startswith("ThreadPoolExecutor"):
            thread.join(timeout=5)
            assert not thread.is_alive(), thread
    for name in [n for n in os.environ if n.startswith("LANGSMITH_")]:
        monkeypatch.delenv(name)
    reread_langsmith_settings()
    # main() points the root logger at the home's log file: take that back.
    for handler in [h for h in root.handlers if h not in before]:
        root.removeHandler(handler)
        handler.close()


def reread_langsmith_settings() -> None:
    # langsmith reads each LANGSMITH_* variable once (functools.lru_cache).
    langsmith_utils.get_env_var.cache_clear()  # type: ignore[attr-defined]


def traced_refund(
    setup: Setup, mode: Mode, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> LangSmithCapture:
    """The conversation, traced into the capture server it returns (stopped by then)."""
    with LangSmithCapture(mode) as capture, setup.fake() as fake:
        monkeypatch.setenv("MISTRAL_API_KEY", KEY)
        monkeypatch.setenv("MISTRAL_BASE_URL", setup.base_url(fake))
        monkeypatch.setenv("LANGSMITH_TRACING", "true")
        monkeypatch.setenv("LANGSMITH_ENDPOINT", capture.url)
        monkeypatch.setenv("LANGSMITH_API_KEY", "capture-server")
        monkeypatch.setenv("LANGSMITH_PROJECT", "shopbot-trace-secrets")
        reread_langsmith_settings()
        fake.fail_next(500, body=setup.echo())
        fake.script(
            tool_call("transfer_to_refund_agent", {"reason": "refund"}),
            tool_call("check_refund_eligibility", {"order_id": "ORD-001"}),
            tool_call("process_refund", {"order_id": "ORD-001", "reason": REASON}),
            text("Your refund is on its way."),
        )
        message = f"Refund ORD-001, {REASON}"
        assert main(["chat", "t1", message, "--customer", "Alex", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["status"] == "awaiting_approval"
        assert main(["resume", "t1", "approve", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["reply"] == "Your refund is on its way."
        assert (fake.served, len(fake.faults), fake.rejections) == (4, 1, [])
        # The process's client (langsmith.configure, or langsmith's own): its traces sent,
        # its threads stopped.
        run_trees.get_cached_client().close()
    return capture


def assert_traced(capture: LangSmithCapture) -> None:
    """The traces arrived, failures and the model's settings among them: the search below
    had something to search."""
    runs = capture.runs().values()
    # The two turns' graph runs, their nodes (no routers: the nodes say where the run goes),
    # tools and 5 model calls, each ended (patched).
    assert len(runs) >= 27, sorted(run.get("name", "?") for run in runs)
    assert all("end_time" in run for run in runs)
    assert len(provider_errors(capture)) == 1
    assert sum(1 for run in runs if run.get("serialized")) == 5


def provider_errors(capture: LangSmithCapture) -> list[str]:
    # (Hand-offs and approvals are traced as errors too: LangGraph raises them.)
    errors = [run.get("error") or "" for run in capture.runs().values()]
    return [error for error in errors if "Error response 500" in error]


# Each way the client sends traces (zstd is what LangSmith itself asks for), each setup.
@pytest.mark.parametrize(
    ("setup", "mode"), [(SETUPS[0], "zstd"), (SETUPS[1], "batch")], ids=[s.name for s in SETUPS]
)
def test_no_secret_reaches_a_trace(
    setup: Setup,
    mode: Mode,
    fresh_process: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    capture = traced_refund(setup, mode, monkeypatch, capsys)
    assert_traced(capture)
    for secret in SECRETS:
        assert capture.occurrences(secret) == [], secret
    (error,) = provider_errors(capture)
    assert "upstream refused [REDACTED]" in error
    if setup.password_in_url:
        assert "while fetching http://[REDACTED]@127.0.0.1:" in error


def test_without_the_redaction_the_search_finds_the_secrets(
    fresh_process: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The canary: traced through langsmith's own client, the password and its Basic form
    are found where they leak."""
    monkeypatch.setattr(engine_module, "keep_secrets_out_of_traces", lambda secrets: None)
    capture = traced_refund(SETUPS[0], "multipart", monkeypatch, capsys)
    assert_traced(capture)
    assert "error" in {hit.field for hit in capture.occurrences(PASSWORD)}
    assert "error" in {hit.field for hit in capture.occurrences(BASIC)}


def test_with_tracing_off_no_tracing_client_is_made(
    fresh_process: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a langsmith client was made with tracing off")

    monkeypatch.setattr(langsmith, "Client", refuse)
    reread_langsmith_settings()
    assert main(["chat", "t1", "Where is ORD-002?", "--offline", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "done"
    assert trace_privacy._client is None


def test_the_traced_model_settings_name_the_endpoint_not_its_password(
    fresh_process: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", KEY)
    monkeypatch.setenv("MISTRAL_BASE_URL", f"http://{PROXY_USER}:{PASSWORD}@127.0.0.1:9/v1")
    model = make_model(Settings.from_env())
    # What a trace records as the model's settings (`serialized`), and `dumpd` writes.
    kwargs = dumpd(model)["kwargs"]
    assert kwargs["endpoint"] == {"lc": 1, "type": "secret", "id": ["MISTRAL_BASE_URL"]}
    assert kwargs["mistral_api_key"] == {"lc": 1, "type": "secret", "id": ["MISTRAL_API_KEY"]}
    assert PASSWORD not in json.dumps(dumpd(model)) and KEY not in json.dumps(dumpd(model))
