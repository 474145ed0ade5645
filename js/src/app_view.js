// @ts-check
// The browser half of synapse_nb's AppView widget: an MCP Apps View in a sandboxed iframe, spoken to by the
// official host bridge (AppBridge from @modelcontextprotocol/ext-apps). Every request the View makes goes to
// the kernel through the widget's comm, tagged with this view's id so that the answer reaches the View that
// asked; links open here, in the browser; the frame follows the View's size and JupyterLab's theme.
import { AppBridge, PostMessageTransport, buildAllowAttribute } from "@modelcontextprotocol/ext-apps/app-bridge";
import { DEFAULT_HEIGHT, STORAGE_QUOTA, preludeScript, withPolicy } from "./frame_prelude.js";
import { FullWindow } from "./full_window.js";

/**
 * The AppView widget's synced traits (synapse_nb/notebook/apps/view.py), as the browser reads them.
 * @typedef {{
 *   server: string, tool: Partial<Tool>, resource_uri: string, html: string,
 *   page: string, bundle: string, csp: Record<string, string[]>, csp_policy: string,
 *   permissions: Record<string, {}>, prefers_border: boolean, tool_input: Record<string, unknown> | null,
 *   tool_input_partial: Record<string, unknown>, tool_result: Partial<ToolResult>, tool_cancelled: string,
 *   theme: string, display_mode: "inline" | "fullscreen" | "pip", height: number, host_version: string,
 *   storage: Record<string, string>, instance: string,
 * }} ViewTraits
 * @typedef {import("@anywidget/types").AnyModel<ViewTraits>} ViewModel
 * @typedef {import("@modelcontextprotocol/ext-apps/app-bridge").McpUiHostContext} HostContext
 * @typedef {import("@modelcontextprotocol/ext-apps/app-bridge").McpUiStyles} Styles
 * @typedef {Parameters<AppBridge["sendToolResult"]>[0]} ToolResult
 * @typedef {NonNullable<HostContext["toolInfo"]>["tool"]} Tool
 * @typedef {{ resolve: (result: any) => void, reject: (error: Error) => void, received: boolean }} Waiter
 * @typedef {{ type: string, view?: string, id?: number, result?: any, error?: { message?: string },
 *   method?: string, params?: any }} KernelMessage
 * @typedef {{ park: () => void, unpark: () => void }} Parking
 * @typedef {{ type: string }} LuminoMessage
 * @typedef {{ processMessage: (msg: LuminoMessage) => void, synapseDetach?: Parking }} LuminoWidget
 * @typedef {{ luminoWidget?: LuminoWidget, pWidget?: LuminoWidget }} WidgetView
 * @typedef {HTMLElement & { moveBefore?: (node: Node, child: Node | null) => void }} MovableParent
 * @typedef {{ kind?: string, text?: string, items?: Record<string, string> }} FrameReport
 */

const TEARDOWN_MS = 1000;
// A request the kernel has not received after this long waits behind a running cell: the bar says so.
const WAITING_MS = 400;
// A View whose document has not initialized after this long is said not to have started (it may yet).
const START_MS = 30_000;
const NOT_STARTED = "the view did not start";
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
    displayMode: "inline",
    availableDisplayModes: ["inline", "fullscreen"],
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

