"""SDK values to synapse values: every content kind kept, structured content always a mapping."""

from __future__ import annotations

import mcp.types as mt

from synapse_nb.mcp_client.convert import content_block, raw_tool, tool_result


def test_content_blocks_of_every_kind() -> None:
    result = mt.CallToolResult(content=[
        mt.TextContent(type="text", text="hi"),
        mt.ImageContent(type="image", data="aGk=", mime_type="image/png"),
        mt.AudioContent(type="audio", data="aGk=", mime_type="audio/wav"),
        mt.ResourceLink(type="resource_link", uri="file:///a.txt", name="a.txt", mime_type="text/plain"),
        mt.EmbeddedResource(type="resource", resource=mt.TextResourceContents(uri="mem://x", text="body")),
        mt.EmbeddedResource(type="resource", resource=mt.BlobResourceContents(uri="mem://y", blob="AAA=")),
    ], structured_content=[1, 2], is_error=True)
    converted = tool_result(result, 12.5)
    assert [b.kind for b in converted.content] == ["text", "image", "audio", "resource_link", "resource", "resource"]
    assert converted.content[3].uri == "file:///a.txt"
    assert converted.content[4].text == "body"
    assert converted.content[5].data == "AAA="
    assert converted.structured_content == {"result": [1, 2]}
    assert converted.is_error
    assert converted.duration_ms == 12.5
    assert converted.text.splitlines()[0] == "hi"


def test_unknown_blocks_become_json_text() -> None:
    block = content_block(mt.ToolUseContent(type="tool_use", id="1", name="x", input={"a": 1}))
    assert block.kind == "text"
    assert block.text is not None
    assert '"name": "x"' in block.text


def test_tools_keep_annotations_with_wire_names_and_get_a_schema() -> None:
    tool = mt.Tool(name="t", input_schema={}, title="Tee",
                   annotations=mt.ToolAnnotations(destructive_hint=True, read_only_hint=False))
    raw = raw_tool(tool)
    assert raw.description == "Tee"
    assert raw.input_schema == {"type": "object", "properties": {}}
    spec = raw.spec("srv__t", "srv")
    assert spec.annotations == {"destructiveHint": True, "readOnlyHint": False}
    assert spec.destructive
    assert (spec.server, spec.original_name) == ("srv", "t")


def test_annotations_and_link_descriptions_survive_the_round_trip() -> None:
    notes = mt.Annotations(audience=["user"], priority=0.5)
    result = tool_result(mt.CallToolResult(content=[
        mt.TextContent(type="text", text="hi", annotations=notes),
        mt.ResourceLink(type="resource_link", uri="file:///a", name="a", description="the a file", annotations=notes),
        mt.EmbeddedResource(type="resource", resource=mt.TextResourceContents(uri="mem://x", text="b"),
                            annotations=notes),
    ]), 1.0)
    assert [b.annotations for b in result.content] == [{"audience": ["user"], "priority": 0.5}] * 3
    assert result.content[1].description == "the a file"
    assert type(result).from_dict(result.to_dict()) == result
    assert hash(result.content[0]) == hash(result.content[0])  # annotations stay out of the hash
