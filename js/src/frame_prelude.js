// @ts-check
// What the host puts at the top of a View's document, after its Content-Security-Policy and before the View's
// own code (the frame is origin-less, so the host cannot reach into it later; this runs in it):
// - problems: a script, worker, style or connection the policy refused, and an error while the document loads,
//   are told to the host (which shows one line in the View's place or under it, and tells the kernel);
// - storage: `localStorage` (which throws in an origin-less frame) is a storage of this View alone, filled from
//   what the host saved for it and told to the host on every change (the host keeps it in the widget's state,
//   saved with the notebook); `sessionStorage` lives as long as the document;
// - theme: the document's canvas and text follow the notebook's theme (`color-scheme`, background and text
//   colour at zero specificity, so a View's own styles win), and follow its changes.
// Everything it sends is `{synapseFrame: {...}}`, which the host's JSON-RPC transport ignores.

/**
 * @typedef {{ scheme: "light" | "dark", background?: string, text?: string }} FrameTheme
 * @typedef {{ storage: Record<string, string>, theme: FrameTheme, quota: number }} FrameConfig
 */

// A View that never reports its size gets this much (the Full window button shows the rest); a View that
// reports one gets exactly that. The live View (app_view.js) and its saved copy (saved_view.js) alike.
export const DEFAULT_HEIGHT = 360;
// Characters of keys and values a View may keep in its storage (the browser's own is ~5 MB).
export const STORAGE_QUOTA = 2_000_000;

/**
 * Runs inside the View's frame (serialised with toString: it may use nothing from this module's scope).
 * @param {FrameConfig} config
 */
function inFrame(config) {
  /** @param {Record<string, unknown>} data */
  const post = (data) => window.parent.postMessage({ synapseFrame: data }, "*");
  let told = 0;
  /** @param {string} kind @param {string} text */
  const tell = (kind, text) => {
    if (told >= 5) return;  // one line is shown; a View in a loop of errors does not flood the kernel
    told += 1;
    post({ kind, text: String(text).slice(0, 300) });
  };
  document.addEventListener("securitypolicyviolation", (e) => {
    tell("blocked", `${e.effectiveDirective} ${e.blockedURI || "inline"}`);
  });
  window.addEventListener("error", (e) => {
    const target = /** @type {{ src?: string, href?: string } | null} */ (e.target);
    const source = target && target !== /** @type {unknown} */ (window) ? target.src || target.href : "";
    tell("error", e.message || (source ? `could not load ${source}` : "an error"));
  }, true);

  /** @param {Record<string, string>} initial @param {((items: Record<string, string>) => void) | null} saved */
  const storage = (initial, saved) => {
    const items = new Map(Object.entries(initial || {}));
    let scheduled = false;
    const changed = () => {
      if (!saved || scheduled) return;
      scheduled = true;
      queueMicrotask(() => {
        scheduled = false;
        saved(Object.fromEntries(items));
      });
    };
    const size = () => [...items].reduce((n, [k, v]) => n + k.length + v.length, 0);
    return {
      get length() { return items.size; },
      /** @param {number} i */
      key(i) { return [...items.keys()][i] ?? null; },
      /** @param {string} key */
      getItem(key) { return items.has(String(key)) ? /** @type {string} */ (items.get(String(key))) : null; },
      /** @param {string} key @param {unknown} value */
      setItem(key, value) {
        const k = String(key), v = String(value), before = items.get(k);
        items.set(k, v);
        if (size() > config.quota) {
          if (before === undefined) items.delete(k);
          else items.set(k, before);
          throw new DOMException("this View's storage is full", "QuotaExceededError");
        }
        if (before !== v) changed();
      },
      /** @param {string} key */
      removeItem(key) { if (items.delete(String(key))) changed(); },
      clear() { if (items.size) { items.clear(); changed(); } },
    };
  };
  const local = storage(config.storage, (items) => post({ kind: "storage", items }));
  Object.defineProperty(window, "localStorage", { value: local, configurable: true });
  Object.defineProperty(window, "sessionStorage", { value: storage({}, null), configurable: true });

  const style = document.createElement("style");
  /** @param {FrameTheme} theme */
  const paint = (theme) => {
    const rules = [`color-scheme: ${theme.scheme === "dark" ? "dark" : "light"}`];
    if (theme.background) rules.push(`background-color: ${theme.background}`);
    if (theme.text) rules.push(`color: ${theme.text}`);
    style.textContent = `:where(html) { ${rules.join("; ")} }`;
  };
  paint(config.theme);
  document.head ? document.head.prepend(style) : document.documentElement.prepend(style);
  window.addEventListener("message", (e) => {
    const data = e.source === window.parent ? e.data : null;
    if (!data || data.method !== "ui/notifications/host-context-changed" || !data.params) return;
    const { theme, styles } = data.params;
    if (theme !== "light" && theme !== "dark") return;
    const variables = (styles && styles.variables) || {};
    paint({ scheme: theme, background: variables["--color-background-primary"],
            text: variables["--color-text-primary"] });
  });
}

/**
 * The prelude as the `<script>` the host puts in the View's document.
 * @param {FrameConfig} config
 * @returns {string}
 */
export function preludeScript(config) {
  // `<` escaped, so no value can end the script element early
  const json = JSON.stringify(config).replace(/</g, "\\u003c");
  return `<script>(${inFrame.toString()})(${json});</script>`;
}

// The resource's HTML with the host's Content-Security-Policy as its first element (after a doctype, which
// must stay first), so that it governs everything the document loads, then the host's prelude (problems,
// storage, theme: above) and what else the host puts before the View's own code.
/** @param {string} html @param {string} policy @param {string} prelude @returns {string} */
export function withPolicy(html, policy, prelude) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${policy.replace(/"/g, "&quot;")}">`;
  const doctype = /^\s*<!doctype[^>]*>/i.exec(html);
  return doctype ? doctype[0] + meta + prelude + html.slice(doctype[0].length) : meta + prelude + html;
}
