// The studio's router: "#/<view>/<arg>?<params>" -> views/<view>.js render(root, route).
// A view that throws shows its message in the page (never a blank screen).
import { append, clear, h } from "./dom.js";

const VIEWS = ["workspace", "explore", "search", "methods", "experts", "review", "learning", "memory", "eval", "research", "embeddings"];
const root = document.getElementById("view");
let current = 0;

export function parseRoute(hash) {
  const [path, query = ""] = hash.replace(/^#\/?/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { view: parts[0] || "workspace", args: parts.slice(1), params: new URLSearchParams(query) };
}

export function showError(err, where = root) {
  const kind = err && err.kind ? `${err.kind}: ` : "";
  const text = err && err.message ? err.message : String(err);
  append(where, h("div", { class: "card bad", role: "alert", "data-error": err?.kind || "Error" }, kind + text));
}

async function route() {
  const r = parseRoute(location.hash);
  const token = ++current;
  delete root.dataset.ready;
  for (const a of document.querySelectorAll("#nav a[data-view]")) a.classList.toggle("active", a.dataset.view === r.view);
  if (!VIEWS.includes(r.view)) {
    clear(root, h("div", { class: "card bad", role: "alert" }, `No view '${r.view}'. Pick one above.`));
    root.dataset.ready = "none";
    return;
  }
  clear(root, h("p", { class: "muted" }, "Loading…"));
  try {
    const module = await import(`./views/${r.view}.js`);
    if (token !== current) return;
    clear(root);
    await module.render(root, r);
  } catch (err) {
    if (token !== current) return;
    console.warn(err);
    showError(err);
  }
  if (token === current) root.dataset.ready = r.view;
}

window.addEventListener("hashchange", route);
window.addEventListener("unhandledrejection", (e) => { showError(e.reason); e.preventDefault(); });
route();
