// A prediction or training tab: the form, running it (sync, async, SSE), cancel, recent runs.
import { api, hasToken } from "./api.js";
import { errorText, h, newId, readJSON, shellQuote, sleep } from "./dom.js";
import { Field, FieldError, dataUrlOf } from "./fields.js";
import { FINAL_STATUSES, OutputView } from "./outputs.js";
import { resolve } from "./schema.js";

const RECENT_KEY = "cogserve-playground-recent";
const RECENT_MAX = 20;
const POLL_MS = 400;

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

// ------------------------------------------------------------------ the request's body

// The input with each File replaced by its data URL, for a JSON request.
async function withDataUrls(input) {
  const read = (item) => (item instanceof File ? dataUrlOf(item) : item);
  const out = {};
  for (const [name, value] of Object.entries(input)) {
    out[name] = Array.isArray(value) ? await Promise.all(value.map(read)) : await read(value);
  }
  return out;
}

function formData(parts) {
  const form = new FormData();
  for (const [name, value] of parts) {
    // a browser sends a text part's line breaks as CRLF; a Blob's bytes go as they are,
    // and the server reads a part for an input that is not a file as its text
    form.append(name, typeof value === "string" && /[\r\n]/.test(value)
      ? new Blob([value]) : value);
  }
  return form;
}

