// A form generated from a JSON Schema (as FastAPI writes it into /openapi.json): strings, numbers,
// booleans, enums, string lists and nested objects get inputs; anything else a JSON text area.
import { h } from "./dom.js";

function resolve(schema, schemas) {
  if (schema.$ref) return resolve(schemas[schema.$ref.split("/").pop()], schemas);
  if (schema.anyOf) {
    const real = schema.anyOf.filter((s) => s.type !== "null");
    if (real.length === 1) return { ...resolve(real[0], schemas), title: schema.title, nullable: true };
  }
  return schema;
}

function input(name, schema, value, schemas) {
  const s = resolve(schema, schemas);
  const title = schema.title || s.title || name;
  if (s.type === "object" && s.properties) {
    const sub = schemaForm(s, schemas, value || {}, []);
    return { el: h("fieldset", {}, h("legend", {}, title), sub.el), read: sub.read };
  }
  let el, read;
  if (s.enum) {
    el = h("select", { name }, s.enum.map((v) => h("option", { value: v, selected: v === (value ?? s.default) ? true : null }, v)));
    read = () => el.value;
  } else if (s.type === "boolean") {
    el = h("input", { type: "checkbox", name, checked: value ?? s.default ?? false });
    read = () => el.checked;
  } else if (s.type === "number" || s.type === "integer") {
    el = h("input", { type: "number", name, step: s.type === "integer" ? 1 : "any", min: s.minimum, max: s.maximum, value: value ?? s.default ?? "" });
    read = () => (el.value === "" ? undefined : Number(el.value));
  } else if (s.type === "array" && (resolve(s.items || {}, schemas).type === "string")) {
    el = h("input", { type: "text", name, size: 50, value: (value ?? s.default ?? []).join(", "), placeholder: "comma-separated" });
    read = () => el.value.split(",").map((x) => x.trim()).filter(Boolean);
  } else if (s.type === "string") {
    const long = (s.maxLength || 0) > 500;
    el = long ? h("textarea", { name, maxlength: s.maxLength }, value ?? s.default ?? "") : h("input", { type: "text", name, size: 50, maxlength: s.maxLength, value: value ?? s.default ?? "" });
    read = () => (el.value === "" && s.nullable ? null : el.value);
  } else {
    el = h("textarea", { name, class: "json" }, JSON.stringify(value ?? s.default ?? {}, null, 2));
    read = () => JSON.parse(el.value || "null");
  }
  el.setAttribute("aria-label", title);  // the visible label is beside the input, not around it
  return { el: h("div", { class: "row" }, h("label", { for: null }, title), el), read };
}

/** {el, read()}: ``read`` returns the object the inputs describe (fields in ``skip`` left out). */
export function schemaForm(schema, schemas, value, skip) {
  const fields = Object.entries(schema.properties || {}).filter(([name]) => !skip.includes(name))
    .map(([name, sub]) => [name, input(name, sub, value[name], schemas)]);
  return { el: h("div", {}, fields.map(([, f]) => f.el)), read: () => Object.fromEntries(fields.map(([n, f]) => [n, f.read()]).filter(([, v]) => v !== undefined)) };
}
