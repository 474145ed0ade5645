"""@tool builds a schema from the signature and docstring; ToolRegistry merges native and MCP tools and routes calls."""

from __future__ import annotations

import asyncio
import enum
import threading
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from synapse_nb.agent.schema import parse_docstring
from synapse_nb.agent.tools import TOOL_ATTR, NativeTool, ToolRegistry, tool
from synapse_nb.errors import ConfigError, ToolCallTimeout, UnknownToolError
from synapse_nb.types import ContentBlock, ToolResult


class Unit(enum.Enum):
    CELSIUS = "c"
    FAHRENHEIT = "f"


def native(fn: Any) -> NativeTool:
    found = getattr(fn, TOOL_ATTR)
    assert isinstance(found, NativeTool)
    return found


def test_schema_covers_the_common_annotations() -> None:
    @tool
    def weather(
        city: str,
        days: int = 3,
        scale: float | None = None,
        tags: list[str] | None = None,
        weights: dict[str, float] | None = None,
        mode: Literal["fast", "slow"] = "fast",
        unit: Unit = Unit.CELSIUS,
        verbose: bool = False,
        names: Sequence[int] = (),
        note: Annotated[str, "free text"] = "",
        *,
        options: Mapping[str, Any] | None = None,
        maybe: int | None,
    ) -> str:
        return city

    schema = native(weather).spec.input_schema
    assert schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer", "default": 3},
            "scale": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "weights": {"type": "object", "additionalProperties": {"type": "number"}},
            "mode": {"enum": ["fast", "slow"], "type": "string", "default": "fast"},
            "unit": {"enum": ["c", "f"], "type": "string", "default": "c"},
            "verbose": {"type": "boolean", "default": False},
            "names": {"type": "array", "items": {"type": "integer"}, "default": []},
            "note": {"type": "string", "description": "free text", "default": ""},
            "options": {"type": "object"},
            "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["city", "maybe"],
        "additionalProperties": False,
    }
    assert weather("Oslo", maybe=None) == "Oslo"  # the decorated function is still the function


def test_description_and_parameter_docs_from_a_google_docstring() -> None:
    @tool
    async def lookup(term: str, limit: int = 5, **extra: Any) -> list[str]:
        """Search the catalogue for a term.

        Matches are ranked by relevance.

        Args:
            term (str): What to look for,
                a word or a phrase.
            limit: At most this many results.

        Returns:
            Matching product names.
        """
        return [term] * limit

    spec = native(lookup).spec
    assert spec.name == "lookup"
    assert spec.server is None
    assert spec.description == "Search the catalogue for a term."
    props = spec.input_schema["properties"]
    assert props["term"]["description"] == "What to look for, a word or a phrase."
    assert props["limit"]["description"] == "At most this many results."
    assert "additionalProperties" not in spec.input_schema  # **extra accepts more
    assert native(lookup).is_async


def test_numpy_docstring_and_explicit_name_and_description() -> None:
    @tool(name="convert_temp", description="Convert a temperature.", annotations={"readOnlyHint": True})
    def convert(value: float, unit: Unit) -> float:
        """Ignored summary.

        Parameters
        ----------
        value : float
            The temperature.
        unit : Unit
            Target unit.
        """
        return value

    spec = native(convert).spec
    assert (spec.name, spec.description) == ("convert_temp", "Convert a temperature.")
    assert spec.input_schema["properties"]["value"]["description"] == "The temperature."
    assert spec.input_schema["properties"]["unit"]["description"] == "Target unit."
    assert spec.annotations == {"readOnlyHint": True}
    assert parse_docstring("One line.") == ("One line.", {})


def test_a_tool_name_the_apis_reject_is_refused() -> None:
    with pytest.raises(ConfigError, match="not allowed"):
        tool(name="has space")(lambda: None)


@pytest.mark.anyio
async def test_calls_convert_arguments_and_results() -> None:
    @tool
    def temp(value: float, unit: Unit = Unit.CELSIUS) -> dict[str, Any]:
        return {"value": value, "unit": unit.name}

    registry = ToolRegistry()
    registry.register(temp)
    result = await registry.call("temp", {"value": 20, "unit": "f"})
    assert not result.is_error
    assert result.structured_content == {"value": 20, "unit": "FAHRENHEIT"}
    assert result.text == '{"value": 20.0, "unit": "FAHRENHEIT"}'  # validated as the float it is declared as
    assert result.duration_ms > 0

    @tool
    def nothing() -> None:
        return None

    @tool
    def blocks() -> list[ContentBlock]:
        return [ContentBlock("image", data="aGk=", mime_type="image/png")]

    @tool
    def raw() -> ToolResult:
        return ToolResult(content=(ContentBlock("text", text="as is"),), structured_content={"k": 1})

    for fn in (nothing, blocks, raw):
        registry.register(fn)
    assert (await registry.call("nothing", {})).text == "null"
    assert (await registry.call("blocks", {})).images[0].data == "aGk="
    assert (await registry.call("raw", {})).structured_content == {"k": 1}


@pytest.mark.anyio
async def test_exceptions_and_bad_arguments_become_one_line_error_results() -> None:
    @tool
    async def explode(reason: str) -> str:
        raise ValueError(f"bad thing:\n{reason}")

    registry = ToolRegistry()
    registry.register(explode)
    result = await registry.call("explode", {"reason": "no fuel"})
    assert result.is_error
    assert result.text == "ValueError: bad thing: no fuel"
    missing = await registry.call("explode", {})
    assert missing.is_error
    assert missing.text.startswith("TypeError:")
    assert "reason" in missing.text
    unexpected = await registry.call("explode", {"reason": "x", "other": 1})
    assert unexpected.is_error
    assert "other" in unexpected.text


