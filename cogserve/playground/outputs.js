// Outputs rendered by type, and the view of one run: status, output, logs, metrics, curl.
import { formatSeconds, h } from "./dom.js";
import { isFileSchema, resolve } from "./schema.js";

export const FINAL_STATUSES = ["succeeded", "failed", "canceled"];

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

export function renderValue(value, schema, doc, index) {
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

export class OutputView {
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
    this.cancelFrame();
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
    if (FINAL_STATUSES.includes(status)) clearInterval(this.ticker);
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
    this.cancelFrame();
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
    this.chunksChanged = true;
    this.schedule();
  }

  // SSE events are drawn at most once per frame: a fast stream (thousands of tokens and
  // log lines) would otherwise rebuild the output and lay the logs out once per event.
  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = null;
      this.flush();
    });
  }

  flush() {
    if (this.chunksChanged) {
      this.chunksChanged = false;
      this.output.replaceChildren(renderValue(this.chunks, this.outputSchema, this.doc));
    }
    if (this.pendingLogs) {
      const text = this.pendingLogs;
      this.pendingLogs = "";
      this.keepScrolled(() => this.logs.append(text)); // a text node: no copy of what is there
    }
  }

  cancelFrame() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = null;
    this.chunksChanged = false;
    this.pendingLogs = "";
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
    this.pendingLogs = (this.pendingLogs || "") + text;
    this.schedule();
  }

  setLogs(text) {
    if (text !== this.logs.textContent) this.keepScrolled(() => { this.logs.textContent = text; });
  }

  keepScrolled(change) {
    const atBottom = this.logs.scrollTop + this.logs.clientHeight >= this.logs.scrollHeight - 4;
    change();
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
