"""An MCP Apps test server (stdio), built with the SDK's `mcp.server.apps`: Views that exercise a host.

Tools:
- `counter` (model + app, View ui://fixture/counter.html): its View shows the tool input and result, the
  host's theme, and buttons that call the app-only tool `bump`, send a `ui/message`, update the model
  context, open a link, send a log line, and grow the page (so the frame must follow its size); it registers a
  tool of its own, `get_count` (the count it shows), which the host may list and call.
- `bump` (app only): `value + 1`, for the counter View.
- `summary` (model only, View ui://fixture/counter.html): a View may not call it.
- `probe` (model + app, View ui://fixture/probe.html): its View tries to reach the notebook page (the parent's
  DOM, `window.top`, cookies, storage, the Jupyter server's REST API, a popup) and lists what happened.

The Views use the official View half of `@modelcontextprotocol/ext-apps` (its `app-with-deps.js`, from
js/node_modules after `make widget-js`, or the file SYNAPSE_APPS_VIEW_LIB names), inlined into each HTML
document as Views ship in practice. Run: `python tests/support/apps_server.py`.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from mcp.server.apps import Apps, ResourceCsp
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

CHANGES_NOTHING = ToolAnnotations(readOnlyHint=True)
"""The fixture's tools only compute: they say so (a tool that says nothing is possibly destructive and asks)."""

REPO = Path(__file__).resolve().parents[2]
VIEW_LIB = REPO / "js" / "node_modules" / "@modelcontextprotocol" / "ext-apps" / "dist" / "src" / "app-with-deps.js"
LINK = "https://example.com/counter"


def view_lib() -> str:
    """The View half of ext-apps as a script that puts its exports on `window.McpApps` (the file is one ES
    module ending in a single `export{x as Name,...}`)."""
    path = Path(os.environ.get("SYNAPSE_APPS_VIEW_LIB", VIEW_LIB))
    if not path.is_file():
        sys.exit(f"apps_server: {path} is missing: run `make widget-js` (npm ci in js/) first")
    source = path.read_text(encoding="utf-8")
    exports = list(re.finditer(r"export\s*\{([^}]*)\}\s*;?", source))
    if len(exports) != 1:
        sys.exit(f"apps_server: expected one export list in {path}, found {len(exports)}")
    found = exports[0]
    pairs = [part.strip().split(" as ") for part in found.group(1).split(",") if part.strip()]
    table = ",".join(f"{p[-1]}:{p[0]}" for p in pairs)
    return source[: found.start()] + f"window.McpApps={{{table}}};" + source[found.end():]


