// One form field per input: its editor, its value as JSON, its error message.
import { formatBytes, h } from "./dom.js";
import { inputKind, resolve, typeLabel } from "./schema.js";

const LARGE_FILE = 10 * 1024 * 1024; // above this a file sent inside JSON gets a warning

export class FieldError extends Error {}

const dataUrls = new WeakMap(); // File -> its data URL, read when a run first sends it as JSON

// A file as the data URL a JSON request carries.
export function dataUrlOf(file) {
  if (!dataUrls.has(file)) {
    dataUrls.set(file, new Promise((resolveUrl, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolveUrl(reader.result);
      reader.onerror = () => { dataUrls.delete(file); reject(reader.error); };
      reader.readAsDataURL(file);
    }));
  }
  return dataUrls.get(file);
}

// The length of that data URL, without reading the file: base64 is 4 bytes per 3.
function dataUrlSize(file) {
  return `data:${file.type || "application/octet-stream"};base64,`.length
    + 4 * Math.ceil(file.size / 3);
}

// A number whose text (String(n)) the server reads back as the same value for `type`.
function exactNumber(n, type) {
  if (type === "integer") return Number.isSafeInteger(n);
  return type === "number" && Number.isFinite(n);
}

function isPlainObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export class Field {
  constructor(name, schema, required, doc, config, idPrefix) {
    this.name = name;
    this.idPrefix = idPrefix; // ids stay unique with a prediction and a training form
    this.schema = schema;
    this.required = required;
    this.doc = doc;
    this.config = config;
    this.kind = inputKind(schema, doc);
    this.message = h("div", { class: "field-error", role: "alert" });
    this.el = h("div", { class: "field", "data-field": name });
    this.build();
  }

  build() {
    const s = this.schema;
    const id = `${this.idPrefix}${this.name}`;
    const badges = h("span", { class: "badges" },
      h("span", { class: "type", text: typeLabel(s, this.doc) }),
      this.required ? h("span", { class: "pill required", text: "required" }) : null,
      s.deprecated ? h("span", { class: "pill deprecated", text: "deprecated" }) : null);
    const label = h("label", { for: id, class: "label" },
      h("span", { class: "name", text: s.title || this.name }),
      h("code", { class: "key", text: this.name }), badges);
    const hints = [];
    if (s.description) hints.push(h("div", { class: "desc", text: s.description }));
    const facts = [];
    if (s.default !== undefined && s.default !== null && this.kind !== "secret") {
      facts.push(`default: ${JSON.stringify(s.default)}`);
    }
    const lo = s.minimum ?? s.exclusiveMinimum;
    const hi = s.maximum ?? s.exclusiveMaximum;
    if (lo !== undefined || hi !== undefined) facts.push(`range: ${lo ?? "−∞"} – ${hi ?? "∞"}`);
    if (s.minLength !== undefined || s.maxLength !== undefined) {
      facts.push(`length: ${s.minLength ?? 0} – ${s.maxLength ?? "∞"}`);
    }
    if (s.pattern) facts.push(`pattern: ${s.pattern}`);
    if (facts.length) hints.push(h("div", { class: "facts", text: facts.join(" · ") }));
    this.control = this.makeControl(id);
    this.el.append(label, ...hints, this.control, this.message);
  }

  makeControl(id) {
    const s = this.schema;
    const name = this.name;
    switch (this.kind) {
      case "choice": {
        this.select = h("select", { id, name });
        if (!this.required && (s.default === undefined || s.default === null)) {
          this.select.append(h("option", { value: "", text: "—" }));
        }
        for (const choice of s.enum) {
          const option = h("option", { value: JSON.stringify(choice), text: String(choice) });
          if (choice === s.default) option.selected = true;
          this.select.append(option);
        }
        return this.select;
      }
      case "boolean": {
        this.box = h("input", { id, name, type: "checkbox" });
        this.box.checked = s.default === true;
        return h("label", { class: "switch" }, this.box, h("span", { text: "true" }));
      }
      case "number": {
        const integer = s.type === "integer";
        this.input = h("input", {
          id, name, type: "number", inputmode: integer ? "numeric" : "decimal",
          step: integer ? "1" : "any", min: s.minimum, max: s.maximum,
        });
        if (s.default !== undefined && s.default !== null) this.input.value = String(s.default);
        if (s.minimum === undefined || s.maximum === undefined) return this.input;
        // both bounds: a slider next to the number, kept in step with it
        const slider = h("input", {
          type: "range", min: s.minimum, max: s.maximum, "aria-label": `${name} slider`,
          step: integer ? "1" : String((s.maximum - s.minimum) / 100 || "any"), tabindex: "-1",
        });
        slider.value = this.input.value || String(s.minimum);
        slider.addEventListener("input", () => { this.input.value = slider.value; });
        this.input.addEventListener("input", () => { slider.value = this.input.value; });
        return h("div", { class: "number-row" }, this.input, slider);
      }
      case "secret": {
        this.input = h("input", { id, name, type: "password", autocomplete: "off" });
        const toggle = h("button", {
          type: "button", class: "ghost small", text: "show",
          onclick: () => {
            const hidden = this.input.type === "password";
            this.input.type = hidden ? "text" : "password";
            toggle.textContent = hidden ? "hide" : "show";
          },
        });
        return h("div", { class: "row" }, this.input, toggle);
      }
      case "text": {
        this.input = h("textarea", { id, name, rows: "1", spellcheck: "false",
                                     maxlength: s.maxLength });
        if (typeof s.default === "string") this.input.value = s.default;
        this.input.addEventListener("input", () => this.grow());
        requestAnimationFrame(() => this.grow());
        return this.input;
      }
      case "lines": {
        this.input = h("textarea", { id, name, rows: "3", spellcheck: "false",
                                     placeholder: "one item per line" });
        if (Array.isArray(s.default)) this.input.value = s.default.join("\n");
        return this.input;
      }
      case "file":
      case "files":
        return this.makeDropZone(id);
      default: {
        this.input = h("textarea", { id, name, rows: "3", class: "code", spellcheck: "false",
                                     placeholder: this.placeholder() });
        if (s.default !== undefined && s.default !== null) {
          this.input.value = JSON.stringify(s.default, null, 2);
        }
        this.input.addEventListener("blur", () => this.checkJSON());
        return this.input;
      }
    }
  }

  grow() {
    if (!this.input.scrollHeight) return; // not laid out yet (a hidden tab): keep its rows
    this.input.style.height = "auto";
    this.input.style.height = `${Math.min(this.input.scrollHeight + 2, 400)}px`;
  }

  checkJSON() {
    this.clearError();
    if (this.input.value.trim() === "" || this.takesText()) return;
    try { JSON.parse(this.input.value); } catch (e) { this.showError(`not valid JSON: ${e.message}`); }
  }

  placeholder() {
    if (this.takesText()) return "text, or JSON such as [\"a\", \"b\"]";
    return this.schema.type === "object" ? "JSON, e.g. {\"key\": \"value\"}" : "a JSON value";
  }

  // A union with a string member: text that is not JSON is sent as that string.
  takesText() {
    return (this.schema.anyOf || []).some((member) => resolve(member, this.doc).type === "string");
  }

  makeDropZone(id) {
    const multiple = this.kind === "files";
    this.files = []; // [{file, thumb}]: the File itself, read only if a run needs JSON
    this.sending = "form"; // how the next run would send them: "form" | "json"
    this.picker = h("input", { id, name: this.name, type: "file", multiple, class: "file-picker" });
    this.fileList = h("div", { class: "file-list" });
    this.url = h("input", { type: "url", placeholder: "…or a URL (http://, https://, data:)",
                            "aria-label": `${this.name} URL` });
    const zone = h("label", { class: "drop", for: id },
      h("span", { text: multiple ? "Drop files here or " : "Drop a file here or " }),
      h("span", { class: "link", text: "choose" }));
    zone.addEventListener("dragover", (e) => { e.preventDefault(); zone.classList.add("over"); });
    zone.addEventListener("dragleave", () => zone.classList.remove("over"));
    zone.addEventListener("drop", (e) => {
      e.preventDefault();
      zone.classList.remove("over");
      this.addFiles(Array.from(e.dataTransfer.files));
    });
    this.picker.addEventListener("change", () => {
      this.addFiles(Array.from(this.picker.files));
      this.picker.value = "";
    });
    return h("div", { class: "file-field" }, this.picker, zone, this.fileList, this.url);
  }

  addFiles(files) {
    if (!files.length) return;
    const multiple = this.kind === "files";
    if (!multiple) this.removeFiles(0);
    for (const file of multiple ? files : files.slice(0, 1)) {
      const thumb = file.type.startsWith("image/") ? URL.createObjectURL(file) : null;
      this.files.push({ file, thumb });
    }
    this.filesChanged();
  }

  removeFiles(start, count = Infinity) {
    for (const { thumb } of this.files.splice(start, count)) if (thumb) URL.revokeObjectURL(thumb);
  }

  filesChanged() {
    this.showFiles();
    // the panel decides again how a run would send them (a form, or JSON)
    this.el.dispatchEvent(new Event("change", { bubbles: true }));
  }

  // Called by the panel when whether a run would go as a form or as JSON changes.
  setSending(sending) {
    if (this.files === undefined || sending === this.sending) return;
    this.sending = sending;
    this.showFiles();
  }

  showFiles() {
    this.fileList.replaceChildren();
    const limit = this.config.max_body_bytes;
    for (const [index, { file, thumb }] of this.files.entries()) {
      const warning = this.fileWarning(file, limit);
      const remove = h("button", {
        type: "button", class: "ghost small", text: "remove", "aria-label": `remove ${file.name}`,
        onclick: () => { this.removeFiles(index, 1); this.filesChanged(); },
      });
      this.fileList.append(h("div", { class: "file" },
        thumb ? h("img", { src: thumb, alt: "" }) : null,
        h("span", { class: "file-name", text: file.name }),
        h("span", { class: "muted", text: formatBytes(file.size) }),
        warning ? h("span", { class: "warn", text: warning }) : null, remove));
    }
  }

  // What to say about a file, by what a run would send now: the file itself in a form,
  // or its data URL (a third larger) inside JSON when another input needs JSON.
  fileWarning(file, limit) {
    const over = `over this server's request limit of ${formatBytes(limit)} (--max-body-bytes)`;
    if (this.sending === "form") {
      return limit && file.size > limit ? `too large: ${formatBytes(file.size)}, ${over}` : "";
    }
    const size = dataUrlSize(file);
    if (limit && size > limit) {
      return `too large: sent as a data URL (another input needs JSON) it is ${formatBytes(size)}, ${over}`;
    }
    if (file.size > LARGE_FILE) {
      return `large file: another input needs JSON, so it is sent inside it as base64 (${formatBytes(size)})`;
    }
    return "";
  }

  dispose() {
    if (this.files) this.removeFiles(0);
  }

  // The value to send (a picked file as its File), or undefined to leave the input out
  // (the model's default).
  value() {
    const s = this.schema;
    switch (this.kind) {
      case "choice":
        return this.select.value === "" ? undefined : JSON.parse(this.select.value);
      case "boolean":
        return this.box.checked;
      case "number": {
        const raw = this.input.value.trim();
        if (raw === "") {
          if (this.input.validity.badInput) throw new FieldError("not a number");
          return undefined;
        }
        const n = Number(raw);
        if (!Number.isFinite(n)) throw new FieldError("not a number");
        if (s.type === "integer" && !Number.isInteger(n)) throw new FieldError("not an integer");
        return n;
      }
      case "secret":
      case "text":
        return this.input.value === "" && !this.required ? undefined : this.input.value;
      case "lines": {
        const lines = this.input.value.split("\n").filter((line) => line.trim() !== "");
        if (!lines.length) return undefined;
        const items = resolve(s.items, this.doc);
        if (items.type === "string") return lines;
        return lines.map((line, i) => {
          const n = Number(line.trim());
          if (!Number.isFinite(n) || (items.type === "integer" && !Number.isInteger(n))) {
            throw new FieldError(`line ${i + 1}: ${JSON.stringify(line)} is not ${
              items.type === "integer" ? "an integer" : "a number"}`);
          }
          return n;
        });
      }
      case "file":
      case "files": {
        // File objects (a run makes them data URLs if it sends JSON) and a typed URL
        const items = this.files.map((f) => f.file);
        const typed = this.url.value.trim();
        if (typed) items.push(typed);
        if (!items.length) return undefined;
        return this.kind === "file" ? items[items.length - 1] : items;
      }
      default: {
        const raw = this.input.value.trim();
        if (raw === "") return undefined;
        try {
          return JSON.parse(raw);
        } catch (e) {
          if (this.takesText()) return this.input.value; // `str | list[str]`: plain text
          throw new FieldError(`not valid JSON: ${e.message}`);
        }
      }
    }
  }

  // The form parts [name, text or File] that carry `value` (this.value()'s) exactly as JSON
  // would, or null where a form cannot. The server types a text part by the input's schema
  // (model/text_values.py: "1" is 1 for `str | int`), so only plain schemas qualify: a
  // string, a number, a boolean, a string or integer choice, a list of those, an object
  // as its JSON text, files and URLs; never a union, an empty list or a null.
  formEntries(value) {
    const s = this.schema;
    if (s.anyOf || value === null) return null;
    const one = (text) => [[this.name, text]];
    switch (this.kind) {
      case "file":
        return one(value);
      case "files":
        return value.length ? value.map((item) => [this.name, item]) : null;
      case "secret":
      case "text":
        return s.type === "string" && typeof value === "string" ? one(value) : null;
      case "number":
        return exactNumber(value, s.type) ? one(String(value)) : null;
      case "boolean":
        return s.type === "boolean" && typeof value === "boolean" ? one(String(value)) : null;
      case "choice":
        return (s.type === "string" && typeof value === "string")
          || (s.type === "integer" && Number.isSafeInteger(value)) ? one(String(value)) : null;
      case "lines": {
        const items = resolve(s.items, this.doc);
        const plain = (item) => (items.type === "string" ? typeof item === "string"
          : exactNumber(item, items.type));
        return !items.anyOf && value.length && value.every(plain)
          ? value.map((item) => [this.name, String(item)]) : null;
      }
      default: // JSON: an object input takes its JSON text
        return s.type === "object" && isPlainObject(value) ? one(JSON.stringify(value)) : null;
    }
  }

  showError(message) {
    this.el.classList.add("invalid");
    this.message.textContent = message;
  }

  clearError() {
    this.el.classList.remove("invalid");
    this.message.textContent = "";
  }
}
