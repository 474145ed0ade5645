// @ts-check
// The browser half of synapse_nb's AppView widget: an MCP Apps View in a sandboxed iframe, spoken to by the
// official host bridge (AppBridge from @modelcontextprotocol/ext-apps). Every request the View makes goes to
// the kernel through the widget's comm, tagged with this view's id so that the answer reaches the View that
// asked; links open here, in the browser; the frame follows the View's size and JupyterLab's theme.
import { AppBridge, PostMessageTransport, buildAllowAttribute } from "@modelcontextprotocol/ext-apps/app-bridge";

/**
 * The AppView widget's synced traits (synapse_nb/notebook/apps/view.py), as the browser reads them.
 * @typedef {{
 *   server: string, tool: Partial<Tool>, resource_uri: string, html: string,
 *   page: string, bundle: string, csp: Record<string, string[]>, csp_policy: string,
 *   permissions: Record<string, {}>, prefers_border: boolean, tool_input: Record<string, unknown> | null,
 *   tool_input_partial: Record<string, unknown>, tool_result: Partial<ToolResult>, tool_cancelled: string,
 *   theme: string, display_mode: "inline" | "fullscreen" | "pip", height: number, host_version: string,
 * }} ViewTraits
 * @typedef {import("@anywidget/types").AnyModel<ViewTraits>} ViewModel
 * @typedef {import("@modelcontextprotocol/ext-apps/app-bridge").McpUiHostContext} HostContext
 * @typedef {import("@modelcontextprotocol/ext-apps/app-bridge").McpUiStyles} Styles
 * @typedef {Parameters<AppBridge["sendToolResult"]>[0]} ToolResult
 * @typedef {NonNullable<HostContext["toolInfo"]>["tool"]} Tool
 * @typedef {{ resolve: (result: any) => void, reject: (error: Error) => void }} Waiter
 * @typedef {{ type: string, view?: string, id?: number, result?: any, error?: { message?: string },
 *   method?: string, params?: any }} KernelMessage
 * @typedef {{ park: () => void, unpark: () => void }} Parking
 * @typedef {{ type: string }} LuminoMessage
 * @typedef {{ processMessage: (msg: LuminoMessage) => void, synapseDetach?: Parking }} LuminoWidget
 * @typedef {{ luminoWidget?: LuminoWidget, pWidget?: LuminoWidget }} WidgetView
 * @typedef {HTMLElement & { moveBefore?: (node: Node, child: Node | null) => void }} MovableParent
 */

const TEARDOWN_MS = 1000;
const DEFAULT_HEIGHT = 120;
const LINK_SCHEMES = ["http:", "https:", "mailto:"];

// The spec's style variables, read from the JupyterLab theme variables they correspond to.
const STYLE_VARIABLES = {
  "--color-background-primary": "--jp-layout-color0",
  "--color-background-secondary": "--jp-layout-color1",
  "--color-background-tertiary": "--jp-layout-color2",
  "--color-text-primary": "--jp-content-font-color1",
  "--color-text-secondary": "--jp-content-font-color2",
  "--color-text-tertiary": "--jp-content-font-color3",
  "--color-text-danger": "--jp-error-color1",
  "--color-text-success": "--jp-success-color1",
  "--color-text-warning": "--jp-warn-color1",
  "--color-text-info": "--jp-info-color1",
  "--color-border-primary": "--jp-border-color1",
  "--color-border-secondary": "--jp-border-color2",
  "--font-sans": "--jp-ui-font-family",
  "--font-mono": "--jp-code-font-family",
  "--border-radius-sm": "--jp-border-radius",
};

