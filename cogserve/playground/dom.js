// Small DOM, formatting and HTTP helpers shared by the playground's modules.
export function h(tag, attrs, ...children) {
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

export function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB"];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

export function formatSeconds(s) {
  if (s === null || s === undefined || Number.isNaN(s)) return "";
  return s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(2)} s`;
}

export function newId() {
  const bytes = new Uint8Array(10);
  crypto.getRandomValues(bytes);
  return "pg-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export async function readJSON(response) {
  const text = await response.text();
  try { return JSON.parse(text); } catch { return { error: text || response.statusText }; }
}

export function errorText(body, response) {
  if (body && typeof body.error === "string") return body.error;
  if (body && typeof body.detail === "string") return body.detail;
  return `${response.status} ${response.statusText}`;
}

export function shellQuote(s) {
  return "'" + s.replace(/'/g, "'\\''") + "'";
}

export function sleep(ms) {
  return new Promise((resolveSleep) => setTimeout(resolveSleep, ms));
}
