// @ts-check
// The ESM every AppView widget carries: a few hundred bytes that load the View's real code (the ext-apps
// host bridge with its dependencies, ~670 KB) from the one shared bundle model the kernel holds
// (AppViewBundle, referenced by the `bundle` trait), importing it once per page. Views therefore do not
// each sync and save their own copy: a notebook with several Views reloads and saves the bundle once.
const CACHE = Symbol.for("synapse_nb.app_view.bundles");

/**
 * @typedef {import("@anywidget/types").AnyModel<{ bundle: string }>} LoaderModel
 * @typedef {{ default: { render: (props: { model: any, el: HTMLElement }) => unknown } }} ViewModule
 * @typedef {Map<string, Promise<ViewModule>>} BundleCache
 */

/** @returns {BundleCache} the page's bundles by digest, shared by every View (and every copy of this loader) */
function modules() {
  const page = /** @type {{ [CACHE]?: BundleCache }} */ (/** @type {unknown} */ (window));
  if (!page[CACHE]) page[CACHE] = new Map();
  return page[CACHE];
}

/** @param {LoaderModel} model @returns {Promise<ViewModule>} */
async function importBundle(model) {
  const ref = model.get("bundle");
  if (typeof ref !== "string" || !ref.startsWith("IPY_MODEL_")) throw new Error("the View has no bundle model");
  const bundleModel = await model.widget_manager.get_model(ref.slice("IPY_MODEL_".length));
  const digest = bundleModel.get("digest");
  const cache = modules();
  let loading = cache.get(digest);
  if (!loading) {
    const url = URL.createObjectURL(new Blob([bundleModel.get("code")], { type: "text/javascript" }));
    loading = import(/* webpackIgnore: true */ url).finally(() => URL.revokeObjectURL(url));
    loading.catch(() => cache.delete(digest));
    cache.set(digest, loading);
  }
  return loading;
}

/** @param {{ model: LoaderModel, el: HTMLElement }} props */
async function render({ model, el }) {
  const bundle = await importBundle(model);
  return bundle.default.render({ model, el });
}

export default { render };