/** @param {ViewModel} model @returns {import("./frame_prelude.js").FrameTheme} */
function frameTheme(model) {
  const variables = /** @type {Record<string, string>} */ (pageStyles().variables);
  return { scheme: pageTheme(model), background: variables["--color-background-primary"],
           text: variables["--color-text-primary"] };
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

// Views whose output went away with their document still alive (parked), by their widget's `instance`, for a
// moment: a view of the same widget rendered then takes the live document over (adopt) instead of loading the
// View again. JupyterLab shows a widget output again that way when a turn ends (its live outputs become final
// ones) or a cell is moved, and the user's work in the View (sliders moved, a page turned) stays.
/** @type {Map<string, (model: ViewModel, el: HTMLElement) => () => void>} */
const RELEASED = new Map();
const ADOPT_MS = 1500;

/** @param {{ model: ViewModel, el: HTMLElement }} props @returns {() => void} the cleanup */
function render({ model, el }) {
  const key = model.get("instance");
  const adopt = key ? RELEASED.get(key) : undefined;
  if (key && adopt) {
    RELEASED.delete(key);
    return adopt(model, el);
  }
  return open(model, el);
}

/** @param {ViewModel} model @param {HTMLElement} el @returns {() => void} the cleanup */
function open(model, el) {
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
  frame.style.colorScheme = pageTheme(model);  // the View's prefers-color-scheme follows the notebook's theme

  // Under the frame, one line: a problem of the View (refused by its policy, failed to load), or a request
  // waiting for a busy kernel; and the Full window button (a View that never says its size is cut at the
  // default height; and any View may be wanted bigger).
  const bar = document.createElement("div");
  bar.className = "synapse-app-bar";
  bar.style.cssText = "display:flex;align-items:center;gap:8px;min-height:20px;"
    + "font:12px var(--jp-ui-font-family, sans-serif);color:var(--jp-ui-font-color2, #616161)";
  const status = document.createElement("span");
  status.className = "synapse-app-status";
  status.style.flex = "1";
  const expand = document.createElement("button");
  expand.type = "button";
  expand.className = "synapse-app-expand";
  expand.textContent = "Full window";
  expand.title = "Show this view over the whole window (Escape or Close brings it back)";
  expand.style.cssText = "font:inherit;color:inherit;background:none;border:0;cursor:pointer;text-decoration:underline";
  bar.append(status, expand);
  /** @type {string} */
  let problem = "";
  /** @type {Set<string>} */
  const toldProblems = new Set();
  let waiting = false;
  const showStatus = () => {
    status.textContent = problem || (waiting
      ? "waiting: a cell is running; the view's request goes to the kernel when it is free" : "");
    status.className = problem ? "synapse-app-status synapse-app-problem" : "synapse-app-status";
    status.style.color = problem ? "var(--jp-error-color1, #c62828)" : "";
  };

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
      pending.set(n, { resolve, reject, received: false });
      send({ type: "request", id: n, method, params: params || {} });
      setTimeout(() => {
        const waiter = pending.get(n);
        if (alive && waiter && !waiter.received) {
          waiting = true;
          showStatus();
        }
      }, WAITING_MS);
    });
  // The kernel said it has a request (or answered one): is any still unread by it?
  const recheckWaiting = () => {
    const still = [...pending.values()].some((w) => !w.received);
    if (still !== waiting && !still) {
      waiting = false;
      showStatus();
    }
  };
  /** @param {string} text */
  const sayProblem = (text) => {
    problem = text;
    showStatus();
    if (!toldProblems.has(text)) {
      toldProblems.add(text);
      send({ type: "notification", method: "synapse/view-problem", params: { text } });
    }
  };
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
    /** @type {MovableParent} */ (el).moveBefore?.(frame, el.firstChild);
  };
  /** @this {WidgetView | undefined} @param {KernelMessage | null} msg */
  const onMessage = function (msg) {
    if (msg && msg.view === id && msg.type === "hello") {
      if (watchDetach(this, park, unpark)) el.dataset.watched = "true";
      return;
    }
    if (msg && msg.view === id && msg.type === "received") {
      const waiter = msg.id === undefined ? undefined : pending.get(msg.id);
      if (waiter) waiter.received = true;
      recheckWaiting();
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
    recheckWaiting();
    if (msg.error) waiter.reject(new Error(msg.error.message || "the kernel refused the request"));
    else waiter.resolve(msg.result || {});
  };

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
      downloadFile: {},
      sandbox: { csp: model.get("csp") || {}, permissions: model.get("permissions") || {} },
    },
    { hostContext: hostContext(model, el) },
  );
  bridge.oncalltool = (params) => ask("tools/call", params);
  bridge.onreadresource = (params) => ask("resources/read", params);
  bridge.onmessage = (params) => ask("ui/message", params);
  bridge.onupdatemodelcontext = (params) => ask("ui/update-model-context", params);
  /** @type {"inline" | "fullscreen"} */
  let mode = "inline";
  /** @param {"inline" | "fullscreen"} next */
  const modeIs = (next) => {
    if (next === mode) return;
    mode = next;
    el.dataset.displayMode = next;
    const { width, height } = full.open ? full.size() : { width: el.clientWidth, height: 0 };
    if (initialized) {
      bridge.sendHostContextChange({
        displayMode: next,
        containerDimensions: full.open ? { width, height } : { maxWidth: Math.max(el.clientWidth, 320) },
      });
    }
  };
  const full = new FullWindow(frame, el, `${model.get("server")}: ${model.get("resource_uri")}`, () => modeIs("inline"));
  expand.onclick = () => {
    full.show();
    modeIs("fullscreen");
  };
  // Granted here (the page is where the View is shown): fullscreen, if the View declared it; inline; never
  // picture-in-picture (a notebook has no floating player). The kernel records what was asked and granted.
  bridge.onrequestdisplaymode = async ({ mode: asked }) => {
    const declared = bridge.getAppCapabilities()?.availableDisplayModes;  // never a mode it did not declare, if set
    if (asked === "fullscreen" && (!declared || declared.includes("fullscreen"))) {
      full.show();
      modeIs("fullscreen");
    } else if (asked === "inline") {
      full.close();
      modeIs("inline");
    }
    send({ type: "notification", method: "ui/request-display-mode", params: { mode: asked, granted: mode } });
    return { mode };
  };
  bridge.ondownloadfile = (params) => ask("ui/download-file", params);
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
    if (problem.startsWith(NOT_STARTED)) {
      problem = "";
      showStatus();
    }
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
    frame.style.colorScheme = pageTheme(model);
    if (initialized) bridge.sendHostContextChange({ theme: pageTheme(model), styles: pageStyles() });
  };
  // The model's listeners, per view of it (an adopted document listens to the new view's model)
  /** @type {Array<[string, (...args: any[]) => void]>} */
  const listeners = [
    ["msg:custom", onMessage], ["change:tool_result", onResult], ["change:tool_cancelled", onResult],
    ["change:tool_input", onInput], ["change:tool_input_partial", onPartial], ["change:theme", onTheme],
  ];
  const listen = () => {
    for (const [event, listener] of listeners) model.on(event, listener);
    send({ type: "hello" });  // the kernel echoes it: its arrival gives onMessage the view (watchDetach)
  };
  const unlisten = () => {
    for (const [event, listener] of listeners) model.off(event, listener);
  };
  listen();
  const themeWatch = new MutationObserver(onTheme);
  themeWatch.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light", "data-jp-theme-name"] });

  // What the prelude in the frame reports (frame_prelude.js): problems, and the View's storage.
  /** @param {MessageEvent} e */
  const onFrame = (e) => {
    if (e.source !== frame.contentWindow || !e.data || typeof e.data.synapseFrame !== "object") return;
    const report = /** @type {FrameReport} */ (e.data.synapseFrame);
    if (report.kind === "storage" && report.items && typeof report.items === "object") {
      model.set("storage", report.items);
      model.save_changes();
    } else if (report.kind === "blocked") {
      sayProblem(`the view's security policy blocked ${report.text} (the server declares what a View may load in _meta.ui.csp)`);
    } else if (report.kind === "error" && !initialized) {
      sayProblem(`the view failed while loading: ${report.text}`);
    }
  };
  window.addEventListener("message", onFrame);
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let startTimer;

  el.append(frame, bar);
  whenConnected(el, () => alive).then(async () => {
    // connect before the document loads, so the View's first ui/initialize is heard (the frame's
    // WindowProxy outlives the navigation to the srcdoc document)
    const view = /** @type {Window} */ (frame.contentWindow);  // a connected iframe has its window
    await bridge.connect(new PostMessageTransport(view, view));
    const prelude = preludeScript({ storage: model.get("storage") || {}, theme: frameTheme(model), quota: STORAGE_QUOTA });
    frame.srcdoc = withPolicy(await resourceHtml(model), model.get("csp_policy"), prelude);
    startTimer = setTimeout(() => {
      if (alive && !initialized) sayProblem(`${NOT_STARTED} in ${START_MS / 1000} s (it sent no ui/initialize)`);
    }, START_MS);
  });

  /** @param {ViewModel} nextModel @param {HTMLElement} nextEl @returns {() => void} */
  const adopt = (nextModel, nextEl) => {
    model = nextModel;
    el = nextEl;
    full.home = el;
    el.classList.add("synapse-app-view");
    el.dataset.initialized = "true";
    el.dataset.adopted = "true";
    el.append(bar);
    listen();
    whenConnected(el, () => alive).then(() => {
      if (frame.parentNode !== el) /** @type {MovableParent} */ (el).moveBefore?.(frame, el.firstChild);
    });
    return release;
  };
  // The view goes: a document still alive (its frame parked as its output was cleared, or still in the page) waits
  // ADOPT_MS for a view of the same widget to take it over; then, or at once when it cannot wait, it is torn down.
  const release = () => {
    unlisten();
    const key = model.get("instance");
    const movable = typeof /** @type {MovableParent} */ (document.body).moveBefore === "function";
    if (alive && initialized && key && movable && frame.isConnected && !RELEASED.has(key)) {
      full.close();
      park();
      bar.remove();
      const timer = setTimeout(() => {
        RELEASED.delete(key);
        tearDown();
      }, ADOPT_MS);
      RELEASED.set(key, (nextModel, nextEl) => {
        clearTimeout(timer);
        return adopt(nextModel, nextEl);
      });
      return;
    }
    tearDown();
  };
  const tearDown = () => {
    alive = false;
    clearTimeout(startTimer);
    window.removeEventListener("message", onFrame);
    full.close();
    themeWatch.disconnect();
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
  return release;
}

export default { render };
