// @ts-check
// A View's saved copy: what a notebook opened again later shows in a View's place, where the kernel that drew the
// live View is gone (JupyterLab and Notebook 7, a trusted notebook, with no widget state saved). The snapshot
// output beside the View's widget (apps/saved_copy.py) holds the View's HTML, its policy, the call's input and
// result, its last height and its storage as JSON, this script after it, and the text fallback. While the widget
// lives the snapshot is hidden (widgets/_snapshot.py SWAP_STYLE) and this script does nothing; once the widget
// shows only its error ("model not found"), it puts the View in a sandboxed, origin-less frame as the live host does (the same policy and
// prelude: the View's storage as the user left it, the theme), with a host in the frame that answers
// `ui/initialize`, gives the View its call's input and result, answers the requests the live View made as the
// kernel answered them then (a PDF viewer reading its document), and every other one with an error saying the copy
// is saved (its tools need the kernel: run the cell). The View reaches nothing of the page.

import { DEFAULT_HEIGHT, STORAGE_QUOTA, preludeScript, withPolicy } from "./frame_prelude.js";

/**
 * @typedef {{ html: string, policy: string, storage: Record<string, string>, toolInput: Record<string, unknown>,
 *   toolResult: Record<string, unknown>, answers: Answer[], height: number, hostVersion: string, border: boolean,
 *   uri: string }} Saved
 * @typedef {{ method: string, params: Record<string, unknown>, result?: unknown, repeated?: boolean }} Answer
 * @typedef {{ scheme: "light" | "dark", toolInput: Record<string, unknown>, toolResult: Record<string, unknown>,
 *   answers: Answer[], hostVersion: string }} HostConfig
 */

const SAVED = "a saved copy of this view (the kernel that drew it is gone): run its cell to use it";

/**
 * Runs inside the View's frame before the View's code (serialised with toString: it may use nothing from this
 * module's scope): `window.parent` becomes a port whose `postMessage` this host answers.
 * @param {HostConfig} config
 */
function savedHost(config) {
  const page = window.parent;  // the notebook's page: it tells the copy when the theme changes, nothing else
  const channel = new MessageChannel();
  const host = channel.port1;
  /** @param {unknown} data */
  const deliver = (data) => {
    setTimeout(() => window.dispatchEvent(new MessageEvent("message", { data, source: host })), 0);
  };
  const refused = "this is a saved copy of the view: run its cell to use it";
  // the kernel's answers to the live View's requests, by request (its `_meta`, progress tokens, left out)
  /** @param {unknown} value @returns {string} */
  const stable = (value) => {
    if (Array.isArray(value)) return `[${value.map(stable).join(",")}]`;
    if (value && typeof value === "object") {
      const entries = Object.entries(value).filter(([k]) => k !== "_meta").sort(([a], [b]) => (a < b ? -1 : 1));
      return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stable(v)}`).join(",")}}`;
    }
    return JSON.stringify(value);
  };
  // (a request the live View made again, a poll, is not answered from then: its answer was of its moment)
  const known = new Map(config.answers.filter((a) => !a.repeated)
    .map((a) => [`${a.method} ${stable(a.params)}`, a.result]));
  /** @param {any} message */
  const answer = (message) => {
    if (!message || typeof message !== "object" || message.synapseFrame || message.jsonrpc !== "2.0") return;
    const { id, method, params } = message;
    if (method === "ui/initialize" && id !== undefined) {
      deliver({ jsonrpc: "2.0", id, result: {
        protocolVersion: (params && params.protocolVersion) || "2026-01-26",
        hostInfo: { name: "synapse_nb (saved copy)", version: config.hostVersion },
        hostCapabilities: {},
        hostContext: { theme: config.scheme, displayMode: "inline", availableDisplayModes: ["inline"],
                       platform: "web", userAgent: "synapse_nb" },
      } });
    } else if (method === "ui/notifications/initialized") {
      deliver({ jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: config.toolInput } });
      if (config.toolResult && Array.isArray(config.toolResult.content)) {
        deliver({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: config.toolResult });
      }
    } else if (id !== undefined && known.has(`${method} ${stable(params || {})}`)) {
      deliver({ jsonrpc: "2.0", id, result: known.get(`${method} ${stable(params || {})}`) });
    } else if (id !== undefined && typeof method === "string") {
      deliver({ jsonrpc: "2.0", id, error: { code: -32000, message: refused } });
    }
  };
  window.addEventListener("message", (e) => {  // the page's theme, as the live host's host-context-changed
    const theme = e.source === page && e.data && e.data.synapseSavedTheme;
    if (!theme) return;
    e.stopImmediatePropagation();
    deliver({ jsonrpc: "2.0", method: "ui/notifications/host-context-changed", params: theme });
  }, true);
  Object.defineProperty(host, "postMessage", { value: answer });
  Object.defineProperty(window, "parent", { value: host, configurable: true });
}