/** @param {ViewModel} model @returns {"light" | "dark"} */
function pageTheme(model) {
  const forced = model.get("theme");
  if (forced === "light" || forced === "dark") return forced;
  // JupyterLab marks the body with its theme's lightness; other frontends: the user agent's preference
  const light = document.body.dataset.jpThemeLight;
  if (light === "true") return "light";
  if (light === "false") return "dark";
  return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

/** @returns {{ variables: Styles }} */
function pageStyles() {
  const computed = getComputedStyle(document.body);
  /** @type {Record<string, string>} */
  const variables = {};
  for (const [name, source] of Object.entries(STYLE_VARIABLES)) {
    const value = computed.getPropertyValue(source).trim();
    if (value) variables[name] = value;
  }
  return { variables: /** @type {Styles} */ (variables) };  // the spec lets a host give any subset
}

/** @param {ViewModel} model @param {HTMLElement} el @returns {HostContext} */
function hostContext(model, el) {
  const tool = model.get("tool");
  return {
    theme: pageTheme(model),
    styles: pageStyles(),
    displayMode: model.get("display_mode") || "inline",
    availableDisplayModes: ["inline"],
    containerDimensions: { maxWidth: Math.max(el.clientWidth, 320) },
    locale: navigator.language,
    timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    userAgent: "synapse_nb",
    platform: "web",
    ...(tool && tool.name ? { toolInfo: { tool: /** @type {Tool} */ (tool) } } : {}),  // a named tool is whole
  };
}

// The resource's HTML: in the page model shared by every View of the same HTML (AppViewPage), or, in a
// notebook saved by an older synapse_nb, in the View's own `html`.
/** @param {ViewModel} model @returns {Promise<string>} */
async function resourceHtml(model) {
  const ref = model.get("page");
  if (typeof ref === "string" && ref.startsWith("IPY_MODEL_")) {
    const page = await model.widget_manager.get_model(/** @type {string} */ (ref).slice("IPY_MODEL_".length));
    return page.get("html") || "";
  }
  return model.get("html") || "";
}

// The resource's HTML with the host's Content-Security-Policy as its first element (after a doctype, which
// must stay first), so that it governs everything the document loads.
/** @param {string} html @param {string} policy @returns {string} */
function withPolicy(html, policy) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${policy.replace(/"/g, "&quot;")}">`;
  const doctype = /^\s*<!doctype[^>]*>/i.exec(html);
  return doctype ? doctype[0] + meta + html.slice(doctype[0].length) : meta + html;
}

/** @returns {string} */
function viewId() {
  if (window.crypto && typeof window.crypto.randomUUID === "function") return window.crypto.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

// Resolves once `el` is in the page (JupyterLab lays outputs out lazily); an iframe has no window before.
/** @param {HTMLElement} el @param {() => boolean} alive @returns {Promise<void>} */
function whenConnected(el, alive) {
  return new Promise((resolve) => {
    const check = () => {
      if (!alive()) return;
      if (el.isConnected) resolve();
      else requestAnimationFrame(check);
    };
    check();
  });
}

// JupyterLab removes a cleared output (a cell run again, Clear Outputs) from the page before the widget view's
// cleanup runs, and the View's document dies with it. Its Lumino widget is told first ("before-detach"; and
// "after-attach" when it comes back: a cell moved, a panel re-docked), so the frame is parked outside the
// output then and put back after, and the cleanup finds it alive to send ui/resource-teardown. The view
// object is the context anywidget gives the model's listeners (`this` of a "msg:custom" handler).
/** @param {WidgetView | undefined} view @param {() => void} park @param {() => void} unpark @returns {boolean} */
function watchDetach(view, park, unpark) {
  const lumino = view && (view.luminoWidget || view.pWidget);
  if (!lumino || typeof lumino.processMessage !== "function") return false;
  if (!lumino.synapseDetach) {  // wrapped once; a render of the same view again replaces the frame's handlers
    const original = lumino.processMessage.bind(lumino);
    lumino.processMessage = (msg) => {
      if (msg.type === "before-detach") lumino.synapseDetach?.park();
      original(msg);
      if (msg.type === "after-attach") lumino.synapseDetach?.unpark();
    };
  }
  lumino.synapseDetach = { park, unpark };
  return true;
}

/** @param {{ model: ViewModel, el: HTMLElement }} props @returns {() => void} the cleanup */
function render({ model, el }) {
  const id = viewId();
  /** @type {Map<number, Waiter>} */
  const pending = new Map();
  let seq = 0;
  let alive = true;
  let initialized = false;

  el.classList.add("synapse-app-view");
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts allow-forms");
  frame.setAttribute("allow", buildAllowAttribute(model.get("permissions") || undefined));
  frame.setAttribute("title", `MCP App ${model.get("resource_uri")}`);
  frame.dataset.resourceUri = model.get("resource_uri");
  frame.style.width = "100%";
  frame.style.border = model.get("prefers_border") ? "1px solid var(--jp-border-color2)" : "0";
  frame.style.display = "block";
  frame.style.height = `${model.get("height") || DEFAULT_HEIGHT}px`;

  /** @param {Record<string, unknown>} content */
  const send = (content) => {
    try {
      model.send({ ...content, view: id });
    } catch (err) {
      console.warn("synapse_nb app view: the kernel is unreachable", err);
    }
  };
  // A request to the kernel; it stays pending while a cell runs (the kernel answers when it is free).
  /** @param {string} method @param {object} [params] @returns {Promise<any>} */
  const ask = (method, params) =>
    new Promise((resolve, reject) => {
      const n = ++seq;
      pending.set(n, { resolve, reject });
      send({ type: "request", id: n, method, params: params || {} });
    });
  // Parked outside the output while its widget is detached (see watchDetach); moveBefore keeps the document.
  /** @type {MovableParent | null} */
  let parking = null;
  const park = () => {
    if (!frame.isConnected || typeof /** @type {MovableParent} */ (document.body).moveBefore !== "function") return;
    if (!parking) {
      parking = document.createElement("div");
      parking.style.cssText = "position:fixed;left:-10000px;top:0;width:1px;height:1px;overflow:hidden";
      document.body.appendChild(parking);
    }
    if (frame.parentNode !== parking) parking.moveBefore?.(frame, null);
  };
  const unpark = () => {
    if (!alive || !parking || frame.parentNode !== parking || !el.isConnected) return;
    /** @type {MovableParent} */ (el).moveBefore?.(frame, null);
  };
  /** @this {WidgetView | undefined} @param {KernelMessage | null} msg */
  const onMessage = function (msg) {
    if (msg && msg.view === id && msg.type === "hello") {
      if (watchDetach(this, park, unpark)) el.dataset.watched = "true";
      return;
    }
    if (msg && msg.view === id && msg.type === "app-request") {
      answerKernel(msg);
      return;
    }
    if (!msg || msg.view !== id || msg.type !== "response") return;
    const waiter = msg.id === undefined ? undefined : pending.get(msg.id);
    if (!waiter || msg.id === undefined) return;
    pending.delete(msg.id);
    if (msg.error) waiter.reject(new Error(msg.error.message || "the kernel refused the request"));
    else waiter.resolve(msg.result || {});
  };
  model.on("msg:custom", onMessage);
  send({ type: "hello" });  // the kernel echoes it: its arrival gives onMessage the view (watchDetach)

  const bridge = new AppBridge(
    null,
    // the version is written once, in synapse_nb/_version.py; the kernel side sends it as a trait
    { name: "synapse_nb", version: model.get("host_version") || "unknown" },
    {
      openLinks: {},
      serverTools: {},
      serverResources: {},
      logging: {},
      updateModelContext: { text: {} },
      message: { text: {} },
      sandbox: { csp: model.get("csp") || {}, permissions: model.get("permissions") || {} },
    },
    { hostContext: hostContext(model, el) },
  );
  bridge.oncalltool = (params) => ask("tools/call", params);
  bridge.onreadresource = (params) => ask("resources/read", params);
  bridge.onmessage = (params) => ask("ui/message", params);
  bridge.onupdatemodelcontext = (params) => ask("ui/update-model-context", params);
  bridge.onrequestdisplaymode = (params) => ask("ui/request-display-mode", params);
  bridge.onloggingmessage = (params) => send({ type: "notification", method: "notifications/message", params });
  bridge.onopenlink = async ({ url }) => {
    let scheme = "";
    try {
      scheme = new URL(url).protocol;
    } catch (_err) {
      return { isError: true };
    }
    if (!LINK_SCHEMES.includes(scheme)) return { isError: true };
    window.open(url, "_blank", "noopener,noreferrer");
    send({ type: "notification", method: "ui/open-link", params: { url } });
    return {};
  };
  bridge.onsizechange = ({ height }) => {
    if (typeof height !== "number" || !(height > 0)) return;
    const px = Math.ceil(height);
    frame.style.height = `${px}px`;
    if (model.get("height") !== px) {
      model.set("height", px);
      model.save_changes();
    }
  };
  // The input goes once per load of the View's document: as soon as the kernel has it (a turn sets it when
  // the model's streamed arguments are whole, before the call runs), else with the result.
  let inputSent = false;
  const sendInput = () => {
    const input = model.get("tool_input");
    if (input && !inputSent) {
      inputSent = true;
      bridge.sendToolInput({ arguments: input });
    }
    return inputSent;
  };
  const sendTool = () => {
    if (!sendInput()) {
      const partial = model.get("tool_input_partial");
      if (partial && Object.keys(partial).length) bridge.sendToolInputPartial({ arguments: partial });
    }
    const cancelled = model.get("tool_cancelled");
    const result = model.get("tool_result");
    if (cancelled) bridge.sendToolCancelled({ reason: cancelled });
    else if (result && Array.isArray(result.content)) bridge.sendToolResult(/** @type {ToolResult} */ (result));
  };
  // The tools the View registered (the draft's Host->App tools/list), told to the kernel, which offers them to the
  // model and to Python; asked again when the View says its list changed. A View without the capability has none.
  const reportTools = async () => {
    const declared = bridge.getAppCapabilities();
    if (!declared || !declared.tools) return;
    try {
      const listed = await bridge.listTools({});
      send({ type: "notification", method: "ui/app-tools", params: { tools: listed.tools || [] } });
    } catch (err) {
      console.warn("synapse_nb app view: the View did not list its tools", err);
    }
  };
  bridge.setNotificationHandler("notifications/tools/list_changed", () => { reportTools(); });
  // The kernel calls one of the View's tools (a turn's model, or Python): the View answers through the bridge.
  /** @param {KernelMessage} msg */
  const answerKernel = async (msg) => {
    /** @type {Record<string, unknown>} */
    const reply = { type: "app-response", id: msg.id };
    try {
      if (!initialized) throw new Error("the View is not loaded in the page");
      if (msg.method === "tools/call") reply.result = await bridge.callTool(msg.params || {});
      else if (msg.method === "tools/list") reply.result = await bridge.listTools(msg.params || {});
      else throw new Error(`the View is not asked ${msg.method}`);
    } catch (err) {
      reply.error = { message: (err && /** @type {Error} */ (err).message) || String(err) };
    }
    send(reply);
  };
  // Every (re)load of the frame's document initializes again (a cell moved in the page reloads its iframe).
  bridge.oninitialized = () => {
    initialized = true;
    inputSent = false;
    el.dataset.initialized = "true";
    sendTool();
    reportTools();
  };
  const onResult = () => initialized && sendTool();
  const onInput = () => initialized && sendInput();
  const onPartial = () => {
    const partial = model.get("tool_input_partial");
    if (initialized && !inputSent && partial) bridge.sendToolInputPartial({ arguments: partial });
  };
  const onTheme = () => {
    if (initialized) bridge.sendHostContextChange({ theme: pageTheme(model), styles: pageStyles() });
  };
  model.on("change:tool_result", onResult);
  model.on("change:tool_cancelled", onResult);
  model.on("change:tool_input", onInput);
  model.on("change:tool_input_partial", onPartial);
  model.on("change:theme", onTheme);
  const themeWatch = new MutationObserver(onTheme);
  themeWatch.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light", "data-jp-theme-name"] });

  el.appendChild(frame);
  whenConnected(el, () => alive).then(async () => {
    // connect before the document loads, so the View's first ui/initialize is heard (the frame's
    // WindowProxy outlives the navigation to the srcdoc document)
    const view = /** @type {Window} */ (frame.contentWindow);  // a connected iframe has its window
    await bridge.connect(new PostMessageTransport(view, view));
    frame.srcdoc = withPolicy(await resourceHtml(model), model.get("csp_policy"));
  });

  return () => {
    alive = false;
    themeWatch.disconnect();
    model.off("msg:custom", onMessage);
    model.off("change:tool_result", onResult);
    model.off("change:tool_cancelled", onResult);
    model.off("change:tool_input", onInput);
    model.off("change:tool_input_partial", onPartial);
    model.off("change:theme", onTheme);
    for (const waiter of pending.values()) waiter.reject(new Error("the view was removed"));
    pending.clear();
    send({ type: "notification", method: "ui/resource-teardown", params: {} });
    const uri = model.get("resource_uri");
    if (!initialized || !frame.isConnected) {
      // The frame left the page with its output before it could be parked (the kernel's echo had not come, or
      // the frontend is not Lumino): the View's document is gone
      if (initialized) console.info(`synapse_nb app view: ${uri} was removed before ui/resource-teardown could reach it`);
      bridge.close().catch(() => {});
      if (parking) parking.remove();
      return;
    }
    // The view goes while its frame is still in the page (the kernel closed the widget, or the frame was parked
    // as its output was cleared): keep the View's document alive outside the output that is going away
    // (moveBefore moves an iframe without reloading it) until it has answered ui/resource-teardown, as the
    // spec asks.
    park();
    /** @param {boolean} answered */
    const done = (answered) => {
      console.info(`synapse_nb app view: ${uri} ${answered ? "answered" : "did not answer"} ui/resource-teardown`);
      bridge.close().catch(() => {});
      if (parking) parking.remove();
      else frame.remove();
    };
    bridge.teardownResource({}, { timeout: TEARDOWN_MS }).then(() => done(true), () => done(false));
  };
}

export default { render };
