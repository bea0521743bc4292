"""Fixtures: real toolsvc processes (the binary built from this repository)
in front of real MCP upstreams: toolsvc's built-in demo server (go-sdk) and
the TypeScript-SDK runtime server of tests/node, whose tools change at run
time.

TOOLSVC_BIN names a prebuilt toolsvc; otherwise it is built once per session
with `go build`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
RUNTIME_SERVER = REPO / "tests" / "node" / "runtime_server.mjs"
TASKS_SERVER_TS = REPO / "tests" / "node" / "tasks_server.mjs"
TASKS_SERVER_PY = REPO / "tests" / "python" / "tasks_server.py"
TASKS_VENV_PYTHON = REPO / ".venv" / "tasks" / "bin" / "python"
_SERVING = re.compile(r"msg=serving addr=(\S+)")
_READY = re.compile(r"msg=ready")


class Toolsvc:
    """A running `toolsvc serve` on 127.0.0.1 with its log captured."""

    def __init__(
        self,
        binary: str,
        config: dict[str, Any],
        tmp: Path,
        *,
        wait_ready: bool = True,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.config_path = tmp / f"config-{time.monotonic_ns()}.json"
        self.config_path.write_text(json.dumps(config))
        self.proc = subprocess.Popen(
            [binary, "serve", "--config", str(self.config_path), "--listen", "127.0.0.1:0", "--admin-listen", "",
             "--log-level", "debug", "--shutdown-timeout", "3s", *extra_args],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        )
        self.log: list[str] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        m = self._wait_for(_SERVING, 60)
        self.addr = m.group(1)
        if wait_ready:
            self._wait_for(_READY, 60)

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._cond:
                self.log.append(line)
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def _wait_for(self, pattern: re.Pattern[str], timeout: float) -> re.Match[str]:
        end = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                for line in self.log[seen:]:
                    m = pattern.search(line)
                    if m:
                        return m
                seen = len(self.log)
                if self.proc.poll() is not None or time.monotonic() > end:
                    raise RuntimeError(f"toolsvc: no {pattern.pattern!r}; log:\n" + "".join(self.log))
                self._cond.wait(0.2)

    def children(self) -> list[tuple[int, str]]:
        """Direct child processes (pid, command line): the stdio upstreams."""
        out = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                stat = (d / "stat").read_text()
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                if ppid == self.proc.pid:
                    out.append((int(d.name), (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()))
            except (OSError, ValueError, IndexError):
                continue
        return out

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)


@pytest.fixture(scope="session")
def toolsvc_bin(tmp_path_factory: pytest.TempPathFactory) -> str:
    prebuilt = os.environ.get("TOOLSVC_BIN")
    if prebuilt:
        return prebuilt
    out = str(tmp_path_factory.mktemp("bin") / "toolsvc")
    subprocess.run(["go", "build", "-o", out, "./cmd/toolsvc"], cwd=REPO, check=True)
    return out


@pytest.fixture(scope="session")
def testserver_bin(tmp_path_factory: pytest.TempPathFactory) -> str:
    """tests/testserver (go-sdk), built once per session unless TESTSERVER_BIN names one."""
    prebuilt = os.environ.get("TESTSERVER_BIN")
    if prebuilt:
        return prebuilt
    out = str(tmp_path_factory.mktemp("bin") / "testserver")
    subprocess.run(["go", "build", "-o", out, "./tests/testserver"], cwd=REPO, check=True)
    return out


def interactive_server(testserver_bin: str) -> dict[str, Any]:
    """tests/testserver with its asking tools (ask_name, ask_url, ask_all, ask_twice)."""
    return {"command": testserver_bin, "args": ["-mode", "stdio", "-interactive"]}


def demo_server(toolsvc_bin: str) -> dict[str, Any]:
    return {"command": toolsvc_bin, "args": ["demo-server"]}


def runtime_server() -> dict[str, Any]:
    if not (REPO / "tests" / "node" / "node_modules").is_dir():
        raise RuntimeError("tests/node is not installed: run scripts/interop-deps.sh")
    return {"command": "node", "args": [str(RUNTIME_SERVER), "stdio"]}


@pytest.fixture
def start_toolsvc(toolsvc_bin: str) -> Iterator[Any]:
    """Starts toolsvc processes for one test; all are stopped after it."""
    started: list[Toolsvc] = []
    tmp = Path(tempfile.mkdtemp(prefix="toolsvc-py-"))

    def start(config: dict[str, Any], *, wait_ready: bool = True, extra_args: tuple[str, ...] = ()) -> Toolsvc:
        t = Toolsvc(toolsvc_bin, config, tmp, wait_ready=wait_ready, extra_args=extra_args)
        started.append(t)
        return t

    yield start
    for t in started:
        t.stop()


@pytest.fixture(scope="module")
def server(toolsvc_bin: str) -> Iterator[Toolsvc]:
    """One toolsvc with the demo (go-sdk) and runtime (TypeScript SDK) upstreams."""
    tmp = Path(tempfile.mkdtemp(prefix="toolsvc-py-"))
    t = Toolsvc(toolsvc_bin, {"mcpServers": {"demo": demo_server(toolsvc_bin), "rt": runtime_server()}}, tmp)
    yield t
    t.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def task_servers() -> Iterator[dict[str, dict[str, Any]]]:
    """The task upstreams of tests/tasks_test.go: "ts", the TypeScript SDK's
    2025-11-25 tasks (tests/node/tasks_server.mjs over stdio), and "py",
    fastmcp-tasks' 2026-07-28 extension (tests/python/tasks_server.py over
    streamable HTTP, in .venv/tasks: scripts/interop-deps.sh makes it)."""
    if not (REPO / "tests" / "node" / "node_modules").is_dir() or not TASKS_VENV_PYTHON.exists():
        raise RuntimeError("the task servers are not installed: run scripts/interop-deps.sh")
    port = free_port()
    proc = subprocess.Popen(
        [str(TASKS_VENV_PYTHON), str(TASKS_SERVER_PY), str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        end = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > end:
                    raise RuntimeError("tests/python/tasks_server.py did not start") from None
                time.sleep(0.1)
        yield {
            "ts": {"command": "node", "args": [str(TASKS_SERVER_TS), "stdio"]},
            "py": {"url": f"http://127.0.0.1:{port}/mcp", "protocolVersion": "2026-07-28"},
        }
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