/** @param {string} name @returns {string} */
function pageVariable(name) {
  return getComputedStyle(document.body).getPropertyValue(name).trim();
}

/** @returns {import("./frame_prelude.js").FrameTheme} the notebook's theme now */
function pageTheme() {
  return { scheme: document.body.dataset.jpThemeLight === "false" ? "dark" : "light",
           background: pageVariable("--jp-layout-color0") || undefined,
           text: pageVariable("--jp-content-font-color1") || undefined };
}

/** @param {HTMLElement} box @param {Saved} saved */
function show(box, saved) {
  const theme = pageTheme();
  const scheme = theme.scheme;
  const prelude = preludeScript({ storage: saved.storage || {}, theme, quota: STORAGE_QUOTA });
  const hostConfig = { scheme, toolInput: saved.toolInput || {}, toolResult: saved.toolResult || {},
                       answers: saved.answers || [], hostVersion: saved.hostVersion };
  const hostScript = `<script>(${savedHost.toString()})(${JSON.stringify(hostConfig).replace(/</g, "\\u003c")});</script>`;
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts allow-forms");
  frame.setAttribute("title", `MCP App ${saved.uri} (saved copy)`);
  frame.dataset.resourceUri = saved.uri;
  frame.dataset.savedCopy = "true";
  frame.style.cssText = `width:100%;display:block;height:${saved.height || DEFAULT_HEIGHT}px;`
    + `border:${saved.border ? "1px solid var(--jp-border-color2)" : "0"};color-scheme:${scheme}`;
  frame.srcdoc = withPolicy(saved.html, saved.policy, hostScript + prelude);
  const note = document.createElement("div");
  note.className = "synapse-app-saved";
  note.textContent = SAVED;
  note.style.cssText = "font-size:var(--jp-ui-font-size0,11px);color:var(--jp-ui-font-color2,#757575);margin:2px 0";
  const fallback = box.querySelector("pre");
  if (fallback) fallback.style.display = "none";
  box.append(frame, note);
  // the theme followed, as the live View follows it (the frame's prelude repaints an unstyled View); the page's
  // colours are read once the new theme's stylesheet applies (it loads after the body says which theme it is),
  // a second at most
  let shown = theme;
  /** @param {number} frames */
  const tell = (frames) => {
    const now = pageTheme();
    if (now.background === shown.background && frames > 0) {
      requestAnimationFrame(() => tell(frames - 1));
      return;
    }
    shown = now;
    frame.style.colorScheme = now.scheme;
    const variables = { "--color-background-primary": now.background, "--color-text-primary": now.text };
    frame.contentWindow?.postMessage({ synapseSavedTheme: { theme: now.scheme, styles: { variables } } }, "*");
  };
  const told = new MutationObserver(() => {
    if (!frame.isConnected) return told.disconnect();
    tell(60);
  });
  told.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light", "data-jp-theme-name"] });
}

/**
 * What became of the live View's widget, in the output after the snapshot's: "live" (its view shows: the copy is not
 * wanted), "gone" (the widget renderer shows only its error, "model not found": a notebook opened again in a new
 * kernel), or "pending" (not rendered yet). Outside JupyterLab's output area (Notebook 7 has the same), where
 * nothing says whether the live View shows beside it, the copy stays off: "live".
 * @param {HTMLElement} box @returns {"live" | "gone" | "pending"}
 */
function widgetState(box) {
  const child = box.closest(".jp-OutputArea-child");
  if (!child) return "live";
  const next = child.nextElementSibling;
  if (!next) return "pending";
  const out = next.querySelector(".jp-OutputArea-output");
  if (!out) return "pending";
  if (out.classList.contains("jupyter-widgets")) return "gone";  // the renderer's error text alone
  return out.querySelector(".jupyter-widgets") ? "live" : "pending";
}

const script = /** @type {HTMLScriptElement | null} */ (document.currentScript);
const box = script && script.parentElement;
const data = box && box.querySelector('script[type="application/json"]');
if (box && data) {
  /** @type {Saved} */
  const saved = JSON.parse(data.textContent || "{}");
  /** @type {MutationObserver | null} */
  let watching = null;
  // decided once the widget after it rendered: a live View's page is never loaded twice
  const decide = () => {
    const state = widgetState(box);
    if (state === "pending") return false;
    if (watching) watching.disconnect();
    if (state === "gone") show(box, saved);
    return true;
  };
  if (!decide()) {
    const area = box.closest(".jp-OutputArea") || document.body;
    watching = new MutationObserver(() => { decide(); });
    watching.observe(area, { childList: true, subtree: true, attributes: true, attributeFilter: ["class"] });
  }
}
