import os
import tempfile
from collections.abc import Iterator

import pytest

from agents.safety import redaction

pytest_plugins = ["tests.support.fixtures", "tests.support.backends", "tests.support.collector"]


def pytest_configure(config: pytest.Config) -> None:
    # A home for the whole run, so that a test which forgets to give one (or undoes its own
    # monkeypatching) never reads or writes the person's own ShopBot data.
    os.environ["SHOPBOT_HOME"] = tempfile.mkdtemp(prefix="shopbot-tests-")


@pytest.fixture(autouse=True)
def _no_secret_registered_before(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Secrets are registered process-wide (an engine registers its key as it starts): a key
    # an earlier test's engine registered would be redacted in this one too, so a test that
    # a secret never shows could pass on another test's registration.
    monkeypatch.setattr(redaction, "_registered", set())
    yield
