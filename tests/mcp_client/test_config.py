"""The MCP servers file (DESIGN.md section 5): both dialects, variables, errors, MCP_URL, resolution order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synapse_nb.config import ConfigWarning, ServerConfig, load_mcp_config, mcp_config_path, parse_mcp_config
from synapse_nb.errors import ConfigError

CLAUDE = """{
  "mcpServers": {
    "files": {"command": "npx", "args": ["-y", "@scope/files", "${HOME_DIR}"], "env": {"API_KEY": "${env:FILES_KEY}"}},
    "remote": {"url": "https://mcp.example.com/mcp?token=${TOKEN}", "headers": {"Authorization": "Bearer ${TOKEN}"},
               "timeout": 30, "approve": {"delete_*": "ask", "read": "auto"}, "tools": ["read*", "list_*"]},
    "old": {"command": "old-server", "disabled": true}
  }
}"""

VSCODE = """{
  // VS Code keeps inputs next to its servers
  "inputs": [],
  "servers": {
    "web": {"type": "sse", "url": "http://127.0.0.1:9000/sse", "approve": "deny",},
    /* a stdio one */
    "local": {"type": "stdio", "command": "python", "args": ["-m", "srv"], "cwd": "~/work", "connect_timeout": 2},
  },
}"""

ENV = {"HOME_DIR": "/home/ada", "FILES_KEY": "files-secret-123", "TOKEN": "tok-secret-456"}


def test_claude_desktop_dialect_with_expansion() -> None:
    servers = parse_mcp_config(CLAUDE, source="claude.json", environ=ENV)
    assert list(servers) == ["files", "remote", "old"]
    files, remote, old = servers["files"], servers["remote"], servers["old"]
    assert files.transport == "stdio"
    assert files.command == "npx"
    assert files.args == ("-y", "@scope/files", "/home/ada")
    assert files.env == {"API_KEY": "files-secret-123"}
    assert files.problem is None
    assert remote.transport == "http"
    assert remote.url == "https://mcp.example.com/mcp?token=tok-secret-456"
    assert remote.headers == {"Authorization": "Bearer tok-secret-456"}
    assert remote.timeout == 30.0
    assert remote.approve == {"delete_*": "ask", "read": "auto"}
    assert remote.tools == ("read*", "list_*")
    assert old.disabled is True
    assert files.source == "claude.json"


def test_vscode_dialect_with_comments_and_trailing_commas() -> None:
    servers = parse_mcp_config(VSCODE, source="mcp.json", environ={})
    assert servers["web"].transport == "sse"
    assert servers["web"].approve == "deny"
    local = servers["local"]
    assert (local.transport, local.command, local.args, local.cwd) == ("stdio", "python", ("-m", "srv"), "~/work")
    assert local.connect_timeout == 2.0
    assert local.connect_timeout_s == 2.0


def test_display_and_repr_never_show_secrets() -> None:
    servers = parse_mcp_config(CLAUDE, source="claude.json", environ=ENV)
    for config in servers.values():
        text = repr(config) + str(config) + config.display
        for secret in ("files-secret-123", "tok-secret-456"):
            assert secret not in text
    assert servers["files"].display == "npx -y @scope/files '${HOME_DIR}'"
    assert servers["remote"].display == "https://mcp.example.com/mcp?token=[REDACTED]"
    assert "'API_KEY': '[REDACTED]'" in repr(servers["files"])
    assert "'Authorization': '[REDACTED]'" in repr(servers["remote"])


def test_repr_masks_values_given_in_code() -> None:
    config = ServerConfig(name="x", transport="http", url="https://user:pw@example.com/mcp",
                          headers={"X-Api-Key": "k-123456"}, env={"A": "b-123456"})
    text = repr(config)
    assert "k-123456" not in text
    assert "b-123456" not in text
    assert "pw@" not in text
    assert "https://example.com/mcp" in text


def test_malformed_json_names_file_line_and_column() -> None:
    text = '{\n  "mcpServers": {\n    "a": {"command": "x",}\n    "b": {}\n  }\n}'
    with pytest.raises(ConfigError) as info:
        parse_mcp_config(text, source="/tmp/bad.json")
    err = info.value
    assert (err.path, err.line, err.column) == ("/tmp/bad.json", 4, 5)
    assert str(err).startswith("/tmp/bad.json:4:5: invalid JSON")


def test_wrong_shapes_raise_config_error() -> None:
    with pytest.raises(ConfigError, match="expected a JSON object"):
        parse_mcp_config("[1, 2]", source="f.json")
    with pytest.raises(ConfigError, match="'mcpServers' must be an object") as info:
        parse_mcp_config('{\n "mcpServers": [1]}', source="f.json")
    assert info.value.line == 2


def test_unknown_keys_warn_and_are_ignored() -> None:
    text = json.dumps({"mcpServers": {"a": {"command": "x", "colour": "blue"}}, "extra": 1})
    with pytest.warns(ConfigWarning) as record:
        servers = parse_mcp_config(text, source="f.json")
    messages = [str(w.message) for w in record]
    assert any("unknown key 'colour'" in m and "'a'" in m for m in messages)
    assert any("unknown top-level key 'extra'" in m for m in messages)
    assert servers["a"].command == "x"
    assert servers["a"].problem is None


def test_bad_entries_carry_a_problem_and_do_not_hide_the_others() -> None:
    text = json.dumps({"mcpServers": {
        "ok": {"command": "x"},
        "nothing": {},
        "badtype": {"type": "carrier-pigeon", "url": "http://x"},
        "badtimeout": {"command": "x", "timeout": -1},
        "badapprove": {"command": "x", "approve": "maybe"},
        "badargs": {"command": "x", "args": "--flag"},
        "missingvar": {"command": "x", "env": {"K": "${env:NOT_SET_ANYWHERE}"}},
        "notobject": 7,
    }})
    servers = parse_mcp_config(text, source="f.json", environ={})
    assert servers["ok"].problem is None
    expected = {
        "nothing": "needs \"command\"",
        "badtype": "type must be one of",
        "badtimeout": "timeout must be a positive number",
        "badapprove": "approve must be",
        "badargs": "args must be a list",
        "missingvar": "NOT_SET_ANYWHERE (in env.K)",
        "notobject": "entry must be an object",
    }
    for name, fragment in expected.items():
        problem = servers[name].problem
        assert problem is not None, name
        assert fragment in problem, (name, problem)
        assert problem.startswith("f.json:"), problem
        assert f"server '{name}'" in problem


def test_entry_problem_points_at_the_line_of_the_server() -> None:
    text = '{\n  "mcpServers": {\n    "good": {"command": "x"},\n    "bad": {"timeout": 0, "command": "y"}\n  }\n}'
    problem = parse_mcp_config(text, source="f.json")["bad"].problem
    assert problem is not None
    assert problem.startswith("f.json:4:5: server 'bad'")


def test_no_file_means_no_servers(clean_env: Path) -> None:
    assert mcp_config_path() is None
    assert load_mcp_config() == {}


def test_explicit_missing_file_is_an_error(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = clean_env / "nope.json"
    monkeypatch.setenv("SYNAPSE_MCP_CONFIG", str(missing))
    with pytest.raises(ConfigError, match="does not exist") as info:
        load_mcp_config()
    assert info.value.path == str(missing)
    with pytest.raises(ConfigError, match="does not exist"):
        load_mcp_config(missing)


def test_resolution_order(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = clean_env / "home" / ".config" / "synapse" / "mcp_servers.json"
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"mcpServers": {"user": {"command": "u"}}}))
    assert list(load_mcp_config()) == ["user"]
    local = Path.cwd() / ".synapse" / "mcp_servers.json"
    local.parent.mkdir()
    local.write_text(json.dumps({"servers": {"local": {"command": "l"}}}))
    assert list(load_mcp_config()) == ["local"]
    explicit = clean_env / "explicit.json"
    explicit.write_text(json.dumps({"mcpServers": {"explicit": {"command": "e"}}}))
    monkeypatch.setenv("SYNAPSE_MCP_CONFIG", str(explicit))
    assert list(load_mcp_config()) == ["explicit"]


def test_mcp_url_adds_default_http_server_with_short_connect_timeout(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_URL", "   ")
    assert load_mcp_config() == {}
    monkeypatch.setenv("MCP_URL", "http://127.0.0.1:8765/mcp")
    default = load_mcp_config()["default"]
    assert (default.transport, default.url, default.connect_timeout_s) == ("http", "http://127.0.0.1:8765/mcp", 5.0)
    assert default.source == "MCP_URL"


def test_mcp_url_replaces_a_default_from_the_file(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = clean_env / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"default": {"command": "x"}, "other": {"command": "y"}}}))
    monkeypatch.setenv("MCP_URL", "http://127.0.0.1:1/mcp")
    with pytest.warns(ConfigWarning, match="MCP_URL"):
        servers = load_mcp_config(path)
    assert servers["default"].transport == "http"
    assert "other" in servers


def test_environment_expansion_reads_os_environ(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYN_TEST_TOKEN", "abc-999")
    path = clean_env / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"a": {"url": "http://h/mcp", "headers": {"X": "${SYN_TEST_TOKEN}"}}}}))
    assert load_mcp_config(path)["a"].headers == {"X": "abc-999"}
