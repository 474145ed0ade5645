"""The extension's display publisher in a real kernel: the same messages as IPython's `display`, in order.

`kernel_publisher` (notebook/kernel/port.py) queues the stream flushes on ipykernel's IOPub thread instead
of waiting for them; these tests hold it to what `display` gives a frontend: the same content, what the
cell printed before an output arriving before it, and IPython's own capture and ipykernel's hooks still
seeing every output.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.kernel_session import Execution, Kernel, loaded_kernel

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.kernel]

PORT = "from synapse_nb.notebook.extension import get_state\n_port = get_state(get_ipython()).port\n"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    with loaded_kernel(tmp_path_factory.mktemp("kernel")) as k:
        k.ok(PORT)
        yield k


def outputs(run: Execution) -> list[tuple[str, Any]]:
    """Each output message of a cell as (kind, what it carries), in the order the frontend got them."""
    shown: list[tuple[str, Any]] = []
    for m in run.messages:
        kind, content = m["msg_type"], m["content"]
        if kind == "stream" and shown and shown[-1][0] == content["name"]:  # one text, however it was flushed
            shown[-1] = (content["name"], shown[-1][1] + content["text"])
        elif kind == "stream":
            shown.append((content["name"], content["text"]))
        elif kind in ("display_data", "update_display_data"):
            shown.append((kind, {k: content[k] for k in ("data", "metadata", "transient")}))
    return shown


def test_the_messages_are_the_ones_display_sends(kernel: Kernel) -> None:
    ours = kernel.ok('_port.publish({"text/plain": ""}, "d1", False)\n'
                     '_port.publish({"text/plain": "two", "text/markdown": "**two**"}, "d1", True)\n'
                     '_port.publish({"text/plain": "three"}, None, False)')
    theirs = kernel.ok('from IPython.display import display\n'
                       'display({"text/plain": ""}, raw=True, display_id="d1")\n'
                       'display({"text/plain": "two", "text/markdown": "**two**"}, raw=True, display_id="d1",'
                       ' update=True)\n'
                       'display({"text/plain": "three"}, raw=True)')
    assert outputs(ours) == outputs(theirs)
    assert [kind for kind, _ in outputs(ours)] == ["display_data", "update_display_data", "display_data"]


def test_what_the_cell_printed_first_arrives_first(kernel: Kernel) -> None:
    run = kernel.ok('import sys\nprint("before", end="")\nprint("warned", end="", file=sys.stderr)\n'
                    '_port.publish({"text/plain": "shown"}, None, False)\nprint("after", end="")')
    assert outputs(run) == [
        ("stdout", "before"), ("stderr", "warned"),
        ("display_data", {"data": {"text/plain": "shown"}, "metadata": {}, "transient": {}}),
        ("stdout", "after"),
    ]


def test_ipythons_capture_still_catches_the_output(kernel: Kernel) -> None:
    run = kernel.ok('from IPython.utils.capture import capture_output\n'
                    'with capture_output() as caught:\n'
                    '    _port.publish({"text/plain": "caught"}, None, False)\n'
                    'print([o.data for o in caught.outputs])')
    assert outputs(run) == [("stdout", "[{'text/plain': 'caught'}]\n")]


def test_a_hook_on_the_display_publisher_sees_the_output(kernel: Kernel) -> None:
    run = kernel.ok('seen = []\n'
                    'def hook(msg):\n'
                    '    seen.append(msg["content"]["data"])\n'
                    '    return None  # taken: not sent\n'
                    'get_ipython().display_pub.register_hook(hook)\n'
                    'try:\n'
                    '    _port.publish({"text/plain": "hooked"}, None, False)\n'
                    'finally:\n'
                    '    get_ipython().display_pub.unregister_hook(hook)\n'
                    'print(seen)')
    assert outputs(run) == [("stdout", "[{'text/plain': 'hooked'}]\n")]
