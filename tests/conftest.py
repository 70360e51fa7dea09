pytest_plugins = ["tests.support.fixtures"]