// The parts as curl's options: a file by its own name (curl reads it from the current
// folder), a text as -F, or as --form-string where -F would read it otherwise (a leading
// @ or <, ; and " as its own syntax, leading and trailing spaces trimmed).
function formArgs(parts) {
  return parts.map(([name, value]) => {
    if (value instanceof File) {
      const type = /^[\w.+-]+\/[\w.+-]+$/.test(value.type) ? `;type=${value.type}` : "";
      return `-F ${shellQuote(`${name}=@${curlFileName(value.name)}${type}`)}`;
    }
    const literal = /^[@<\s]|[;"]|\s$/.test(value);
    return `${literal ? "--form-string" : "-F"} ${shellQuote(`${name}=${value}`)}`;
  });
}

// curl splits a file name at , and ; and trims its spaces: such a name goes in double
// quotes, with its " and \ escaped.
function curlFileName(name) {
  return /[,;"\\]|^\s|\s$/.test(name) ? `"${name.replace(/["\\]/g, "\\$&")}"` : name;
}

// ------------------------------------------------------------------ a prediction or training tab

export class RunPanel {
  constructor({ kind, base, inputRef, outputRef, streaming, doc, config }) {
    this.kind = kind; // "prediction" | "training"
    this.idPrefix = kind === "training" ? "train-" : "in-";
    this.base = base; // "predictions" | "trainings"
    this.doc = doc;
    this.config = config;
    const inputs = resolve({ $ref: inputRef }, doc);
    const required = new Set(inputs.required || []);
    this.fields = Object.entries(inputs.properties || {})
      .sort(([, a], [, b]) => (a["x-order"] ?? 0) - (b["x-order"] ?? 0))
      .map(([name, schema]) => new Field(name, resolve(schema, doc), required.has(name), doc,
                                         config, this.idPrefix));
    this.view = new OutputView({ $ref: outputRef }, doc);
    this.form = h("form", { class: "fields", novalidate: true }, this.fields.map((f) => f.el));
    this.form.addEventListener("submit", (e) => { e.preventDefault(); this.run(); });
    for (const event of ["input", "change"]) {
      this.form.addEventListener(event, () => this.showSending());
    }
    this.formError = h("div", { class: "run-error", role: "alert", hidden: true });

    const modes = streaming ? ["stream", "sync", "async"] : ["sync", "async"];
    this.mode = h("select", { "aria-label": "How to run", class: "mode" },
      modes.map((m) => h("option", { value: m, text: {
        stream: "stream (SSE)", sync: "sync", async: "async (polling)" }[m] })));
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
        h("span", { class: "muted", text: `PUT /${base}/{id}` })),
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
      field.dispose();
      field.el.replaceWith(fresh.el);
      this.fields[this.fields.indexOf(field)] = fresh;
    }
  }

  // The parts of a form that carries `input` exactly as JSON would, when it holds a file
  // picked or dropped from disk; else null, and the run sends JSON (files as data URLs).
  formParts(input) {
    const parts = [];
    for (const field of this.fields) {
      if (!(field.name in input)) continue;
      const entries = field.formEntries(input[field.name]);
      if (!entries) return null;
      parts.push(...entries);
    }
    return parts.some(([, value]) => value instanceof File) ? parts : null;
  }

  // Tell the file fields how a run would send their files now (their size warnings).
  showSending() {
    const { input } = this.values(); // a field still to fix is judged at the run
    const sending = this.formParts(input) ? "form" : "json";
    for (const field of this.fields) field.setSending(sending);
  }

  // The input as the fields hold it now, and the fields that cannot say (Map field -> why).
  values() {
    const input = {};
    const errors = new Map();
    for (const field of this.fields) {
      try {
        const value = field.value();
        if (value !== undefined) input[field.name] = value;
      } catch (e) {
        if (!(e instanceof FieldError)) throw e;
        errors.set(field, e.message);
      }
    }
    return { input, errors };
  }

  // The input to send, or null after marking the fields to fix.
  collect() {
    const { input, errors } = this.values();
    for (const field of this.fields) {
      if (errors.has(field)) field.showError(errors.get(field));
      else field.clearError();
    }
    return errors.size ? null : input;
  }

  showFieldErrors(detail) {
    // Cog's 422: [{loc: ["body", "input", name], msg}], a list item as "name/index";
    // anything else on top
    const general = [];
    const byField = new Map(); // a field may fail several checks (list items): show them all
    for (const item of Array.isArray(detail) ? detail : []) {
      const loc = item.loc || [];
      const [name, ...place] = loc[1] === "input" ? String(loc[2]).split("/") : [];
      const field = name === undefined ? null : this.fields.find((f) => f.name === name);
      if (field) {
        const where = place.join(".");
        byField.set(field, [...(byField.get(field) || []), where ? `${where}: ${item.msg}` : item.msg]);
      } else {
        general.push(`${loc.slice(1).join(".") || "request"}: ${item.msg}`);
      }
    }
    for (const [field, messages] of byField) field.showError(messages.join("\n"));
    const first = byField.keys().next().value;
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
    const headers = {};
    if (mode === "async") headers.Prefer = "respond-async";
    if (mode === "stream") headers.Accept = "text/event-stream";
    this.current = id;
    this.view.reset(id);
    this.view.el.scrollIntoView({ block: "nearest", behavior: "smooth" });
    this.setRunning(true);
    try {
      const parts = this.formParts(input);
      let body;
      if (parts) {
        body = formData(parts); // the browser sets the Content-Type and its boundary
        this.view.setRequest(this.curlFor(path, headers, formArgs(parts), mode));
      } else {
        headers["Content-Type"] = "application/json";
        body = JSON.stringify({ input: await withDataUrls(input) });
        this.view.setRequest(this.curlFor(path, headers, [`--data-binary ${shellQuote(body)}`],
                                          mode));
      }
      const response = await api(path, { method: "PUT", headers, body });
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

  curlFor(path, headers, bodyArgs, mode) {
    const url = new URL(path, location.href).href;
    const parts = [`curl -s${mode === "stream" ? "N" : ""} -X PUT ${shellQuote(url)}`];
    for (const [k, v] of Object.entries(headers)) parts.push(`-H ${shellQuote(`${k}: ${v}`)}`);
    // the token itself stays out of the clipboard: the shell fills it in
    if (hasToken()) parts.push('-H "Authorization: Bearer $COGSERVE_AUTH_TOKEN"');
    parts.push(...bodyArgs);
    return parts.join(" \\\n  ");
  }

  async poll(id, first) {
    this.view.render(first);
    let prediction = first;
    while (!FINAL_STATUSES.includes(prediction.status)) {
      await sleep(POLL_MS);
      const response = await api(`${this.base}/${encodeURIComponent(id)}`);
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
      const response = await api(`${this.base}/${encodeURIComponent(id)}/cancel`,
                                   { method: "POST" });
      if (response.ok) return;
      if (response.status !== 404) {
        this.view.fail(`Cancel answered ${response.status}: ${errorText(await readJSON(response), response)}`);
        return;
      }
      await sleep(100);
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
    const response = await api(`${this.base}/${encodeURIComponent(id)}`);
    const answer = await readJSON(response);
    if (!response.ok) {
      this.view.setStatus("unknown");
      this.view.fail(`GET /${this.base}/${id} answered ${response.status}: ${errorText(answer, response)}`);
      return;
    }
    this.view.render(answer);
    if (!FINAL_STATUSES.includes(answer.status)) {
      this.current = id;
      this.setRunning(true);
      try { await this.poll(id, answer); } finally { this.setRunning(false); }
    }
  }
}
