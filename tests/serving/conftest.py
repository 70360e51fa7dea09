from collections.abc import Iterator

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from tests.support import langgraph_dev

DANA_TOKEN = "dana-0123456789-token"
LEE_TOKEN = "lee-9876543210-token"


def _serving(
    factory: pytest.TempPathFactory, name: str, environ: dict[str, str] | None = None
) -> Iterator[langgraph_dev.Served]:
    """A `langgraph dev` of its own folder and home, for the session (it takes 15 s or more to
    start); lee decides refunds above the auto-refund limit, dana has the standard one."""
    try:
        server = langgraph_dev.start(
            factory.mktemp(name),
            tokens=f"dana:{DANA_TOKEN}, lee:{LEE_TOKEN}",
            reviewers='[reviewers]\nlee = "2000.00"\n',
            environ=environ,
        )
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    yield server
    langgraph_dev.stop(server)


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[langgraph_dev.Served]:
    """The server the SDK's tests drive."""
    yield from _serving(tmp_path_factory, "langgraph-dev")


@pytest.fixture(scope="session")
def client(served: langgraph_dev.Served) -> SyncLangGraphClient:
    """The SDK's client, as the operator dana."""
    return get_sync_client(url=served.url, headers={"Authorization": f"Bearer {DANA_TOKEN}"})


@pytest.fixture(scope="session")
def assistant_id(client: SyncLangGraphClient) -> str:
    (assistant,) = client.assistants.search(graph_id="shopbot")
    return str(assistant["assistant_id"])


@pytest.fixture(scope="session")
def operators_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[langgraph_dev.Served]:
    """A second server, for the fronts' tests (tests/serving/test_remote_*.py): its own shop,
    whose orders the SDK tests do not refund first. Its replies are typed as the app types
    them: a person (a test) can stop one midway."""
    yield from _serving(
        tmp_path_factory, "langgraph-dev-fronts", {"SHOPBOT_OFFLINE_TOKEN_DELAY": "0.03"}
    )
