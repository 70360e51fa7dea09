import os
import tempfile

import pytest

pytest_plugins = ["tests.support.fixtures", "tests.support.backends"]


def pytest_configure(config: pytest.Config) -> None:
    # A home for the whole run, so that a test which forgets to give one (or undoes its own
    # monkeypatching) never reads or writes the person's own ShopBot data.
    os.environ["SHOPBOT_HOME"] = tempfile.mkdtemp(prefix="shopbot-tests-")
