// The model as an MCP tool: where /mcp is and a client config to paste, built from
// docs/playground.json (`mcp` is null when the server runs with --no-mcp).
import { hasToken } from "./api.js";
import { h } from "./dom.js";

export function mcpSection(config) {
  const mcp = config.mcp;
  if (!mcp) return null;
  // relative to the page, so a path prefix in front of the server is kept
  const url = new URL(mcp.path.replace(/^\//, ""), new URL(".", location.href)).href;
  const body = h("div", { class: "mcp-body" });
  const section = h("details", { class: "card mcp", id: "mcp" },
    h("summary", {}, h("h2", { text: "Use it from an MCP client" }),
      h("code", { class: "muted", "data-testid": "mcp-url", text: url })),
    body);
  if (!mcp.installed) {
    body.append(h("p", { text: "This server has no MCP SDK, so /mcp answers 501. Install it " +
                                "and restart the server:" }),
                h("pre", { class: "curl", text: mcp.install }));
    return section;
  }
  const server = { type: "http", url };
  // the token's name, never the token: clients expand ${VAR}, shells $VAR
  if (hasToken()) server.headers = { Authorization: "Bearer ${COGSERVE_AUTH_TOKEN}" };
  const text = JSON.stringify({ mcpServers: { [config.model_name]: server } }, null, 2);
  const pre = h("pre", { class: "json", "data-testid": "mcp-config", text });
  const copy = h("button", { type: "button", class: "ghost small", text: "Copy config",
                             onclick: () => copyText(pre, copy, "Copy config") });
  body.append(
    h("p", { text: "Streamable HTTP at this URL: one tool per entry point, named after the " +
                   "model, taking its inputs. Add it to a client's MCP servers (Claude Code, " +
                   "Cursor, VS Code and the mcp SDK's clients take a URL):" }),
    h("div", { class: "row" }, copy), pre,
    h("pre", { class: "curl", text: `claude mcp add --transport http ${config.model_name} ${url}` +
                                    (hasToken() ? ' --header "Authorization: Bearer $COGSERVE_AUTH_TOKEN"' : "") }));
  return section;
}

export async function copyText(pre, button, label) {
  try {
    await navigator.clipboard.writeText(pre.textContent);
  } catch {
    // not a secure context (a LAN address): select the text for Ctrl-C instead
    const range = document.createRange();
    range.selectNodeContents(pre);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
  }
  button.textContent = "Copied";
  setTimeout(() => { button.textContent = label; }, 1500);
}
