"""Pytest fixtures for the fake Mistral server.

Enabled for the whole suite by ``pytest_plugins = ["tests.support.fixtures"]`` in
``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_mistral import FAKE_API_KEY, FakeMistralServer


@pytest.fixture
def fake_mistral(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMistralServer]:
    """A running :class:`FakeMistralServer` on a free 127.0.0.1 port.

    ``MISTRAL_BASE_URL`` and ``MISTRAL_API_KEY`` point at it for the duration of the
    test, so a plain ``ChatMistralAI(model=..., max_retries=0)`` talks to the fake.

    At teardown the test fails if the fake saw a rejected request, a script error or an
    internal error that the test did not acknowledge with
    ``fake_mistral.acknowledge_problems()``: an engine that swallows a 400 must not
    pass silently.
    """
    server = FakeMistralServer()
    server.start()
    monkeypatch.setenv("MISTRAL_BASE_URL", server.base_url)
    monkeypatch.setenv("MISTRAL_API_KEY", FAKE_API_KEY)
    try:
        yield server
    finally:
        server.stop()
    problems = server.unacknowledged_problems()
    if problems:
        pytest.fail(server.describe_problems(problems), pytrace=False)
