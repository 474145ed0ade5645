// @ts-check
// Builds the MCP Apps View widget's browser half into synapse_nb/notebook/apps/static (or --outdir=DIR):
// app_view.js (the ext-apps host bridge and its dependencies, bundled by esbuild), app_view_loader.js and
// saved_view.js (a View's saved copy),
// with what the bundle contains beside it: app_view.js.LEGAL.txt (the license comments esbuild lifts out of
// the bundled code) and THIRD_PARTY_NOTICES.txt (every bundled package's name, version, license and license
// text, from its package.json and LICENSE file in node_modules). Same inputs, same bytes.
import { build } from "esbuild";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const DEFAULT_OUTDIR = resolve(HERE, "..", "synapse_nb", "notebook", "apps", "static");
const BUNDLE = "app_view.js";

/** @param {string[]} args @returns {string} the output folder (`--outdir=DIR`, else the package's static/) */
function outdirOf(args) {
  const given = args.find((arg) => arg.startsWith("--outdir="));
  return given ? resolve(given.slice("--outdir=".length)) : DEFAULT_OUTDIR;
}

/**
 * The package folder an input of the bundle belongs to (`node_modules/@scope/name` or `node_modules/name`).
 * @param {string} input a path relative to js/, as esbuild's metafile names it
 * @returns {string | null}
 */
function packageDir(input) {
  const parts = input.split("/");
  const at = parts.lastIndexOf("node_modules");
  if (at < 0) return null;
  const length = parts[at + 1]?.startsWith("@") ? 3 : 2;
  return parts.slice(0, at + length).join("/");
}

/**
 * @typedef {{ name: string, version: string, license: string, text: string }} Notice
 * @param {string} dir a package folder relative to js/
 * @returns {Notice}
 */
function noticeOf(dir) {
  const meta = JSON.parse(readFileSync(join(HERE, dir, "package.json"), "utf8"));
  const files = readdirSync(join(HERE, dir)).filter((f) => /^(licen[cs]e|copying|notice)(\.|$)/i.test(f)).sort();
  const text = files.map((f) => readFileSync(join(HERE, dir, f), "utf8").trim()).join("\n\n");
  const license = typeof meta.license === "string" ? meta.license : (meta.license?.type ?? "UNKNOWN");
  return { name: meta.name, version: meta.version, license,
           text: text || `(the package ships no license file; its package.json says: ${license})` };
}

/** @param {Notice[]} notices @returns {string} */
function noticesText(notices) {
  const head = `Third-party software bundled in ${BUNDLE} (built by js/build.mjs from js/package-lock.json):\n`;
  const list = notices.map((n) => `  ${n.name} ${n.version} (${n.license})`).join("\n");
  const texts = notices.map((n) => `${"=".repeat(78)}\n${n.name} ${n.version} (${n.license})\n\n${n.text}\n`);
  return `${head}\n${list}\n\n${texts.join("\n")}`;
}

const outdir = outdirOf(process.argv.slice(2));
const result = await build({
  absWorkingDir: HERE,
  entryPoints: ["src/app_view.js", "src/app_view_loader.js"],
  bundle: true,
  format: "esm",
  minify: true,
  legalComments: "external",
  target: "es2020",
  outdir,
  metafile: true,
  logLevel: "warning",
});
// A View's saved copy (what a reopened notebook shows in its place): a classic script, inlined by the kernel into the
// snapshot output beside each View (apps/saved_copy.py); it bundles nothing but our own frame_prelude.js.
await build({
  absWorkingDir: HERE,
  entryPoints: ["src/saved_view.js"],
  bundle: true,
  format: "iife",
  minify: true,
  legalComments: "none",
  target: "es2020",
  outdir,
  logLevel: "warning",
});
const dirs = new Set();
for (const input of Object.keys(result.metafile.inputs)) {
  const dir = packageDir(input);
  if (dir) dirs.add(dir);
}
const notices = [...dirs].map(noticeOf).sort((a, b) => a.name.localeCompare(b.name, "en"));
writeFileSync(join(outdir, "THIRD_PARTY_NOTICES.txt"), noticesText(notices));
const legal = join(outdir, `${BUNDLE}.LEGAL.txt`);
if (!existsSync(legal)) writeFileSync(legal, "(no license comments in the bundled code; see THIRD_PARTY_NOTICES.txt)\n");
