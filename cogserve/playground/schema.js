// Reading the OpenAPI schema: references resolved, the editor an input gets, its type label.
export function resolve(schema, doc) {
  // Follow $ref, and Cog's `allOf: [{$ref}]` wrapper around enums, into one schema.
  let current = schema || {};
  for (let depth = 0; depth < 10; depth += 1) {
    if (current.$ref) {
      const target = current.$ref.replace(/^#\/components\/schemas\//, "");
      const { $ref, ...rest } = current;
      current = { ...(doc.components.schemas[target] || {}), ...rest };
    } else if (Array.isArray(current.allOf) && current.allOf.length === 1) {
      // the enum's own title and description ("An enumeration.") are not the input's
      const { allOf, ...rest } = current;
      const { title, description, ...target } = resolve(allOf[0], doc);
      current = { ...target, ...rest };
    } else {
      return current;
    }
  }
  return current;
}

export function isFileSchema(s) {
  return s && s.type === "string" && s.format === "uri";
}

// The kind of editor an input gets.
export function inputKind(s, doc) {
  if (Array.isArray(s.enum)) return "choice";
  if (s["x-cog-secret"] || s.format === "password") return "secret";
  if (isFileSchema(s)) return "file";
  if (s.type === "boolean") return "boolean";
  if (s.type === "integer" || s.type === "number") return "number";
  if (s.type === "string") return "text";
  if (s.type === "array") {
    const items = resolve(s.items, doc);
    if (isFileSchema(items)) return "files";
    if (["string", "integer", "number"].includes(items.type) && !items.enum) return "lines";
    return "json";
  }
  return "json"; // objects, Any, unions, tensors
}

export function typeLabel(s, doc) {
  if (s["x-cogserve-tensor"]) return `tensor ${s["x-cogserve-tensor"].datatype || ""}`.trim();
  if (Array.isArray(s.enum)) return "choice";
  if (s["x-cog-secret"]) return "secret";
  if (isFileSchema(s)) return "file";
  if (s.type === "array") return `list of ${typeLabel(resolve(s.items, doc), doc)}`;
  if (s.anyOf) return s.anyOf.map((x) => typeLabel(resolve(x, doc), doc)).join(" | ");
  if (s.type === "object") return "JSON object";
  return s.type || "any JSON";
}
