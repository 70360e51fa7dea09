"""A stand-in LangSmith API on 127.0.0.1 that keeps every trace the client posts, decoded.

Point ``LANGSMITH_ENDPOINT`` at it and the real ``langsmith`` client (0.15) traces here:
``GET /info`` decides how it sends runs (``mode``), then

- ``zstd``:      ``POST /runs/multipart``, the body one zstd frame (Content-Encoding: zstd);
- ``multipart``: ``POST /runs/multipart`` uncompressed;
- ``batch``:     ``POST /runs/batch`` with JSON ``{"post": [...], "patch": [...]}``.

A multipart body holds one JSON part per field of a run (``post.<id>``, ``post.<id>.inputs``,
``patch.<id>.error``, ...). Every part is kept decoded, so a test searches the strings and
keys inside it: a secret escaped by the JSON encoder (a quote, a backslash) is found all the
same. Standard library only, plus ``zstandard`` (a langsmith dependency) for zstd bodies.

    with LangSmithCapture("zstd") as capture:
        os.environ["LANGSMITH_ENDPOINT"] = capture.url
        ...
        assert capture.occurrences(secret) == []
"""

from __future__ import annotations

import contextlib
import email.parser
import email.policy
import http.server
import io
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, Self, cast

import zstandard

Mode = Literal["zstd", "multipart", "batch"]


@dataclass(frozen=True)
class Part:
    """One field of one run as it arrived, e.g. name ``patch.<run id>.error``."""

    name: str
    data: Any  # the part's JSON, or its text when it is not JSON

    @property
    def run_id(self) -> str | None:
        op, _, rest = self.name.partition(".")
        return rest.split(".", 1)[0] if op in ("post", "patch") and rest else None

    @property
    def field(self) -> str | None:
        """The run's field this part carries (``error``, ``serialized``...), None for the
        part holding the run's small fields."""
        bits = self.name.split(".")
        return bits[2] if len(bits) > 2 else None


@dataclass(frozen=True)
class Occurrence:
    part: str
    path: str  # where in the part's JSON, keys marked `<key>`
    count: int

    @property
    def field(self) -> str:
        """The run's field it is in: the part's (``patch.<id>.error``), or for a run sent
        whole (``/runs/batch``, or a post and its patch merged) the first key of the path."""
        bits = self.part.split(".")
        if len(bits) > 2:
            return bits[2]
        return self.path.lstrip(".").split(".", 1)[0].split("[", 1)[0]


class LangSmithCapture:
    """Starts on a free port on entry, stops (and joins its thread) on exit."""

    def __init__(self, mode: Mode = "zstd") -> None:
        self.mode = mode
        self._parts: list[Part] = []
        self.requests: list[tuple[str, str]] = []  # (method, path)
        self._lock = threading.Lock()
        self._httpd = _Server(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.01},
            name="langsmith-capture",
            daemon=True,
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.hang_up()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # -- what arrived ------------------------------------------------------------------

    @property
    def parts(self) -> list[Part]:
        with self._lock:
            return list(self._parts)

    def runs(self) -> dict[str, dict[str, Any]]:
        """Each run's fields, its post and patch merged, by run id."""
        runs: dict[str, dict[str, Any]] = {}
        for part in self.parts:
            if part.run_id is None:
                continue
            run = runs.setdefault(part.run_id, {})
            if part.field is None and isinstance(part.data, dict):
                run.update({k: v for k, v in part.data.items() if v is not None})
            elif part.field is not None and part.data is not None:
                run[part.field] = part.data
        return runs

    def occurrences(self, needle: str) -> list[Occurrence]:
        """Every place `needle` occurs in a decoded string or key of any part."""
        found = []
        for part in self.parts:
            for path, text in _strings(part.data, ""):
                if count := text.count(needle):
                    found.append(Occurrence(part.name, path, count))
        return found

    def _add(self, name: str, payload: bytes) -> None:
        try:
            data: Any = json.loads(payload)
        except ValueError:
            data = payload.decode("utf-8", errors="replace")
        with self._lock:
            self._parts.append(Part(name, data))

    def _ingest(self, path: str, body: bytes, content_type: str) -> None:
        if content_type.startswith("multipart/"):
            for name, payload in _multipart(body, content_type):
                self._add(name, payload)
        elif path == "/runs/batch":
            batch = json.loads(body or b"{}")
            for op in ("post", "patch"):
                for run in batch.get(op) or []:
                    self._add(f"{op}.{run.get('id')}", json.dumps(run).encode())
        else:  # POST /runs, PATCH /runs/<id> (a client without auto-batching), or other
            self._add(f"other {path}", body)


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield f"{path}.<key>", str(key)
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def _multipart(body: bytes, content_type: str) -> list[tuple[str, bytes]]:
    head = f"Content-Type: {content_type}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    return [
        (
            str(part.get_param("name", "?", header="content-disposition")),
            cast("bytes", part.get_payload(decode=True) or b""),
        )
        for part in message.iter_parts()
    ]


def _info(mode: Mode) -> dict[str, Any]:
    # The fields the client reads from a real server's /info.
    return {
        "version": "0.0.0-capture",
        "batch_ingest_config": {
            "use_multipart_endpoint": mode != "batch",
            "size_limit": 100,
            "size_limit_bytes": 20_971_520,
            "scale_up_qsize_trigger": 1000,
            "scale_up_nthreads_limit": 16,
            "scale_down_nempty_trigger": 4,
        },
        "instance_flags": {"zstd_compression_enabled": mode == "zstd"},
    }


class _Server(http.server.ThreadingHTTPServer):
    # Handler threads are joined on close (`block_on_close`): none is left after a test.
    daemon_threads = False

    def __init__(self, capture: LangSmithCapture) -> None:
        self.capture = capture
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def hang_up(self) -> None:
        """End the connections the client keeps open, so their threads can be joined."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the default access log goes to stderr."""

    @property
    def capture(self) -> LangSmithCapture:
        return cast("_Server", self.server).capture

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        with self.capture._lock:
            self.capture.requests.append(("GET", path))
        self._reply(_info(self.capture.mode) if path == "/info" else {})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        with self.capture._lock:
            self.capture.requests.append((self.command, path))
        body = self._body()
        if (self.headers.get("Content-Encoding") or "").strip().lower() == "zstd":
            # One frame with no content size in its header: only a stream reader decodes it.
            body = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(body)).read()
        self.capture._ingest(path, body, self.headers.get("Content-Type") or "")
        self._reply({})

    do_PATCH = do_POST

    def _body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while size := int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()  # the CRLF after each chunk
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _reply(self, answer: dict[str, Any]) -> None:
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
