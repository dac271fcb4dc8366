// The token dialog: shown when the server answers 401 (a server off loopback requires a token).
import { append, h } from "./dom.js";

export function askForToken(previous) {
  return new Promise((resolve) => {
    const input = h("input", { type: "password", id: "token-input", autocomplete: "off", size: 40 });
    const note = previous ? "The server refused the token (expired or wrong). Enter it again." :
      "This server requires a bearer token (KGOS_API_TOKEN). It is kept for this tab only.";
    const dialog = h("dialog", { id: "token-dialog" },
      h("form", { method: "dialog" }, h("h2", {}, "API token"), h("p", { class: previous ? "bad" : "muted" }, note),
        input, " ", h("button", { class: "primary", type: "submit" }, "Use token")));
    dialog.addEventListener("close", () => { dialog.remove(); resolve(input.value.trim()); });
    append(document.body, dialog);
    dialog.showModal();
  });
}