def page(title: str, body: str, script: str) -> str:
    """A View document: the host's style variables applied, the ext-apps View library, then `script`."""
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: var(--font-sans, sans-serif); color: var(--color-text-primary, #111);
       background: var(--color-background-primary, #fff); margin: 8px; }}
button {{ margin: 2px; }}
</style></head>
<body>{body}
<script type="module">
{view_lib()}
const {{ App }} = window.McpApps;
const $ = (id) => document.getElementById(id);
{script}
</script></body></html>"""


COUNTER_BODY = """
<h3 id="title">Counter view</h3>
<p>count: <span id="count">?</span></p>
<p>input: <span id="input"></span></p>
<p>heard: <span id="heard"></span></p>
<p>theme: <span id="theme">?</span> background: <span id="bg">?</span></p>
<p id="status">waiting</p>
<button id="bump">Add one</button><button id="message">Send message</button>
<button id="context">Update context</button><button id="link">Open link</button>
<button id="log">Send log</button><button id="grow">Grow</button>
<div id="extra"></div>
"""

COUNTER_SCRIPT = f"""
const app = new App({{ name: "fixture-counter", version: "1.0.0" }}, {{}});
let count = 0;
// a tool of the View itself (the draft's app-registered tools): the host may list and call it
app.registerTool("get_count", {{ description: "The count the counter View shows now",
                                 annotations: {{ readOnlyHint: true }} }},
  async () => ({{ content: [{{ type: "text", text: "the view shows " + count }}], structuredContent: {{ count }} }}));
const say = (text) => {{ $("status").textContent = text; }};
const showContext = (ctx) => {{
  if (!ctx) return;
  if (ctx.theme) $("theme").textContent = ctx.theme;
  const bg = ctx.styles && ctx.styles.variables && ctx.styles.variables["--color-background-primary"];
  if (bg) {{ $("bg").textContent = bg; document.body.style.background = bg; }}
  const fg = ctx.styles && ctx.styles.variables && ctx.styles.variables["--color-text-primary"];
  if (fg) document.body.style.color = fg;
}};
// what the host sent about the call, in order ("partial", "input", "result", "cancelled")
const heard = (what) => {{ $("heard").textContent = ($("heard").textContent + " " + what).trim(); }};
app.ontoolinputpartial = () => heard("partial");
app.ontoolinput = (p) => {{
  heard("input");
  $("input").textContent = JSON.stringify(p.arguments || {{}});
  count = (p.arguments && p.arguments.start) || 0;
  $("count").textContent = String(count);
}};
app.ontoolresult = (r) => {{
  heard("result");
  say("result: " + ((r.content && r.content[0] && r.content[0].text) || "?"));
}};
app.ontoolcancelled = (p) => {{ heard("cancelled"); say("cancelled: " + (p.reason || "")); }};
app.onhostcontextchanged = (p) => showContext({{ ...app.getHostContext(), ...p }});
app.onteardown = async () => {{
  // tells the kernel (through the host's bridge) that the host's ui/resource-teardown reached this page
  await app.sendLog({{ level: "info", data: "teardown received" }});
  return {{}};
}};
const act = (id, fn) => {{
  $(id).onclick = async () => {{
    try {{ await fn(); }} catch (err) {{ say(id + " failed: " + (err && err.message)); }}
  }};
}};
act("bump", async () => {{
  say("calling bump");
  const r = await app.callServerTool({{ name: "bump", arguments: {{ value: count }} }});
  if (r.isError) {{ say("bump refused: " + r.content[0].text); return; }}
  count += 1;
  $("count").textContent = String(count);
  say("tool: " + r.content[0].text);
}});
act("message", async () => {{
  const r = await app.sendMessage({{ role: "user", content: [{{ type: "text", text: "the count is " + count }}] }});
  say(r && r.isError ? "message refused" : "message sent");
}});
act("context", async () => {{
  await app.updateModelContext({{ content: [{{ type: "text", text: "the counter shows " + count }}] }});
  say("context updated");
}});
act("link", async () => {{
  const r = await app.openLink({{ url: "{LINK}" }});
  say(r && r.isError ? "link refused" : "link opened");
}});
act("log", async () => {{
  await app.sendLog({{ level: "info", data: "count is " + count }});
  say("log sent");
}});
act("grow", async () => {{
  const block = document.createElement("div");
  block.style.height = "400px";
  block.textContent = "grown";
  $("extra").appendChild(block);
  say("grown");
}});
await app.connect();
showContext(app.getHostContext());
say("connected");
"""

PROBE_BODY = """<h3>Sandbox probe</h3><ul id="probe"></ul><p id="done"></p>"""

PROBE_SCRIPT = """
const list = $("probe");
const attempt = async (name, fn) => {
  let outcome;
  try {
    const value = await fn();
    outcome = "allowed: " + String(value).slice(0, 80);
  } catch (err) {
    outcome = "blocked: " + ((err && err.name) || "Error");
  }
  const item = document.createElement("li");
  item.dataset.probe = name;
  item.textContent = name + " " + outcome;
  list.appendChild(item);
};
await attempt("parent-document", () => window.parent.document.title);
await attempt("top-location", () => window.top.location.href);
await attempt("cookie", () => document.cookie);
await attempt("local-storage", () => window.localStorage.getItem("synapse"));
await attempt("session-storage", () => window.sessionStorage.getItem("synapse"));
await attempt("api-contents", async () => {
  const url = new URL("/api/contents", document.baseURI);
  const response = await fetch(url, { credentials: "include" });
  return response.status + " " + (await response.text()).slice(0, 40);
});
await attempt("popup", () => {
  const opened = window.open("https://example.com/popup");
  if (!opened) throw new Error("no window");
  return "opened";
});
const app = new App({ name: "fixture-probe", version: "1.0.0" }, {});
await app.connect();
$("done").textContent = "probe done";
"""


# The frame View (issue 36): its own storage (`localStorage` in an origin-less frame), display modes, a download.
FRAME_BODY = """
<h3 id="title">Frame view</h3>
<p>stored: <span id="stored">?</span> mode: <span id="mode">inline</span></p>
<p id="status">waiting</p>
<button id="store">Store a click</button><button id="full">Fullscreen</button>
<button id="pip">Picture in picture</button><button id="inline">Inline</button>
<button id="download">Download notes</button>
"""

FRAME_SCRIPT = """
const app = new App({ name: "fixture-frame", version: "1.0.0" },
                    { availableDisplayModes: ["inline", "fullscreen", "pip"] });
const say = (text) => { $("status").textContent = text; };
$("stored").textContent = window.localStorage.getItem("clicks") || "none";
const act = (id, fn) => {
  $(id).onclick = async () => {
    try { await fn(); } catch (err) { say(id + " failed: " + (err && err.message)); }
  };
};
act("store", async () => {
  const n = Number(window.localStorage.getItem("clicks") || 0) + 1;
  window.localStorage.setItem("clicks", String(n));
  $("stored").textContent = String(n);
  say("stored " + n);
});
const ask = async (mode) => {
  const r = await app.requestDisplayMode({ mode });
  $("mode").textContent = r.mode;
  say("asked " + mode + ", granted " + r.mode);
};
act("full", () => ask("fullscreen"));
act("pip", () => ask("pip"));
act("inline", () => ask("inline"));
act("download", async () => {
  const r = await app.downloadFile({ contents: [{ type: "resource", resource: {
    uri: "file:///notes.txt", mimeType: "text/plain", text: "hello from the view" } }] });
  say(r && r.isError ? "download refused" : "downloaded");
});
app.onhostcontextchanged = (p) => { if (p.displayMode) $("mode").textContent = p.displayMode; };
await app.connect();
say("connected");
"""

# A View with no styles of its own that never reports its size (issue 36: cut at 120 px, black on a dark page).
PLAIN_HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>Plain</title></head>
<body><p id="plain">A plain view with no styles.</p>
<div style="height: 900px"></div><p id="bottom">the bottom of the plain view</p>
<script type="module">
{lib}
const app = new window.McpApps.App({{ name: "fixture-plain", version: "1.0.0" }}, {{}}, {{ autoResize: false }});
await app.connect();
document.getElementById("plain").dataset.ready = "yes";
</script></body></html>"""


def build_server() -> MCPServer:
    apps = Apps()

    @apps.tool(resource_uri="ui://fixture/counter.html", visibility=["model", "app"],
               description="Show a counter View starting at `start`", annotations=CHANGES_NOTHING)
    def counter(start: int = 0) -> str:
        return f"counter starts at {start}"

    @apps.tool(resource_uri="ui://fixture/counter.html", visibility=["app"],
               description="Add one to `value` (for the counter View only)", annotations=CHANGES_NOTHING)
    def bump(value: int) -> str:
        return f"bumped to {value + 1}"

    @apps.tool(resource_uri="ui://fixture/counter.html", visibility=["model"],
               description="Summarise the counter (for the model only)", annotations=CHANGES_NOTHING)
    def summary() -> str:
        return "the counter counts"

    @apps.tool(resource_uri="ui://fixture/probe.html", description="Show the sandbox probe View",
               annotations=CHANGES_NOTHING)
    def probe() -> str:
        return "sandbox probe"

    @apps.tool(resource_uri="ui://fixture/frame.html", description="Show the frame View (storage, display modes)",
               annotations=CHANGES_NOTHING)
    def frame() -> str:
        return "frame view"

    @apps.tool(resource_uri="ui://fixture/plain.html", description="Show a plain View", annotations=CHANGES_NOTHING)
    def plain() -> str:
        return "plain view"

    apps.add_html_resource("ui://fixture/frame.html", page("Frame", FRAME_BODY, FRAME_SCRIPT), name="frame view")
    apps.add_html_resource("ui://fixture/plain.html", PLAIN_HTML.format(lib=view_lib()), name="plain view")
    apps.add_html_resource("ui://fixture/counter.html", page("Counter", COUNTER_BODY, COUNTER_SCRIPT),
                           name="counter view",
                           csp=ResourceCsp(connect_domains=["https://api.example.com"]))
    apps.add_html_resource("ui://fixture/probe.html", page("Probe", PROBE_BODY, PROBE_SCRIPT), name="probe view")
    return MCPServer("apps-fixture", extensions=[apps])


if __name__ == "__main__":
    build_server().run("stdio")
