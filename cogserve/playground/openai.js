// The OpenAI API at /v1 of a language or image model: its base URL and a client snippet
// to paste, built from docs/playground.json (`openai` is null with --no-openai; its
// `shape` is "none" for a model of neither shape, which /v1 does not serve).
import { hasToken } from "./api.js";
import { h } from "./dom.js";
import { copyText } from "./mcp.js";

export function openaiSection(config) {
  const api = config.openai;
  if (!api || (api.shape !== "language" && api.shape !== "image")) return null;
  // relative to the page, so a path prefix in front of the server is kept
  const url = new URL(api.path.replace(/^\//, ""), new URL(".", location.href)).href;
  const name = JSON.stringify(config.model_name);
  // the token's name, never the token
  const key = hasToken() ? 'os.environ["COGSERVE_AUTH_TOKEN"]' : '"unused"';
  const call = api.shape === "language"
    ? `for chunk in client.chat.completions.create(\n        model=${name}, stream=True,\n` +
      `        messages=[{"role": "user", "content": "Hello"}]):\n` +
      `    print(chunk.choices[0].delta.content or "", end="", flush=True)\n`
    : `image = client.images.generate(model=${name}, prompt="a red fox",\n` +
      `                               response_format="b64_json")\n` +
      `print(len(image.data), "image(s)")\n`;
  const text = `import os\n\nfrom openai import OpenAI  # pip install openai\n\n` +
    `client = OpenAI(base_url=${JSON.stringify(url)}, api_key=${key})\n` + call;
  const pre = h("pre", { class: "json", "data-testid": "openai-snippet", text });
  const copy = h("button", { type: "button", class: "ghost small", text: "Copy code",
                             onclick: () => copyText(pre, copy, "Copy code") });
  const routes = api.shape === "language" ? "/chat/completions and /completions"
    : "/images/generations";
  return h("details", { class: "card mcp", id: "openai" },
    h("summary", {}, h("h2", { text: "Use it from an OpenAI client" }),
      h("code", { class: "muted", "data-testid": "openai-url", text: url })),
    h("div", { class: "mcp-body" },
      h("p", { text: `The OpenAI API at this base URL (${routes}, and /models): each call ` +
                     "is a prediction of this model. With the official SDK:" }),
      h("div", { class: "row" }, copy), pre));
}
