// Review queue: proposed edges (link prediction, research) with their evidence; accept / reject /
// undo, keyboard shortcuts, batch by filter. Needs the predictions API (404 -> not available).
import { get } from "../api.js";
import { append, h, message } from "../dom.js";
import { routeMissing, unavailable } from "../unavailable.js";

export async function render(root, route) {
  append(root, h("h1", {}, "Review queue"));
  const kgs = await get("kg");
  const dbId = route.args[0] || kgs[0]?.db_id;
  if (!dbId) { append(root, message("No KGs yet.", "bad")); return; }
  try { await get(`kg/${encodeURIComponent(dbId)}/predictions`, { status: "pending", limit: 1 }); }
  catch (err) { if (routeMissing(err)) { append(root, unavailable("Review queue", "/api/kg/{db_id}/predictions")); return; } throw err; }
  append(root, message("The predictions API answered, but this studio version does not show it yet."));
}