@pytest.mark.anyio
async def test_sync_tools_run_in_a_thread_without_blocking_the_loop() -> None:
    release = threading.Event()
    entered = threading.Event()
    threads: list[int] = []

    @tool
    def wait_for_release() -> str:
        threads.append(threading.get_ident())
        entered.set()
        # Only the event loop sets `release`; a tool blocking the loop would never see it.
        return "released" if release.wait(timeout=5) else "timed out"

    registry = ToolRegistry()
    registry.register(wait_for_release)
    call = asyncio.create_task(registry.call("wait_for_release", {}))
    assert await asyncio.to_thread(entered.wait, 5)
    release.set()
    result = await asyncio.wait_for(call, 5)
    assert result.text == "released"
    assert threads[0] != threading.get_ident()


@pytest.mark.anyio
async def test_native_timeout_raises_tool_call_timeout() -> None:
    never = asyncio.Event()

    @tool
    async def hang() -> str:
        await never.wait()
        return "never"

    registry = ToolRegistry(default_timeout=0.05)
    registry.register(hang)
    with pytest.raises(ToolCallTimeout) as info:
        await registry.call("hang", {})
    assert info.value.timeout == 0.05


@pytest.mark.anyio
async def test_registry_merges_live_mcp_tools_with_native_ones(source: Any) -> None:
    source.add("demo", "query")
    registry = ToolRegistry(source)

    @tool
    def local() -> str:
        return "here"

    registry.register(local)
    assert [s.name for s in registry.specs()] == ["demo__query", "local"]
    source.add("files", "read")  # a server connected later shows up without re-registering
    assert [s.name for s in registry.specs()] == ["demo__query", "files__read", "local"]
    assert [s.name for s in registry.specs(["demo__*", "loc?l"])] == ["demo__query", "local"]
    assert registry.specs([]) == []
    assert registry.spec("files__read").server == "files"
    assert "local" in registry
    assert len(registry) == 3

    result = await registry.call("demo__query", {"sql": "select 1"}, timeout=7.0)
    assert result.text == "query ok"
    assert source.calls == [("demo__query", {"sql": "select 1"}, 7.0)]
    assert (await registry.call("local", {})).text == "here"

    source.remove("files__read")
    with pytest.raises(UnknownToolError):
        registry.spec("files__read")
    with pytest.raises(UnknownToolError):
        await registry.call("files__read", {})


def test_a_native_name_taken_by_an_mcp_tool_is_an_error(source: Any) -> None:
    source.add("demo", "query")
    registry = ToolRegistry(source)

    def demo__query() -> str:
        return "shadow"

    with pytest.raises(ConfigError, match="demo__query"):
        registry.register(demo__query)
    registry.register(demo__query, name="my_query")
    assert "my_query" in registry


def test_register_namespace_collects_decorated_functions_only() -> None:
    @tool
    def first() -> str:
        return "1"

    @tool(name="second_tool")
    async def second() -> str:
        return "2"

    def plain() -> str:
        return "p"

    namespace = {"first": first, "second": second, "plain": plain, "x": 3, "cls": Unit}
    registry = ToolRegistry()
    assert sorted(registry.register_namespace(namespace)) == ["first", "second_tool"]

    @tool
    def first() -> str:
        """New version."""
        return "1b"

    registry.register_namespace({"first": first})
    assert registry.spec("first").description == "New version."
    registry.unregister("first")
    assert [s.name for s in registry.native] == ["second_tool"]


class Point(BaseModel):
    x: int
    y: int


class Frame:  # a type pydantic cannot check: passed on as given
    pass


@pytest.mark.anyio
async def test_arguments_are_validated_and_coerced_by_the_signature() -> None:
    seen: list[tuple[Any, ...]] = []

    @tool
    def place(json: int, at: Point, /, tags: tuple[str, ...] = (), frame: Frame | None = None,
              note: Annotated[str, Field(description="why")] = "") -> str:
        seen.append((json, at, tags, frame, note))
        return "ok"

    registry = ToolRegistry()
    registry.register(place)
    schema = native(place).spec.input_schema
    assert schema["properties"]["at"] == {
        "type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x", "y"],
    }
    assert schema["properties"]["note"]["description"] == "why"
    assert schema["properties"]["frame"] == {}
    assert (await registry.call("place", {"json": "3", "at": {"x": 1, "y": "2"}, "tags": ["a"]})).text == "ok"
    assert seen[-1] == (3, Point(x=1, y=2), ("a",), None, "")
    bad = await registry.call("place", {"json": "three", "at": {"x": 1}})
    assert bad.is_error
    assert bad.text.startswith("TypeError: arguments do not fit the tool: json: Input should be a valid integer")
    assert "at.y: Field required" in bad.text
    assert "\n" not in bad.text


def test_one_unresolvable_annotation_leaves_the_others_checked() -> None:
    def count(n: int, thing: NoSuchType) -> int:  # type: ignore[name-defined]  # noqa: F821
        return n

    schema = native(tool(count)).spec.input_schema
    assert schema["properties"] == {"n": {"type": "integer"}, "thing": {}}
