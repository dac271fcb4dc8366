// Research runs (spec/004): the runs of this server's research API, if it has one.
import { get } from "../api.js";
import { append, h, message, table, fmt } from "../dom.js";
import { routeMissing, unavailable } from "../unavailable.js";

export async function render(root) {
  append(root, h("h1", {}, "Research runs"));
  let runs;
  try { runs = await get("research/runs"); }
  catch (err) { if (routeMissing(err)) { append(root, unavailable("Research runs", "/api/research")); return; } throw err; }
  const items = Array.isArray(runs) ? runs : runs.runs || [];
  append(root, items.length ? table(["run", "status", "started"], items.map((r) => [String(r.id ?? r.run_id ?? ""), String(r.status ?? ""), String(r.started_at ?? r.created_at ?? "")]))
    : message("No research runs yet."));
}
