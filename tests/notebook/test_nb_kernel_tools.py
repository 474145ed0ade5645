"""The `kernel__*` tools behind `%%synapse --kernel`: the scripted analyst's turn, opt-in, approval, secrets, stops."""

from __future__ import annotations

import base64
import json
import os
import signal
from typing import Any

import anyio
import pytest
from IPython.core.error import UsageError

import synapse_nb
from synapse_nb.agent.tools import ToolRegistry, native_tool
from synapse_nb.notebook.commands.ask import CellInterrupted
from synapse_nb.notebook.workspace.tools import KernelTools

SALES = (
    "import pandas as pd\n"
    "sales = pd.DataFrame({'region': ['north', 'south', 'north', 'east', 'south', 'north'],\n"
    "                      'units': [3, 5, 2, 7, 1, 4],\n"
    "                      'revenue': [30.0, 52.5, 20.0, 70.0, 9.5, None]})\n"
    "threshold = 10\n"
)
ASK = "synapse --kernel --model scripted:analyst"
QUESTION = "What is the total revenue by region in sales?"
PNG = b"\x89PNG\r\n\x1a\n"


def _names(result: Any) -> list[str]:
    return result.tool_calls.name.tolist()  # type: ignore[no-any-return]


def _offered(ip: Any, result: Any) -> list[str]:
    """The tools the model was offered in the last model call of `result`'s session, as recorded."""
    calls = ip.state.store.history().llm_calls(result.session_id)
    assert len(calls), "no model call recorded"
    request = calls.sort_values("started_at").request.iloc[-1]
    return sorted(json.loads(request)["tool_names"] if isinstance(request, str) else request["tool_names"])


def test_the_analyst_lists_describes_runs_after_yes_draws_and_answers_with_the_numbers(ip: Any) -> None:
    ip.run(SALES)
    ip.answers.append("y")
    ip.cell(ASK, QUESTION)
    result = ip.ns["_synapse"]
    assert result.status == "finished"
    assert _names(result) == ["kernel__list_variables", "kernel__describe_dataframe", "kernel__run_python"]
    calls = result.tool_calls
    assert calls.server.tolist() == ["kernel"] * 3
    assert calls.tool.tolist() == ["list_variables", "describe_dataframe", "run_python"]
    assert calls.approval.tolist() == ["auto", "auto", "approved"]
    # one prompt, for the code only, showing the code
    assert ip.prompts == ["allow kernel__run_python? [y/n/a]: "]
    card = "\n".join(bundle.get("text/plain", "") for bundle, _, _ in ip.published.items)
    assert "Approve this tool call? kernel__run_python on server kernel" in card
    assert "groupby" in card
    assert "\n  summary.round(2).to_dict()\n" in card  # all of the code, as code, not a JSON string
    listing = calls.result_text.iloc[0]
    assert '"name": "sales"' in listing
    assert '"name": "threshold"' in listing
    assert '"pd"' not in listing
    described = calls.result_text.iloc[1]
    assert "- revenue (float64, 1 null)" in described
    assert "numeric columns:" in described
    ran = result.calls[2].result
    assert not ran.is_error
    assert "value:\n{'east': 70.0, 'south': 62.0, 'north': 50.0}" in ran.text
    assert "figures: 1 PNG image" in ran.text
    (image,) = ran.images
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data).startswith(PNG)
    # the numbers are in the answer, the totals stay in the kernel, the code is copyable
    assert "| east | 70.00 |" in result.text
    assert "| north | 50.00 |" in result.text
    assert ip.ns["summary"].to_dict() == {"east": 70.0, "south": 62.0, "north": 50.0}
    assert result.code is not None
    assert result.code.startswith("import matplotlib.pyplot as plt\nsummary = sales")
    assert result.ran_code == (result.code,)
    # shown in the cell: the code in the tool block, the chart, and the footer note
    markdown = ip.published.markdown()
    assert "summary = sales.groupby(&#x27;region&#x27;)" in markdown
    assert '<img src="data:image/png;base64,' in markdown
    assert "the agent could see the kernel" in ip.published.text()
    # recorded with server 'kernel'
    rows = synapse_nb.history().sql("SELECT server, tool, approval FROM tool_calls ORDER BY started_at")
    assert rows.values.tolist() == [
        ["kernel", "list_variables", "auto"], ["kernel", "describe_dataframe", "auto"],
        ["kernel", "run_python", "approved"],
    ]


def test_declining_the_code_leaves_the_namespace_alone(ip: Any) -> None:
    ip.run(SALES)
    ip.answers.append("n")
    ip.cell(ASK, QUESTION)
    result = ip.ns["_synapse"]
    assert result.tool_calls.approval.tolist()[-1] == "denied"
    assert "summary" not in ip.ns
    assert "did not run" in result.text
    assert "`revenue`" in result.text
    assert result.ran_code == ()
    assert result.code is None


