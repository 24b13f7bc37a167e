// cogserve playground: a form built from /openapi.json, runs sent to this server only.
// Plain JavaScript with no dependencies and no build step, so it ships inside the Python
// package and works offline. Values from the model are only ever put into the page as
// text (textContent) or as media/link URLs, never as HTML.
"use strict";

const RECENT_KEY = "cogserve-playground-recent";
const THEME_KEY = "cogserve-playground-theme";
const RECENT_MAX = 20;
const LARGE_FILE = 10 * 1024 * 1024; // above this a file input gets a warning
const POLL_MS = 400;

// ------------------------------------------------------------------ small helpers

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB"];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

function formatSeconds(s) {
  if (s === null || s === undefined || Number.isNaN(s)) return "";
  return s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(2)} s`;
}

function newId() {
  const bytes = new Uint8Array(10);
  crypto.getRandomValues(bytes);
  return "pg-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function readJSON(response) {
  const text = await response.text();
  try { return JSON.parse(text); } catch { return { error: text || response.statusText }; }
}

function errorText(body, response) {
  if (body && typeof body.error === "string") return body.error;
  if (body && typeof body.detail === "string") return body.detail;
  return `${response.status} ${response.statusText}`;
}

function shellQuote(s) {
  return "'" + s.replace(/'/g, "'\\''") + "'";
}

// ------------------------------------------------------------------ schema reading

function resolve(schema, doc) {
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

function isFileSchema(s) {
  return s && s.type === "string" && s.format === "uri";
}

// The kind of editor an input gets.
function inputKind(s, doc) {
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

function typeLabel(s, doc) {
  if (s["x-cogserve-tensor"]) return `tensor ${s["x-cogserve-tensor"].datatype || ""}`.trim();
  if (Array.isArray(s.enum)) return "choice";
  if (s["x-cog-secret"]) return "secret";
  if (isFileSchema(s)) return "file";
  if (s.type === "array") return `list of ${typeLabel(resolve(s.items, doc), doc)}`;
  if (s.anyOf) return s.anyOf.map((x) => typeLabel(resolve(x, doc), doc)).join(" | ");
  if (s.type === "object") return "JSON object";
  return s.type || "any JSON";
}

// ------------------------------------------------------------------ input fields

class FieldError extends Error {}

class Field {
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
                                     placeholder: s.type === "object"
                                       ? "JSON, e.g. {\"key\": \"value\"}" : "a JSON value" });
        if (s.default !== undefined && s.default !== null) {
          this.input.value = JSON.stringify(s.default, null, 2);
        }
        this.input.addEventListener("blur", () => this.checkJSON());
        return this.input;
      }
    }
  }

  grow() {
    this.input.style.height = "auto";
    this.input.style.height = `${Math.min(this.input.scrollHeight + 2, 400)}px`;
  }

  checkJSON() {
    this.clearError();
    if (this.input.value.trim() === "") return;
    try { JSON.parse(this.input.value); } catch (e) { this.showError(`not valid JSON: ${e.message}`); }
  }

  makeDropZone(id) {
    const multiple = this.kind === "files";
    this.files = []; // [{name, size, url}]
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

  async addFiles(files) {
    if (!files.length) return;
    const multiple = this.kind === "files";
    if (!multiple) this.files = [];
    for (const file of multiple ? files : files.slice(0, 1)) {
      const url = await new Promise((resolveUrl, reject) => {
        const reader = new FileReader();
        reader.onload = () => resolveUrl(reader.result);
        reader.onerror = () => reject(reader.error);
        reader.readAsDataURL(file);
      });
      this.files.push({ name: file.name, size: file.size, url });
    }
    this.showFiles();
  }

  showFiles() {
    this.fileList.replaceChildren();
    const limit = this.config.max_body_bytes;
    for (const [index, file] of this.files.entries()) {
      let warning = null;
      if (limit && file.url.length > limit) {
        warning = `too large: as a data URL it is ${formatBytes(file.url.length)}, over this `
          + `server's request limit of ${formatBytes(limit)} (--max-body-bytes)`;
      } else if (file.size > LARGE_FILE) {
        warning = `large file: it is sent inside the request as base64 (${formatBytes(file.url.length)})`;
      }
      const warn = warning ? h("span", { class: "warn", text: warning }) : null;
      const remove = h("button", {
        type: "button", class: "ghost small", text: "remove", "aria-label": `remove ${file.name}`,
        onclick: () => { this.files.splice(index, 1); this.showFiles(); },
      });
      const thumb = file.url.startsWith("data:image/") ? h("img", { src: file.url, alt: "" }) : null;
      this.fileList.append(h("div", { class: "file" }, thumb,
        h("span", { class: "file-name", text: file.name }),
        h("span", { class: "muted", text: formatBytes(file.size) }), warn, remove));
    }
  }

  // The JSON value to send, or undefined to leave the input out (the model's default).
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
        const urls = this.files.map((f) => f.url);
        const typed = this.url.value.trim();
        if (typed) urls.push(typed);
        if (!urls.length) return undefined;
        return this.kind === "file" ? urls[urls.length - 1] : urls;
      }
      default: {
        const raw = this.input.value.trim();
        if (raw === "") return undefined;
        try { return JSON.parse(raw); } catch (e) { throw new FieldError(`not valid JSON: ${e.message}`); }
      }
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

