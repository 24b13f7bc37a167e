// The page: theme, health, the schema, and one tab per thing the model can do.
// Plain JavaScript modules with no dependencies and no build step, so they ship inside
// the Python package and work offline. Values from the model are only ever put into the
// page as text (textContent) or as media/link URLs, never as HTML.
import { api } from "./api.js";
import { h, sleep } from "./dom.js";
import { mcpSection } from "./mcp.js";
import { openaiSection } from "./openai.js";
import { RunPanel } from "./runs.js";
import { V2Panel } from "./v2.js";

const THEME_KEY = "cogserve-playground-theme";

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
    const response = await api("openapi.json");
    if (response.ok) return response.json();
    const health = await watchHealth();
    if (health && ["SETUP_FAILED", "DEFUNCT"].includes(health.status)) return null;
    await sleep(1000);
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
  const config = await (await api("docs/playground.json")).json();
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
  const mcp = mcpSection(config);
  if (mcp) document.getElementById("panels").append(mcp); // below the tabs' panels
  const openai = openaiSection(config);
  if (openai) document.getElementById("panels").append(openai);
  document.body.dataset.ready = "true"; // the form is built (tests wait for this)
}

main().catch((e) => notice(`The playground could not start: ${e.message}`));