def test_no_stdin_denies_the_code(ip: Any) -> None:
    ip.run(SALES)  # ip.answers is empty: the prompt gets EOF, as where no one can answer
    ip.cell(ASK, QUESTION)
    assert ip.ns["_synapse"].tool_calls.approval.tolist()[-1] == "denied"
    assert "summary" not in ip.ns


def test_off_by_default(ip: Any) -> None:
    ip.run(SALES)
    ip.cell("synapse --model scripted:analyst", QUESTION)
    result = ip.ns["_synapse"]
    assert _names(result) == []
    assert "--kernel" in result.text
    assert "the agent could see the kernel" not in ip.published.text()
    assert not [name for name in _offered(ip, result) if name.startswith("kernel__")]
    with pytest.raises(UsageError, match="names kernel tools, which are off; add --kernel"):
        ip.cell("synapse --model scripted:analyst --tools kernel__*", QUESTION)
    with pytest.raises(UsageError, match="--kernel and --no-tools contradict"):
        ip.cell("synapse --kernel --no-tools", QUESTION)


def test_config_turns_it_on_for_the_kernel_and_tools_patterns_select_within(ip: Any) -> None:
    ip.run(SALES)
    ip.line("config", "SynapseMagics.kernel_tools = True")
    ip.cell("synapse --model scripted:analyst --approve auto", QUESTION)
    result = ip.ns["_synapse"]
    assert _names(result)[-1] == "kernel__run_python"
    assert "summary" in ip.ns
    ip.cell("synapse --model scripted:demo --tools kernel__get_value --tools kernel__list_*", "hello")
    assert _offered(ip, ip.ns["_synapse"]) == ["kernel__get_value", "kernel__list_variables"]


def test_mcp_tools_lists_the_group(ip: Any) -> None:
    assert "kernel" not in set(ip.line("mcp", "tools").server)  # off: not listed among the offered tools
    ip.run("%config SynapseMagics.kernel_tools = True")
    tools = ip.line("mcp", "tools")
    kernel = tools[tools.server == "kernel"]
    assert kernel.name.tolist() == [
        "kernel__list_variables", "kernel__describe_dataframe", "kernel__get_value", "kernel__run_python",
        "kernel__recent_cells",
    ]
    assert kernel.set_index("tool").destructive.to_dict()["run_python"]
    assert "code" in kernel.set_index("tool").parameters["run_python"]
    assert ip.line("mcp", "tools kernel").name.tolist() == kernel.name.tolist()
    assert ip.state.registry.native == []  # the group is not counted as the notebook's own tools


def test_mcp_call_reaches_the_group_by_hand(ip: Any) -> None:
    ip.run("threshold = 42")
    out = ip.line("mcp", "call kernel.get_value name=threshold")
    assert "42" in out.text
    assert not out.result.is_error
    with pytest.raises(UsageError, match="server 'kernel' has no tool 'nope'; its tools: list_variables"):
        ip.line("mcp", "call kernel.nope")
    recorded = ip.state.store.history().tool_calls()
    assert recorded[["server", "tool", "approval"]].values.tolist()[-1] == ["kernel", "get_value", "manual"]


def test_the_registry_offers_a_group_only_to_its_own_patterns() -> None:
    registry = ToolRegistry()

    def plain() -> str:
        return "x"

    registry.register(plain)
    kernel = KernelTools(None)
    kernel.install(registry)
    kernel.install(registry)  # once per registry
    assert [s.name for s in registry.specs()] == ["plain"]
    assert [s.name for s in registry.specs(["*"])] == ["plain"]
    assert len(registry.specs(["*", "kernel__*"])) == 6
    assert [s.name for s in registry.specs(["kernel__get_*"])] == ["kernel__get_value"]
    assert registry.group_of("kernel__run_python") == "kernel"
    assert registry.group_of("plain") is None
    assert registry.spec("kernel__run_python").server == "kernel"
    with pytest.raises(synapse_nb.ConfigError):
        registry.register_group("kernel", [native_tool(plain, name="kernel__plain")])


# ---------------------------------------------------------------------------------------------- the tools


@pytest.fixture
def tools(ip: Any) -> KernelTools:
    ip.run(SALES)
    kernel = ip.state.kernel
    assert kernel is not None
    return kernel


async def _text(call: Any) -> str:
    return str((await call).text)


