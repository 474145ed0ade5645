// The ESM every AppView widget carries: a few hundred bytes that load the View's real code (the ext-apps
// host bridge with its dependencies, ~670 KB) from the one shared bundle model the kernel holds
// (AppViewBundle, referenced by the `bundle` trait), importing it once per page. Views therefore do not
// each sync and save their own copy: a notebook with several Views reloads and saves the bundle once.
const CACHE = Symbol.for("synapse_nb.app_view.bundles");

function modules() {
  if (!window[CACHE]) window[CACHE] = new Map();
  return window[CACHE];
}

async function importBundle(model) {
  const ref = model.get("bundle");
  if (typeof ref !== "string" || !ref.startsWith("IPY_MODEL_")) throw new Error("the View has no bundle model");
  const bundleModel = await model.widget_manager.get_model(ref.slice("IPY_MODEL_".length));
  const digest = bundleModel.get("digest");
  const cache = modules();
  if (!cache.has(digest)) {
    const url = URL.createObjectURL(new Blob([bundleModel.get("code")], { type: "text/javascript" }));
    const loading = import(/* webpackIgnore: true */ url).finally(() => URL.revokeObjectURL(url));
    loading.catch(() => cache.delete(digest));
    cache.set(digest, loading);
  }
  return cache.get(digest);
}

async function render({ model, el }) {
  const bundle = await importBundle(model);
  return bundle.default.render({ model, el });
}

export default { render };
