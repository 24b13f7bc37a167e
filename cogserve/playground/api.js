// Requests to this server. With COGSERVE_AUTH_TOKEN set, every route but the page and
// health answers 401: the page then asks for the token once, keeps it for this browser
// tab (sessionStorage, gone when the tab closes) and sends it as a bearer token.
import { h } from "./dom.js";

const TOKEN_KEY = "cogserve-playground-token";
let pending = null; // one prompt at a time, whichever request met the 401 first

export function hasToken() {
  return Boolean(sessionStorage.getItem(TOKEN_KEY));
}

export async function api(path, options = {}) {
  for (;;) {
    const token = sessionStorage.getItem(TOKEN_KEY);
    const headers = { ...(options.headers || {}) };
    if (token) headers.Authorization = `Bearer ${token}`;
    const response = await fetch(path, { ...options, headers });
    if (response.status !== 401) return response;
    await askForToken(token ? "That token was refused." : "");
  }
}

function askForToken(problem) {
  if (!pending) {
    pending = new Promise((resolveToken) => {
      const box = document.getElementById("auth");
      const input = h("input", { type: "password", autocomplete: "off", id: "auth-token",
                                 "aria-label": "Token" });
      const form = h("form", { class: "row" }, input,
        h("button", { type: "submit", class: "primary", text: "Use token" }));
      form.addEventListener("submit", (e) => {
        e.preventDefault();
        sessionStorage.setItem(TOKEN_KEY, input.value.trim());
        box.hidden = true;
        pending = null;
        resolveToken();
      });
      box.replaceChildren(
        h("div", { text: "This server needs its token (COGSERVE_AUTH_TOKEN) for every request." }),
        problem ? h("div", { class: "field-error", text: problem }) : null, form);
      box.hidden = false;
      input.focus();
    });
  }
  return pending;
}
