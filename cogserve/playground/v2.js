// The V2 tab of a tensor model: its Open Inference Protocol metadata and one inference.
import { api } from "./api.js";
import { errorText, h, readJSON } from "./dom.js";

export class V2Panel {
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
    const response = await api(this.base);
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
    const response = await api(`${this.base}/infer`, {
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
