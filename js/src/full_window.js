// @ts-check
// A View's fullscreen display mode: the same live frame over the whole window (a layer on the page's body, with a
// title and a Close button; Escape closes it too), and back in its cell output when closed. The frame is moved
// with `moveBefore`, which keeps its document (a plain move would reload the View and lose what the user did);
// where the browser lacks it, the frame's own output box is laid over the window instead.

/** @typedef {HTMLElement & { moveBefore?: (node: Node, child: Node | null) => void }} MovableParent */

const LAYER_STYLE = [
  "position:fixed", "inset:0", "z-index:10000", "display:flex", "flex-direction:column",
  "background:var(--jp-layout-color0, Canvas)", "color:var(--jp-content-font-color1, CanvasText)",
].join(";");
const BAR_STYLE = [
  "display:flex", "align-items:center", "gap:8px", "padding:4px 8px", "font:13px var(--jp-ui-font-family, sans-serif)",
  "border-bottom:1px solid var(--jp-border-color2, #ccc)",
].join(";");

export class FullWindow {
  /**
   * @param {HTMLIFrameElement} frame the View's frame
   * @param {HTMLElement} home the output box the frame lives in inline (changed when another view adopts it)
   * @param {string} title what the layer's bar says
   * @param {() => void} onClosed called when the user closes it (not when `close` is called)
   */
  constructor(frame, home, title, onClosed) {
    this.frame = frame;
    this.home = home;
    this.title = title;
    this.onClosed = onClosed;
    /** @type {HTMLElement | null} */
    this.layer = null;
    this.inlineHeight = "";
    this.onKey = (/** @type {KeyboardEvent} */ e) => {
      if (e.key === "Escape" && this.layer) {
        this.close();
        this.onClosed();
      }
    };
  }

  /** @returns {boolean} */
  get open() {
    return this.layer !== null;
  }

  /** @returns {{ width: number, height: number }} the size the View gets over the window */
  size() {
    const box = this.frame.getBoundingClientRect();
    return { width: Math.round(box.width), height: Math.round(box.height) };
  }

  show() {
    if (this.layer) return;
    const layer = document.createElement("div");
    layer.className = "synapse-app-fullwindow";
    layer.style.cssText = LAYER_STYLE;
    const bar = document.createElement("div");
    bar.style.cssText = BAR_STYLE;
    const name = document.createElement("span");
    name.textContent = this.title;
    name.style.flex = "1";
    const close = document.createElement("button");
    close.type = "button";
    close.textContent = "Close";
    close.className = "synapse-app-fullwindow-close jp-Button jp-mod-styled";
    close.onclick = () => {
      this.close();
      this.onClosed();
    };
    bar.append(name, close);
    layer.appendChild(bar);
    this.inlineHeight = this.frame.style.height;
    const body = /** @type {MovableParent} */ (document.body);
    if (typeof body.moveBefore === "function") {
      body.appendChild(layer);
      /** @type {MovableParent} */ (layer).moveBefore?.(this.frame, null);
      this.frame.style.flex = "1";
      this.frame.style.height = "auto";
    } else {
      // no moveBefore: the output box itself goes over the window, the frame staying where it is
      this.home.style.cssText += `;${LAYER_STYLE}`;
      this.home.prepend(bar);
      this.frame.style.height = "calc(100vh - 40px)";
      layer.remove();
      this.layer = bar;
      document.addEventListener("keydown", this.onKey);
      close.focus();
      return;
    }
    this.layer = layer;
    document.addEventListener("keydown", this.onKey);
    close.focus();  // the page has the keyboard (a click in the View gave it to the frame): Escape closes
  }

  close() {
    if (!this.layer) return;
    document.removeEventListener("keydown", this.onKey);
    const home = /** @type {MovableParent} */ (this.home);
    if (this.layer.parentNode === this.home) {  // the fallback: the box goes back into the page
      this.layer.remove();
      for (const prop of ["position", "inset", "z-index", "display", "flex-direction", "background", "color"]) {
        this.home.style.removeProperty(prop);
      }
    } else {
      home.moveBefore?.(this.frame, home.firstChild);
      this.layer.remove();
    }
    this.frame.style.flex = "";
    this.frame.style.height = this.inlineHeight;
    this.layer = null;
  }
}