@pytest.mark.anyio
async def test_secret_named_variables_and_the_environment_are_never_shown(
    tools: KernelTools, ip: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_TOKEN", "env-secret-value-123456")
    ip.ns.update(
        openai_api_key="sk-test-0123456789abcdefghij", db_password="hunter2-horse", cfg={"password": "p4ssw0rd!!"}
    )
    ip.ns["plain"] = "short"
    listing = await _text(tools.list_variables())
    assert '"openai_api_key"' in listing
    assert "sk-test" not in listing
    for name, path in (("openai_api_key", None), ("db_password", None), ("cfg", "['password']")):
        with pytest.raises(ValueError, match="looks like a secret"):
            await tools.get_value(name, path)
    ip.ns["os_module"] = os
    with pytest.raises(ValueError, match="environment variables are never shown"):
        await tools.get_value("os_module", "environ")
    ran = await _text(tools.run_python(
        "import os\nprint(openai_api_key, db_password)\nprint(os.environ['SERVICE_TOKEN'])\ncfg"
    ))
    for secret in ("sk-test-0123456789abcdefghij", "hunter2-horse", "env-secret-value-123456", "p4ssw0rd!!"):
        assert secret not in ran
    assert ran.count("[REDACTED]") >= 3
    # every result passes the history's masking, with the kernel's registered secrets too
    ip.state.secret_registry.add("registered-secret-42")
    ip.ns["note"] = "the header was registered-secret-42"
    assert "registered-secret-42" not in await _text(tools.get_value("note"))


@pytest.mark.anyio
async def test_get_value_follows_the_interpolation_rules(tools: KernelTools, ip: Any) -> None:
    assert await _text(tools.get_value("sales", ".shape")) == "(6, 3)"
    assert await _text(tools.get_value("sales", "columns[0]")) == "'region'"
    ip.ns["d"] = {"k": list(range(10_000))}
    big = await _text(tools.get_value("d", "['k']"))
    assert big.endswith("...]")
    assert len(big) < 1000
    for name, path, why in (
        ("sales", ".head()", "no calls"), ("sales", "._data", "no private attributes"),
        ("_hidden", None, "no leading '_'"), ("nope", None, "no variable named 'nope'"),
    ):
        ip.ns["_hidden"] = 1
        with pytest.raises(ValueError) as caught:
            await tools.get_value(name, path)
        assert why.split()[0] in str(caught.value)


@pytest.mark.anyio
async def test_list_variables_skips_modules_functions_and_internals_and_takes_a_pattern(
    tools: KernelTools, ip: Any
) -> None:
    ip.run("import numpy as np\narr = np.zeros((4, 5))\ndef helper():\n    pass\nclass Thing:\n    pass\n_private = 1")
    listing = await _text(tools.list_variables())
    assert '"arr"' in listing
    assert '"4 x 5"' in listing
    assert '"160 B"' in listing
    for hidden in ('"np"', '"helper"', '"Thing"', '"_private"', '"In"', '"Out"', '"exit"'):
        assert hidden not in listing
    assert '"sales"' not in await _text(tools.list_variables("th*"))
    assert await _text(tools.list_variables("zz*")) == "no variables match 'zz*'"


@pytest.mark.anyio
async def test_describe_dataframe_series_and_arrow(tools: KernelTools, ip: Any) -> None:
    ip.run("import pyarrow as pa\ntable = pa.table({'a': [1, 2, None], 'b': ['x', 'y', 'x']})\ns = sales.units")
    series = await _text(tools.describe_dataframe("s", rows=2))
    assert "pandas Series 'units', 6 values" in series
    assert "first 2 values:" in series
    arrow = await _text(tools.describe_dataframe("table"))
    assert "(pyarrow Table)" in arrow
    assert "- a (float64, 1 null)" in arrow
    with pytest.raises(ValueError, match="not a DataFrame or Series"):
        await tools.describe_dataframe("threshold")


@pytest.mark.anyio
async def test_polars_frames_and_series_are_listed_and_described(tools: KernelTools, ip: Any) -> None:
    ip.run(
        "import polars as pl\n"
        "orders = pl.DataFrame({'region': ['north', 'south', None, 'east'], 'units': [3, None, 2, 7]})\n"
        "units = orders['units']"
    )
    listing = json.loads(await _text(tools.list_variables("*r*")))
    (row,) = [v for v in listing["variables"] if v["name"] == "orders"]
    assert row["type"] == "polars.DataFrame"
    assert row["shape"] == "4 x 2"
    assert row["size"].endswith("B")
    frame = await _text(tools.describe_dataframe("orders", rows=2))
    assert frame.startswith("orders: polars DataFrame, shape (4, 2)")
    assert "- region (String, 1 null)" in frame
    assert "- units (Int64, 1 null)" in frame
    assert "null_count" in frame
    assert "mean" in frame
    assert "first 2 rows:" in frame
    assert "north" in frame
    assert "east" not in frame.split("first 2 rows:")[1]
    series = await _text(tools.describe_dataframe("units", rows=10))
    assert series.startswith("units: polars Series, shape (4,), 'units', dtype Int64, 1 null")
    assert "first 4 rows:" in series
    via_agent = await _text(tools.natives()[1]({"name": "orders", "rows": 0}, None))
    assert "first" not in via_agent
    assert "- units (Int64, 1 null)" in via_agent


@pytest.mark.anyio
async def test_run_python_reports_errors_with_their_line_and_keeps_assignments(tools: KernelTools, ip: Any) -> None:
    failed = await tools.run_python("total = sales.units.sum()\nratio = total / 2\nboom = 1 / 0")
    assert failed.is_error
    assert "error: ZeroDivisionError: division by zero\n  at line 3 of the code: boom = 1 / 0" in failed.text
    assert ip.ns["total"] == 22
    assert "boom" not in ip.ns
    syntax = await tools.run_python("x = (")
    assert syntax.is_error
    assert "SyntaxError" in syntax.text
    printed = await tools.run_python("print('hello')\n%time y = 2")
    assert "stdout:\nhello" in printed.text
    assert ip.ns["y"] == 2


@pytest.mark.anyio
async def test_run_python_stops_at_its_timeout(tools: KernelTools, ip: Any) -> None:
    tools.run_timeout = 0.3
    alarm_before = signal.getsignal(signal.SIGALRM)
    with anyio.fail_after(30):
        result = await tools.run_python("n = 0\nwhile True:\n    n += 1")
    assert result.is_error
    assert "TimeoutError: the code ran longer than 0.3 s and was stopped" in result.text
    assert signal.getsignal(signal.SIGALRM) == alarm_before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    tools.run_timeout = 120
    assert (await tools.run_python("n > 0")).text == "value:\nTrue"


@pytest.mark.anyio
async def test_run_python_stops_on_interrupt_and_passes_it_on(tools: KernelTools) -> None:
    code = "import os, signal\nos.kill(os.getpid(), signal.SIGINT)\nwhile True:\n    pass"
    with anyio.fail_after(30), pytest.raises(KeyboardInterrupt):
        await tools.run_python(code)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_interrupting_run_python_cancels_the_turn_and_the_next_cell_works(ip: Any, script: Any) -> None:
    ip.run(SALES)
    code = "import os, signal\nos.kill(os.getpid(), signal.SIGINT)\nwhile True:\n    pass"
    model = script([{"tool": "kernel__run_python", "arguments": {"code": code}}, "done"])
    with pytest.raises(CellInterrupted):
        ip.cell(f"synapse --kernel --approve auto --model {model}", "spin")
    assert ip.ns["_synapse"].status == "cancelled"
    ip.cell(ASK + " --approve auto", QUESTION)
    assert ip.ns["_synapse"].status == "finished"


@pytest.mark.anyio
async def test_recent_cells_shows_inputs_outputs_and_errors(tools: KernelTools, ip: Any) -> None:
    ip.shell.run_cell("int(sales.units.sum())", store_history=False)
    ip.shell.run_cell("x = 1\nsales['nope']", store_history=False)
    text = await _text(tools.recent_cells(n=2))
    assert "int(sales.units.sum())\noutput:\n22" in text
    assert "sales['nope']\nerror: KeyError: 'nope'\n  at line 2 of the cell: sales['nope']\n  raised in File" in text
    assert SALES.splitlines()[0] not in text  # n=2: only the last two


@pytest.mark.anyio
async def test_errors_come_back_as_masked_error_results(tools: KernelTools, ip: Any) -> None:
    registry = ip.state.registry
    ip.state.kernel.register_notebook_tools(ip.state.registry)
    refused = await registry.call("kernel__get_value", {"name": "threshold_token"})
    assert refused.is_error
    assert refused.text == "ValueError: there is no variable named 'threshold_token'; kernel__list_variables lists them"
    ip.state.secret_registry.add("registered-secret-42")
    masked = await registry.call("kernel__get_value", {"name": "x registered-secret-42"})
    assert masked.is_error
    assert "registered-secret-42" not in masked.text
    assert masked.text.startswith("ValueError: 'x [REDACTED]' is not a variable name")


def test_a_background_run_can_use_the_kernel_tools(ip: Any) -> None:
    ip.run(SALES)
    ip.cell(ASK + " --background --approve auto", QUESTION)
    result = ip.ns["_synapse"].result(timeout=60)
    assert result.status == "finished"
    assert _names(result)[-1] == "kernel__run_python"
    assert ip.ns["summary"].to_dict() == {"east": 70.0, "south": 62.0, "north": 50.0}
