"""A real IPython kernel driven through jupyter_client, as a frontend would: execute, iopub, stdin, interrupt."""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager

from tests.support.local_servers import wait_started

START_CPU = 60.0  # seconds of CPU a kernel may use before it must answer (local_servers.wait_started)

SECRET_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY", "OLLAMA_API_KEY", "MCP_URL", "SYNAPSE_MODEL",
               "SYNAPSE_MCP_CONFIG", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")


@dataclass
class Execution:
    """What one execute_request produced: the iopub messages in order, the reply, the stdin prompts."""

    reply: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return str(self.reply["content"]["status"])

    @property
    def error(self) -> dict[str, Any] | None:
        return next((m["content"] for m in self.messages if m["msg_type"] == "error"), None)

    @property
    def stdout(self) -> str:
        """What the cell printed, as the frontend shows it (after any `clear_output`)."""
        return "".join(m["content"]["text"] for m in self.kept()
                       if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")

    @property
    def stderr(self) -> str:
        return "".join(m["content"]["text"] for m in self.kept()
                       if m["msg_type"] == "stream" and m["content"]["name"] == "stderr")

    def kept(self) -> list[dict[str, Any]]:
        """The messages whose outputs a frontend still shows: `clear_output` applied as JupyterLab applies it (at
        once, or with `wait` when the next output comes); display updates and answered prompts pass through."""
        kept: list[dict[str, Any]] = []
        clear_next = False
        for m in self.messages:
            kind = m["msg_type"]
            if kind == "clear_output":
                if m["content"].get("wait"):
                    clear_next = True
                else:
                    kept = [k for k in kept if k["msg_type"] in ("update_display_data", "input_reply")]
                continue
            if clear_next and kind in ("stream", "display_data", "execute_result", "error"):
                kept = [k for k in kept if k["msg_type"] in ("update_display_data", "input_reply")]
                clear_next = False
            kept.append(m)
        return kept

    @property
    def displays(self) -> list[dict[str, Any]]:
        """display_data / update_display_data / execute_result contents, in order, with their kind."""
        kinds = ("display_data", "update_display_data", "execute_result")
        return [{"kind": m["msg_type"], **m["content"]} for m in self.messages if m["msg_type"] in kinds]

    def final_outputs(self, *, stdin: bool = False) -> list[dict[str, Any]]:
        """The outputs a saved notebook keeps (display updates applied, emptied live outputs dropped); `stdin`
        adds each answered prompt as `{"stdin": "PROMPT ANSWER"}` where its echo stands (the frontend keeps it
        where the box was, so every output published after the answer follows it)."""
        outputs: list[dict[str, Any]] = []
        where: dict[str, int] = {}
        kinds = ("display_data", "update_display_data", "execute_result")
        shown = [{"kind": m["msg_type"], **m["content"]} for m in self.kept()
                 if m["msg_type"] in kinds or (stdin and m["msg_type"] == "input_reply")]
        for d in shown:
            if d["kind"] == "input_reply":
                outputs.append({"stdin": f"{d['prompt']}{d['value']}"})
                continue
            display_id = (d.get("transient") or {}).get("display_id")
            if d["kind"] == "update_display_data":
                if display_id in where:
                    outputs[where[display_id]] = d["data"]
                continue
            if display_id is not None:
                where[display_id] = len(outputs)
            outputs.append(d["data"])
        return [o for o in outputs if o.get("text/plain") != "" or len(o) > 1]

    def text(self) -> str:
        return "\n".join(o.get("text/plain", "") for o in self.final_outputs())

    def saved_outputs(self) -> list[dict[str, Any]]:
        """The outputs JupyterLab or nbclient saves in the notebook, as nbformat outputs: streams (a name's runs
        joined), displays with their updates applied, results and errors, after `clear_output`. Unlike
        `final_outputs`, an emptied live output is kept: it is saved too."""
        outputs: list[dict[str, Any]] = []
        where: dict[str, list[int]] = {}
        for m in self.kept():
            kind, content = m["msg_type"], m["content"]
            display_id = (content.get("transient") or {}).get("display_id")
            if kind == "update_display_data":
                for i in where.get(display_id, []):
                    outputs[i] = {**outputs[i], "data": content["data"]}
                continue
            if kind == "stream":
                if outputs and outputs[-1]["output_type"] == "stream" and outputs[-1]["name"] == content["name"]:
                    outputs[-1] = {**outputs[-1], "text": outputs[-1]["text"] + content["text"]}
                else:
                    outputs.append({"output_type": "stream", "name": content["name"], "text": content["text"]})
                continue
            if kind not in ("display_data", "execute_result", "error"):
                continue
            if display_id is not None:
                where.setdefault(display_id, []).append(len(outputs))
            rest = {k: v for k, v in content.items() if k not in ("transient", "metadata")}
            outputs.append({"output_type": kind, **rest})
        return outputs


class Kernel:
    """One kernel for a test module; `execute` runs a cell and gathers everything it produced."""

    def __init__(self, cwd: Path, env: Mapping[str, str]) -> None:
        # IPC sockets in the test's folder: local-only, and no "TCP without encryption" warning.
        self.km = KernelManager(kernel_name="python3", transport="ipc", ip=str(cwd / "kernel-ipc"))
        self.km.start_kernel(cwd=str(cwd), env=dict(env))
        self.kc = self.km.client()
        self.kc.start_channels()
        process = getattr(self.km.provisioner, "process", None)  # the local provisioner's Popen
        if process is None:
            self.kc.wait_for_ready(timeout=START_CPU)
        elif not wait_started(process, self._ready, START_CPU):
            raise RuntimeError(f"the kernel did not answer after {START_CPU:g} s of CPU (exit status {process.poll()})")

    def _ready(self) -> bool:
        try:
            self.kc.wait_for_ready(timeout=1)
        except RuntimeError:  # not yet (or it died: wait_started sees that)
            return False
        return True

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    def execute(
        self,
        code: str,
        *,
        timeout: float = 60.0,
        allow_stdin: bool = False,
        answer: Callable[[str], str] | None = None,
        on_message: Callable[[dict[str, Any]], None] | None = None,
    ) -> Execution:
        """Run code; `answer(prompt)` replies to input requests; `on_message` sees each iopub message as it comes."""
        msg_id = self.kc.execute(code, allow_stdin=allow_stdin, store_history=False)
        execution = Execution(reply={})
        deadline = time.monotonic() + timeout
        idle = False

        def take(wait: float) -> bool:
            """Read one iopub message of this cell (False when none came within `wait`)."""
            nonlocal idle
            try:
                msg = self.kc.get_iopub_msg(timeout=wait)
            except queue.Empty:
                return False
            if msg["parent_header"].get("msg_id") != msg_id:
                return True
            if msg["msg_type"] == "status":
                idle = idle or msg["content"]["execution_state"] == "idle"
                return True
            execution.messages.append(msg)
            if on_message is not None:
                on_message(msg)
            return True

        while not idle or not execution.reply:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"cell did not finish in {timeout} s: {code[:80]!r}")
            if allow_stdin:
                try:
                    request = self.kc.get_stdin_msg(timeout=0.01)
                except queue.Empty:
                    pass
                else:
                    # What the kernel published before asking comes first (the input box sits below it): the
                    # iopub and stdin sockets are read apart, so read what iopub already holds.
                    while not idle and take(0.05):
                        pass
                    prompt = request["content"]["prompt"]
                    execution.prompts.append(prompt)
                    value = answer(prompt) if answer else ""
                    self.kc.input(value)
                    # where the echo stands: the kernel publishes nothing that depends on the answer before it
                    execution.messages.append({"msg_type": "input_reply", "parent_header": {},
                                               "content": {"prompt": prompt, "value": value}})
            if not idle:
                take(0.05 if allow_stdin else min(left, 1.0))
            else:
                try:
                    reply = self.kc.get_shell_msg(timeout=min(left, 1.0))
                except queue.Empty:
                    continue
                if reply["parent_header"].get("msg_id") == msg_id:
                    execution.reply = reply
        return execution

    def run_all(self, cells: list[str], *, timeout: float = 120.0) -> list[Execution]:
        """Send every cell at once, as "Run All" does (later ones queue in the kernel), and gather each."""
        return self.gather([self.kc.execute(code, store_history=False) for code in cells], timeout=timeout)

    def gather(
        self,
        ids: list[str],
        *,
        timeout: float = 120.0,
        on_iopub: Callable[[dict[str, Any]], None] | None = None,
    ) -> list[Execution]:
        """Wait until every cell of `ids` (already sent, however) is done: idle on iopub and its execute reply
        in. Returns each cell's Execution, in the order of `ids`; no input request is answered. `on_iopub`
        sees every iopub message first, whichever cell it came with (a display update names its display,
        not its cell)."""
        runs = {msg_id: Execution(reply={}) for msg_id in ids}
        idle: set[str] = set()
        deadline = time.monotonic() + timeout
        while len(idle) < len(ids) or any(not r.reply for r in runs.values()):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{len(ids) - len(idle)} of {len(ids)} cells did not finish in {timeout} s")
            try:
                msg = self.kc.get_iopub_msg(timeout=min(left, 0.2))
            except queue.Empty:
                msg = None
            if msg is not None and on_iopub is not None:
                on_iopub(msg)
            if msg is not None and msg["parent_header"].get("msg_id") in runs:
                parent = msg["parent_header"]["msg_id"]
                if msg["msg_type"] == "status":
                    if msg["content"]["execution_state"] == "idle":
                        idle.add(parent)
                else:
                    runs[parent].messages.append(msg)
            try:
                reply = self.kc.get_shell_msg(timeout=0.01)
            except queue.Empty:
                continue
            if reply["parent_header"].get("msg_id") in runs:
                runs[reply["parent_header"]["msg_id"]].reply = reply
        return [runs[i] for i in ids]

    def ok(self, code: str, **kwargs: Any) -> Execution:
        """Run code that must succeed."""
        execution = self.execute(code, **kwargs)
        if execution.status != "ok":
            error = execution.error or {}
            trace = "\n".join(error.get("traceback", []))
            raise AssertionError(f"cell failed: {error.get('ename')}: {error.get('evalue')}\n{code}\n{trace}")
        return execution


def kernel_env(tmp: Path) -> dict[str, str]:
    """The environment of a test kernel: no keys, no user config, history in a temporary folder."""
    env = {k: v for k, v in os.environ.items() if k not in SECRET_VARS}
    env.update({
        "SYNAPSE_DB": str(tmp / "history.duckdb"),
        "XDG_DATA_HOME": str(tmp / "data"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "IPYTHONDIR": str(tmp / "ipython"),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    })
    return env


@contextmanager
def running_kernel(tmp: Path) -> Iterator[Kernel]:
    kernel = Kernel(tmp, kernel_env(tmp))
    try:
        yield kernel
    finally:
        kernel.close()


@contextmanager
def loaded_kernel(tmp: Path) -> Iterator[Kernel]:
    """A running kernel that imports this checkout's synapse_nb, with the extension loaded."""
    import synapse_nb

    root = Path(synapse_nb.__file__).resolve().parents[1]
    with running_kernel(tmp) as kernel:
        where = kernel.ok("import synapse_nb; print(synapse_nb.__file__)").stdout.strip()
        assert where.startswith(str(root)), where  # this checkout's code
        kernel.ok("%load_ext synapse_nb")
        yield kernel
