// "Not available on this server": a view whose API answers 404 for the route itself (not for an
// unknown KG or item) says so instead of showing an empty or fake screen.
import { h } from "./dom.js";

/** True when ``err`` is the 404 of a route this server does not have. */
export function routeMissing(err) {
  return err?.status === 404 && /^no route /.test(err.message || "");
}

export function unavailable(what, route) {
  return h("div", { class: "card", id: "unavailable", role: "status" }, h("h2", {}, `${what}: not available on this server`),
    h("p", {}, `This server has no ${route} API (it answered 404), so there is nothing to show here. A KG-OS version with it will fill this view.`));
}
