"""The conformance runner's expected-failure tables and the driver's call plans (the suites: `make conformance`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from synapse_nb.types import ToolSpec

REPO = Path(__file__).resolve().parents[2]


def script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"conformance_{name}", REPO / "scripts" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_each_suite_version_has_its_own_expected_failures_each_with_a_reason(tmp_path: Path) -> None:
    runner = script("run_conformance")
    pinned = runner.load_expected(REPO / "tests" / "conformance" / "expected_failures.toml", "0.2.0-alpha.12")
    assert set(pinned) == {"sep-2322-client-request-state"}
    two = tmp_path / "two.toml"
    two.write_text('[client."1.0"]\n"initialize" = "old mock"\n[client."2.0"]\n"tools_call" = "new mock"\n',
                   encoding="utf-8")
    assert runner.load_expected(two, "1.0") == {"initialize": "old mock"}
    assert runner.load_expected(two, "2.0") == {"tools_call": "new mock"}
    assert runner.load_expected(two, "9.9.9") == {}
    bad = tmp_path / "bad.toml"
    bad.write_text('[client."1.0"]\n"initialize" = " "\n', encoding="utf-8")
    with pytest.raises(SystemExit, match="needs its reason; none for initialize"):
        runner.load_expected(bad, "1.0")


def tool(name: str, schema: dict[str, object]) -> ToolSpec:
    return ToolSpec(name=f"conformance__{name}", description="", input_schema=schema, server="conformance",
                    original_name=name)


def test_the_driver_calls_what_the_scenario_asks_for() -> None:
    driver = script("conformance_client")
    focal = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "$defs": {"a": {}}}
    tools = {"json_schema_2020_12_tool": tool("json_schema_2020_12_tool", focal),
             "json_schema_echo": tool("json_schema_echo", {"type": "object"})}
    assert driver.planned_calls("json-schema-2020-12-preservation", {}, tools) == [
        ("json_schema_echo", {"schema": focal})]
    assert driver.planned_calls("json-schema-ref-no-deref", {}, {"lookup_user": tool("lookup_user", {})}) == []
    context = {"toolCalls": [{"name": "t", "arguments": {"region": "eu"}}, {"name": "u"}]}
    assert driver.planned_calls("http-custom-headers", context, tools) == [("t", {"region": "eu"}), ("u", {})]
    assert driver.planned_calls("tools_call", {}, {"add_numbers": tool("add_numbers", {})}) == [
        ("add_numbers", {"a": 5, "b": 3})]