// ------------------------------------------------------------------ outputs

function mimeOf(url) {
  const data = /^data:([^;,]+)/.exec(url);
  if (data) return data[1].toLowerCase();
  const path = url.split(/[?#]/)[0].toLowerCase();
  const ext = path.slice(path.lastIndexOf(".") + 1);
  const known = {
    png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif",
    webp: "image/webp", svg: "image/svg+xml", bmp: "image/bmp", avif: "image/avif",
    wav: "audio/wav", mp3: "audio/mpeg", ogg: "audio/ogg", flac: "audio/flac", m4a: "audio/mp4",
    mp4: "video/mp4", webm: "video/webm", mov: "video/quicktime",
  };
  return known[ext] || "";
}

function fileName(url, index) {
  if (url.startsWith("data:")) {
    const ext = (mimeOf(url).split("/")[1] || "bin").replace("jpeg", "jpg").replace("+xml", "");
    return `output${index ?? ""}.${ext}`;
  }
  return decodeURIComponent(url.split(/[?#]/)[0].split("/").pop() || "output");
}

function renderFile(url, index) {
  const mime = mimeOf(url);
  const name = fileName(url, index);
  let media = null;
  if (mime.startsWith("image/")) media = h("img", { src: url, alt: name, class: "media" });
  else if (mime.startsWith("audio/")) media = h("audio", { src: url, controls: true, class: "media" });
  else if (mime.startsWith("video/")) media = h("video", { src: url, controls: true, class: "media" });
  const link = h("a", { href: url, download: name, class: "download", text: `Download ${name}` });
  return h("figure", { class: "output-file" }, media, h("figcaption", {}, link));
}

function looksLikeFile(value, schema) {
  if (typeof value !== "string") return false;
  if (value.startsWith("data:")) return true;
  return isFileSchema(schema) && /^https?:\/\//.test(value);
}

function renderValue(value, schema, doc, index) {
  const s = resolve(schema || {}, doc);
  if (value === null || value === undefined) return h("span", { class: "muted", text: "null" });
  if (looksLikeFile(value, s)) return renderFile(value, index);
  if (typeof value === "string") return h("div", { class: "text-output", text: value });
  if (Array.isArray(value)) {
    const items = resolve(s.items || {}, doc);
    if (s["x-cog-array-display"] === "concatenate" && value.every((v) => typeof v === "string")) {
      return h("div", { class: "text-output", text: value.join("") });
    }
    if (value.length && value.every((v) => looksLikeFile(v, items))) {
      return h("div", { class: "gallery" }, value.map((v, i) => renderFile(v, i)));
    }
    if (s["x-cog-array-type"] === "iterator" && value.every((v) => typeof v === "string")) {
      return h("ol", { class: "items" }, value.map((v) => h("li", { text: v })));
    }
  }
  if (typeof value === "object" && !Array.isArray(value) && s.properties) {
    const fileish = Object.entries(value).some(([k, v]) => looksLikeFile(v, resolve(s.properties[k], doc)));
    if (fileish) {
      return h("dl", { class: "object" }, Object.entries(value).flatMap(([k, v]) => [
        h("dt", { text: k }), h("dd", {}, renderValue(v, s.properties[k], doc))]));
    }
  }
  return h("pre", { class: "json", text: JSON.stringify(value, null, 2) });
}

// ------------------------------------------------------------------ one run's view

class OutputView {
  constructor(outputSchema, doc) {
    this.outputSchema = outputSchema;
    this.doc = doc;
    this.status = h("span", { class: "status idle", text: "idle", "data-testid": "status" });
    this.timer = h("span", { class: "muted timer" });
    this.ident = h("code", { class: "muted ident" });
    this.error = h("div", { class: "run-error", role: "alert", hidden: true });
    this.output = h("div", { class: "output", "data-testid": "output" },
      h("div", { class: "placeholder", text: "The output appears here." }));
    this.logs = h("pre", { class: "logs", "data-testid": "logs" });
    this.metrics = h("table", { class: "metrics", "data-testid": "metrics" });
    this.curl = h("pre", { class: "curl", "data-testid": "curl" });
    this.copy = h("button", { type: "button", class: "ghost small", text: "Copy as curl",
                              disabled: true, onclick: () => this.copyCurl() });
    this.el = h("section", { class: "card output-card" },
      h("div", { class: "card-head" }, h("h2", { text: "Output" }), this.status, this.timer,
        h("span", { class: "spacer" }), this.ident),
      this.error, this.output,
      h("details", { class: "section", open: true }, h("summary", { text: "Logs" }), this.logs),
      h("details", { class: "section", open: true }, h("summary", { text: "Metrics" }), this.metrics),
      h("details", { class: "section" }, h("summary", {}, "Request ", this.copy), this.curl));
    this.chunks = null;
  }

  reset(id) {
    this.ident.textContent = id;
    this.error.hidden = true;
    this.output.replaceChildren();
    this.logs.textContent = "";
    this.metrics.replaceChildren();
    this.chunks = null;
    this.live = null;
    this.setStatus("starting");
    this.started = performance.now();
    clearInterval(this.ticker);
    this.ticker = setInterval(() => {
      this.timer.textContent = formatSeconds((performance.now() - this.started) / 1000);
    }, 100);
  }

  setStatus(status) {
    this.status.textContent = status;
    this.status.className = `status ${status}`;
    if (["succeeded", "failed", "canceled"].includes(status)) clearInterval(this.ticker);
  }

  setRequest(curl) {
    this.curl.textContent = curl;
    this.copy.disabled = false;
  }

  async copyCurl() {
    const text = this.curl.textContent;
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // not a secure context (a LAN address): select the text for Ctrl-C instead
      const range = document.createRange();
      range.selectNodeContents(this.curl);
      getSelection().removeAllRanges();
      getSelection().addRange(range);
    }
    this.copy.textContent = "Copied";
    setTimeout(() => { this.copy.textContent = "Copy as curl"; }, 1500);
  }

  fail(message) {
    this.error.hidden = false;
    this.error.textContent = message;
  }

  // A whole prediction object (sync answer, a poll, the SSE `completed` event, GET).
  render(prediction) {
    this.setStatus(prediction.status || "unknown");
    if (prediction.id) this.ident.textContent = prediction.id;
    if (prediction.output !== undefined && prediction.output !== null) {
      this.output.replaceChildren(renderValue(prediction.output, this.outputSchema, this.doc));
    } else if (!this.chunks) {
      this.output.replaceChildren();
    }
    if (typeof prediction.logs === "string") this.setLogs(prediction.logs);
    if (prediction.error) this.fail(prediction.error);
    else this.error.hidden = true;
    this.showMetrics(prediction);
  }

  // One SSE `output` event of a streaming model.
  chunk(value) {
    this.chunks = this.chunks || [];
    this.chunks.push(value);
    this.output.replaceChildren(renderValue(this.chunks, this.outputSchema, this.doc));
  }

  // One SSE `metric` event: applied as the model's record_metric mode says.
  metric({ name, value, mode }) {
    const live = (this.live = this.live || {});
    if (mode === "incr") live[name] = (live[name] || 0) + value;
    else if (mode === "append") live[name] = [...(live[name] || []), value];
    else live[name] = value;
    this.showMetrics({ metrics: live });
  }

  appendLog(text) {
    this.setLogs(this.logs.textContent + text);
  }

  setLogs(text) {
    const atBottom = this.logs.scrollTop + this.logs.clientHeight >= this.logs.scrollHeight - 4;
    this.logs.textContent = text;
    if (atBottom) this.logs.scrollTop = this.logs.scrollHeight;
  }

  showMetrics(prediction) {
    const rows = [];
    const seconds = (a, b) => (a && b ? (Date.parse(b) - Date.parse(a)) / 1000 : null);
    const metrics = prediction.metrics || {};
    for (const [key, value] of Object.entries(metrics)) {
      rows.push([key, key.endsWith("_time") && typeof value === "number"
        ? formatSeconds(value) : JSON.stringify(value)]);
    }
    const queued = seconds(prediction.created_at, prediction.started_at);
    const total = seconds(prediction.created_at, prediction.completed_at);
    if (queued !== null) rows.push(["waited to start", formatSeconds(queued)]);
    if (total !== null) rows.push(["total", formatSeconds(total)]);
    if (prediction.created_at) {
      rows.push(["created", new Date(prediction.created_at).toLocaleString()]);
    }
    this.metrics.replaceChildren(...rows.map(([k, v]) =>
      h("tr", {}, h("th", { text: k }), h("td", { text: v }))));
    if (total !== null) this.timer.textContent = formatSeconds(total);
  }
}

// ------------------------------------------------------------------ recent runs (this browser)

function loadRecent() {
  try { return JSON.parse(localStorage.getItem(RECENT_KEY)) || []; } catch { return []; }
}

function saveRecent(entry) {
  const list = loadRecent().filter((e) => !(e.id === entry.id && e.kind === entry.kind));
  list.unshift(entry);
  localStorage.setItem(RECENT_KEY, JSON.stringify(list.slice(0, RECENT_MAX)));
  for (const listener of recentListeners) listener();
}

const recentListeners = [];

// ------------------------------------------------------------------ a prediction or training tab

class RunPanel {
  constructor({ kind, base, inputRef, outputRef, streaming, doc, config }) {
    this.kind = kind; // "prediction" | "training"
    this.idPrefix = kind === "training" ? "train-" : "in-";
    this.base = base; // "predictions" | "trainings"
    this.doc = doc;
    this.config = config;
    this.streaming = streaming;
    const inputs = resolve({ $ref: inputRef }, doc);
    const required = new Set(inputs.required || []);
    this.fields = Object.entries(inputs.properties || {})
      .sort(([, a], [, b]) => (a["x-order"] ?? 0) - (b["x-order"] ?? 0))
      .map(([name, schema]) => new Field(name, resolve(schema, doc), required.has(name), doc,
                                         config, this.idPrefix));
    this.view = new OutputView({ $ref: outputRef }, doc);
    this.form = h("form", { class: "fields", novalidate: true }, this.fields.map((f) => f.el));
    this.form.addEventListener("submit", (e) => { e.preventDefault(); this.run(); });
    this.formError = h("div", { class: "run-error", role: "alert", hidden: true });

    const modes = streaming ? ["stream", "sync", "async"] : ["sync", "async"];
    this.mode = h("select", { "aria-label": "How to run", class: "mode" },
      modes.map((m) => h("option", { value: m, text: {
        stream: "stream (SSE)", sync: "wait for the result", async: "async (poll)" }[m] })));
    this.runButton = h("button", { type: "submit", class: "primary", text: "Run" });
    this.cancelButton = h("button", { type: "button", class: "danger", text: "Cancel",
                                      disabled: true, onclick: () => this.cancel() });
    this.resetButton = h("button", { type: "button", class: "ghost", text: "Reset",
                                     onclick: () => this.resetForm() });
    this.form.append(this.formError, h("div", { class: "actions" },
      this.runButton, this.cancelButton, h("span", { class: "spacer" }), this.mode,
      this.resetButton));

    this.recent = h("ul", { class: "recent", "data-testid": "recent" });
    recentListeners.push(() => this.showRecent());
    const inputCard = h("section", { class: "card input-card" },
      h("div", { class: "card-head" }, h("h2", { text: "Input" }),
        h("span", { class: "muted", text: `${kind === "training" ? "PUT /trainings" : "PUT /predictions"}/{id}` })),
      this.fields.length ? null : h("p", { class: "muted", text: "This model takes no inputs." }),
      this.form);
    const recentCard = h("section", { class: "card recent-card" },
      h("div", { class: "card-head" }, h("h2", { text: "Recent" }),
        h("span", { class: "muted", text: "in this browser" })), this.recent);
    this.el = h("div", { class: "panel" }, inputCard,
      h("div", { class: "side" }, this.view.el, recentCard));
    this.showRecent();
  }

  resetForm() {
    for (const field of this.fields) {
      const fresh = new Field(field.name, field.schema, field.required, this.doc, this.config,
                              this.idPrefix);
      field.el.replaceWith(fresh.el);
      this.fields[this.fields.indexOf(field)] = fresh;
    }
  }

  collect() {
    const input = {};
    let ok = true;
    for (const field of this.fields) {
      field.clearError();
      try {
        const value = field.value();
        if (value !== undefined) input[field.name] = value;
      } catch (e) {
        if (!(e instanceof FieldError)) throw e;
        field.showError(e.message);
        ok = false;
      }
    }
    return ok ? input : null;
  }

  showFieldErrors(detail) {
    // FastAPI-style 422: [{loc: ["body", "input", name, ...], msg}]; anything else on top
    const general = [];
    let first = null;
    for (const item of Array.isArray(detail) ? detail : []) {
      const loc = item.loc || [];
      const field = loc[1] === "input" ? this.fields.find((f) => f.name === loc[2]) : null;
      if (field) {
        const where = loc.slice(3).join(".");
        field.showError(where ? `${where}: ${item.msg}` : item.msg);
        first = first || field;
      } else {
        general.push(`${loc.slice(1).join(".") || "request"}: ${item.msg}`);
      }
    }
    if (general.length) this.showFormError(general.join("\n"));
    if (first) first.el.scrollIntoView({ block: "center", behavior: "smooth" });
  }

  showFormError(message) {
    this.formError.hidden = !message;
    this.formError.textContent = message || "";
  }

  setRunning(running) {
    this.running = running;
    this.runButton.disabled = running;
    this.cancelButton.disabled = !running;
    this.runButton.textContent = running ? "Running…" : "Run";
  }

  async run() {
    if (this.running) return;
    this.showFormError("");
    const input = this.collect();
    if (!input) {
      this.showFormError("Some inputs need fixing (marked below).");
      return;
    }
    const mode = this.mode.value;
    const id = newId();
    const path = `${this.base}/${encodeURIComponent(id)}`;
    const headers = { "Content-Type": "application/json" };
    if (mode === "async") headers.Prefer = "respond-async";
    if (mode === "stream") headers.Accept = "text/event-stream";
    const body = JSON.stringify({ input });
    this.current = id;
    this.view.reset(id);
    this.view.el.scrollIntoView({ block: "nearest", behavior: "smooth" });
    this.view.setRequest(this.curlFor(path, headers, body, mode));
    this.setRunning(true);
    try {
      const response = await fetch(path, { method: "PUT", headers, body });
      if (!response.ok) {
        const answer = await readJSON(response);
        if (response.status === 422 && answer.detail) {
          this.showFieldErrors(answer.detail);
          this.view.setStatus("invalid");
          this.view.fail("The input was refused (422): see the marked fields.");
        } else {
          this.view.setStatus("error");
          this.view.fail(`${response.status}: ${errorText(answer, response)}`);
        }
        return;
      }
      saveRecent({ id, kind: this.kind, at: new Date().toISOString() });
      if (mode === "stream") await this.readStream(response);
      else if (mode === "async") await this.poll(id, await readJSON(response));
      else this.view.render(await readJSON(response));
    } catch (e) {
      this.view.setStatus("error");
      this.view.fail(`The request failed: ${e.message}`);
    } finally {
      if (this.current === id) this.setRunning(false);
    }
  }

  curlFor(path, headers, body, mode) {
    const url = new URL(path, location.href).href;
    const parts = [`curl -s${mode === "stream" ? "N" : ""} -X PUT ${shellQuote(url)}`];
    for (const [k, v] of Object.entries(headers)) parts.push(`-H ${shellQuote(`${k}: ${v}`)}`);
    parts.push(`--data-binary ${shellQuote(body)}`);
    return parts.join(" \\\n  ");
  }

  async poll(id, first) {
    this.view.render(first);
    let prediction = first;
    while (!["succeeded", "failed", "canceled"].includes(prediction.status)) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      const response = await fetch(`${this.base}/${encodeURIComponent(id)}`);
      const answer = await readJSON(response);
      if (!response.ok) {
        this.view.fail(`Polling GET /${this.base}/${id} answered ${response.status}: `
                       + errorText(answer, response));
        return;
      }
      prediction = answer;
      this.view.render(prediction);
    }
  }

  async readStream(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let finished = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = "message";
        const data = [];
        for (const line of frame.split("\n")) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        let payload = null;
        try { payload = JSON.parse(data.join("\n")); } catch { payload = data.join("\n"); }
        finished = this.onEvent(event, payload) || finished;
      }
    }
    if (!finished) this.view.fail("The stream ended before the prediction completed.");
  }

  onEvent(event, payload) {
    switch (event) {
      case "start": this.view.setStatus("processing"); return false;
      case "output": this.view.chunk(payload.chunk); return false;
      case "log": this.view.appendLog(payload.data); return false;
      case "metric": this.view.metric(payload); return false;
      case "completed": this.view.render(payload); return true;
      case "error": this.view.fail(payload.error || String(payload)); return true;
      default: return false;
    }
  }

  async cancel() {
    const id = this.current;
    if (!id) return;
    this.cancelButton.disabled = true;
    // a 404 while our PUT is still on its way means the server has not seen it yet: retry
    for (let attempt = 0; attempt < 20 && this.running && this.current === id; attempt += 1) {
      const response = await fetch(`${this.base}/${encodeURIComponent(id)}/cancel`,
                                   { method: "POST" });
      if (response.ok) return;
      if (response.status !== 404) {
        this.view.fail(`Cancel answered ${response.status}: ${errorText(await readJSON(response), response)}`);
        return;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  showRecent() {
    const entries = loadRecent().filter((e) => e.kind === this.kind);
    this.recent.replaceChildren(...entries.map((entry) => h("li", {},
      h("button", { type: "button", class: "linkish", onclick: () => this.reopen(entry.id) },
        h("code", { text: entry.id })),
      h("span", { class: "muted", text: new Date(entry.at).toLocaleTimeString() }))));
    if (!entries.length) this.recent.append(h("li", { class: "muted", text: "Nothing yet." }));
  }

  async reopen(id) {
    if (this.running) return;
    this.view.reset(id);
    const response = await fetch(`${this.base}/${encodeURIComponent(id)}`);
    const answer = await readJSON(response);
    if (!response.ok) {
      this.view.setStatus("unknown");
      this.view.fail(`GET /${this.base}/${id} answered ${response.status}: ${errorText(answer, response)}`);
      return;
    }
    this.view.render(answer);
    if (!["succeeded", "failed", "canceled"].includes(answer.status)) {
      this.current = id;
      this.setRunning(true);
      try { await this.poll(id, answer); } finally { this.setRunning(false); }
    }
  }
}

// ------------------------------------------------------------------ the V2 tab (tensor models)

class V2Panel {
  constructor(config, required) {
    this.required = required; // from the Input schema: V2 metadata does not say
    const version = config.model_version ? `/versions/${encodeURIComponent(config.model_version)}` : "";
    this.base = `v2/models/${encodeURIComponent(config.model_name)}${version}`;
    this.meta = h("pre", { class: "json", text: "loading…" });
    this.inputs = h("div", { class: "fields" });
    this.result = h("div", { class: "output", "data-testid": "v2-output" });
    this.error = h("div", { class: "run-error", role: "alert", hidden: true });
    const send = h("button", { type: "button", class: "primary", text: "Infer",
                               onclick: () => this.infer() });
    this.el = h("div", { class: "panel" },
      h("section", { class: "card" },
        h("div", { class: "card-head" }, h("h2", { text: "Tensors" }),
          h("span", { class: "muted", text: `POST /${this.base}/infer` })),
        this.inputs, h("div", { class: "actions" }, send)),
      h("div", { class: "side" },
        h("section", { class: "card" }, h("div", { class: "card-head" }, h("h2", { text: "Response" })),
          this.error, this.result),
        h("section", { class: "card" }, h("div", { class: "card-head" },
          h("h2", { text: "Metadata" }), h("span", { class: "muted", text: `GET /${this.base}` })),
        this.meta)));
    this.load();
  }

  async load() {
    const response = await fetch(this.base);
    const answer = await readJSON(response);
    this.meta.textContent = JSON.stringify(answer, null, 2);
    if (!response.ok) return;
    this.rows = (answer.inputs || []).map((spec) => {
      const shape = h("input", { value: spec.shape.map((d) => (d < 0 ? 1 : d)).join(", "),
                                 "aria-label": `${spec.name} shape`, title: "shape" });
      const count = spec.shape.reduce((a, d) => a * (d < 0 ? 1 : d), 1);
      const example = spec.datatype === "BYTES" ? [] : spec.datatype === "BOOL"
        ? Array(count).fill(false) : Array(count).fill(0);
      const data = h("textarea", { class: "code", rows: "1", "aria-label": `${spec.name} data`,
                                   placeholder: "data, e.g. [1, 2]" });
      const needed = this.required.has(spec.name);
      data.value = needed ? JSON.stringify(example) : "";
      return { spec, shape, data, el: h("div", { class: "field" },
        h("label", { class: "label" }, h("span", { class: "name", text: spec.name }),
          h("span", { class: "badges" }, h("span", { class: "type", text: spec.datatype }),
            needed ? h("span", { class: "pill required", text: "required" }) : null)),
        h("div", { class: "facts", text: `shape ${JSON.stringify(spec.shape)} · data as a flat JSON array; empty leaves it out` }),
        h("div", { class: "tensor-row" }, shape, data)) };
    });
    this.inputs.replaceChildren(...this.rows.map((r) => r.el));
  }

  async infer() {
    this.error.hidden = true;
    const inputs = [];
    try {
      for (const { spec, shape, data } of this.rows || []) {
        if (data.value.trim() === "") continue;
        inputs.push({ name: spec.name, datatype: spec.datatype,
                      shape: shape.value.split(",").filter((x) => x.trim()).map(Number),
                      data: JSON.parse(data.value) });
      }
    } catch (e) {
      this.error.hidden = false;
      this.error.textContent = `not valid JSON: ${e.message}`;
      return;
    }
    const response = await fetch(`${this.base}/infer`, {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ inputs }),
    });
    const answer = await readJSON(response);
    if (!response.ok) {
      this.error.hidden = false;
      this.error.textContent = `${response.status}: ${errorText(answer, response)}`;
      this.result.replaceChildren();
      return;
    }
    this.result.replaceChildren(h("table", { class: "metrics tensors" },
      h("tr", {}, ["output", "datatype", "shape", "data"].map((t) => h("th", { text: t }))),
      (answer.outputs || []).map((o) => h("tr", {}, h("td", { text: o.name }),
        h("td", { text: o.datatype }), h("td", { text: JSON.stringify(o.shape) }),
        h("td", {}, h("code", { text: JSON.stringify(o.data) }))))));
  }
}

// ------------------------------------------------------------------ the page

function applyTheme(theme) {
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}

function setupTheme() {
  applyTheme(localStorage.getItem(THEME_KEY));
  document.getElementById("theme").addEventListener("click", () => {
    const dark = document.documentElement.dataset.theme
      ? document.documentElement.dataset.theme === "dark"
      : matchMedia("(prefers-color-scheme: dark)").matches;
    const next = dark ? "light" : "dark";
    localStorage.setItem(THEME_KEY, next);
    applyTheme(next);
  });
}

function notice(message, logs) {
  const box = document.getElementById("notice");
  box.hidden = !message;
  box.replaceChildren();
  if (message) box.append(h("div", { text: message }), logs ? h("pre", { class: "logs", text: logs }) : null);
}

async function watchHealth() {
  const badge = document.getElementById("health");
  let health = null;
  try {
    const response = await fetch("health-check");
    health = await response.json();
  } catch {
    badge.textContent = "unreachable";
    badge.className = "badge bad";
    return null;
  }
  badge.textContent = health.status;
  badge.className = `badge ${{ READY: "good", BUSY: "busy", STARTING: "wait" }[health.status] || "bad"}`;
  if (health.status === "SETUP_FAILED") {
    notice("setup() failed; the model cannot run until the server is restarted.",
           health.setup && health.setup.logs);
  } else if (health.status === "DEFUNCT") {
    notice("The model's worker process is gone; the server cannot run predictions.");
  } else {
    notice("");
  }
  return health;
}

async function loadSchema() {
  // /openapi.json answers 503 while the model loads: wait for it
  for (;;) {
    const response = await fetch("openapi.json");
    if (response.ok) return response.json();
    const health = await watchHealth();
    if (health && ["SETUP_FAILED", "DEFUNCT"].includes(health.status)) return null;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function showTabs(tabs) {
  const bar = document.getElementById("tabs");
  const panels = document.getElementById("panels");
  const select = (index) => {
    tabs.forEach((tab, i) => {
      tab.button.setAttribute("aria-selected", String(i === index));
      tab.panel.el.hidden = i !== index;
    });
  };
  tabs.forEach((tab, index) => {
    tab.button = h("button", { type: "button", role: "tab", text: tab.title,
                               onclick: () => select(index) });
    bar.append(tab.button);
    panels.append(tab.panel.el);
  });
  bar.hidden = tabs.length < 2;
  select(0);
}

async function main() {
  setupTheme();
  const config = await (await fetch("docs/playground.json")).json();
  document.getElementById("model-name").textContent = config.model_name;
  document.title = `${config.model_name} · cogserve playground`;
  await watchHealth();
  setInterval(watchHealth, 5000);
  const doc = await loadSchema();
  if (!doc) return;
  const schemas = doc.components.schemas;
  const tabs = [];
  const predictions = doc.paths["/predictions"];
  if (predictions && schemas.Input) {
    tabs.push({ title: "Prediction", panel: new RunPanel({
      kind: "prediction", base: "predictions", doc, config,
      inputRef: "#/components/schemas/Input", outputRef: "#/components/schemas/Output",
      streaming: Boolean(predictions.post && predictions.post["x-cog-streaming"]) }) });
  }
  if (doc.paths["/trainings"] && schemas.TrainingInput) {
    tabs.push({ title: "Training", panel: new RunPanel({
      kind: "training", base: "trainings", doc, config, streaming: false,
      inputRef: "#/components/schemas/TrainingInput",
      outputRef: "#/components/schemas/TrainingOutput" }) });
  }
  const tensors = Object.values((schemas.Input && schemas.Input.properties) || {})
    .some((p) => p["x-cogserve-tensor"]);
  if (tensors) {
    tabs.push({ title: "V2 tensors",
                panel: new V2Panel(config, new Set(schemas.Input.required || [])) });
  }
  showTabs(tabs);
  document.body.dataset.ready = "true"; // the form is built (tests wait for this)
}

main().catch((e) => notice(`The playground could not start: ${e.message}`));
