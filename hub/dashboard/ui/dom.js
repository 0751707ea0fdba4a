// Small DOM helpers shared by the views. Text always goes through textContent (never innerHTML), so
// names, labels and messages from the cluster cannot inject markup.

// h("tag.class#id", {attr: value, onclick: fn, dataset...}, ...children)
export function h(spec, attrs, ...children) {
  const m = /^([a-z0-9-]+)?((?:[.#][\w-]+)*)$/i.exec(spec);
  const el = document.createElement((m && m[1]) || "div");
  if (m && m[2]) {
    for (const part of m[2].match(/[.#][\w-]+/g)) {
      if (part[0] === ".") el.classList.add(part.slice(1));
      else el.id = part.slice(1);
    }
  }
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
      else if (k === "text") el.textContent = v;
      else if (k === "class") el.className = v;
      else el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// replace the children of el.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// Tones map a state word to a colour class; the word itself is always shown too.
const TONES = {
  True: "ok", Healthy: "ok", Succeeded: "ok", Loaded: "ok", Live: "ok",
  False: "bad", Unhealthy: "bad", Failed: "bad", Rejected: "bad",
  TimeOut: "warn", Degraded: "warn",
  Progressing: "info", Rolling: "info", ToApply: "neutral", Skip: "muted",
  Unknown: "neutral", "": "neutral",
};
export function tone(word) {
  return TONES[word] || "neutral";
}

// badge: a coloured pill with a shape mark and the state word (never colour alone).
export function badge(word, label) {
  const w = word || "Unknown";
  return h(`span.badge.tone-${tone(word)}`, null, h("span.mark", { "aria-hidden": "true" }), label || w);
}

// available shows a condition status of Available as a word a person reads.
export function availableWord(s) {
  return s === "True" ? "Available" : s === "False" ? "Unavailable" : "Unknown";
}

const units = [
  ["d", 86400],
  ["h", 3600],
  ["m", 60],
  ["s", 1],
];
// ago("2026-01-01T00:00:00Z") -> "12s ago"; "" -> "—".
export function ago(iso, now = Date.now()) {
  if (!iso) return "—";
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "—";
  let s = Math.round((now - t) / 1000);
  const future = s < 0;
  s = Math.abs(s);
  if (s < 2) return "just now";
  for (const [u, n] of units) {
    if (s >= n) {
      const v = Math.floor(s / n);
      return future ? `in ${v}${u}` : `${v}${u} ago`;
    }
  }
  return "just now";
}

// timeEl: a <time> the page's ticker keeps current (see app.js refreshTimes).
export function timeEl(iso, cls) {
  const el = h("time" + (cls ? "." + cls : ""), iso ? { datetime: iso, title: iso } : null, ago(iso));
  return el;
}

export function refreshTimes(root, now = Date.now()) {
  for (const el of root.querySelectorAll("time[datetime]")) {
    const t = ago(el.getAttribute("datetime"), now);
    if (el.textContent !== t) el.textContent = t;
  }
}

// accessNotice describes what part of a KIND this viewer sees (design: access per KIND).
export function accessText(access, kind, noun) {
  const a = access && access[kind];
  if (!a) return "";
  const parts = [];
  if (a.error) parts.push(`Cannot watch ${noun}: ${a.error}.`);
  if (!a.allNamespaces) {
    if (a.namespaces && a.namespaces.length) parts.push(`Showing ${noun} in ${list(a.namespaces)} only.`);
    else if (!a.error && !(a.denied && a.denied.length)) parts.push(`No access to ${noun}.`);
  }
  if (a.denied && a.denied.length) parts.push(`No access to ${noun} in ${list(a.denied)}.`);
  return parts.join(" ");
}

function list(xs) {
  return xs.join(", ");
}

export function accessNotice(id, access, kind, noun) {
  const text = accessText(access, kind, noun);
  return h("p.notice" + (id ? "#" + id : ""), { role: "note", hidden: !text }, text);
}

export function empty(text) {
  return h("p.empty", null, text);
}

// cmp compares strings quickly (no locale collation: 5,000 rows sort in a few ms).
export function cmp(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

// natural order for names like cluster-2 < cluster-10.
const collator = new Intl.Collator("en", { numeric: true, sensitivity: "base" });
export const natural = collator.compare;

export function eventsList(events) {
  if (!events || !events.length) return empty("No events.");
  return h(
    "ul.events",
    null,
    events.map((e) =>
      h(
        "li",
        { "data-event-reason": e.reason },
        h(`span.ev-type.tone-${e.type === "Warning" ? "warn" : "neutral"}`, null, e.type || "Normal"),
        " ",
        h("strong", null, e.reason || ""),
        e.count > 1 ? h("span.muted", null, ` ×${e.count}`) : null,
        " ",
        timeEl(e.time, "muted"),
        h("div.ev-msg", null, e.message || ""),
      ),
    ),
  );
}

export function conditionsTable(conds, caption) {
  if (!conds || !conds.length) return empty("No conditions.");
  return h(
    "table.grid.compact",
    null,
    caption ? h("caption", null, caption) : null,
    h("thead", null, h("tr", null, ["Type", "Status", "Reason", "Message", "Since"].map((c) => h("th", { scope: "col" }, c)))),
    h(
      "tbody",
      null,
      conds.map((c) =>
        h(
          "tr",
          { "data-condition": c.type, "data-status": c.status },
          h("th", { scope: "row" }, c.type),
          h("td", null, badge(c.status)),
          h("td", null, c.reason || ""),
          h("td.wrap", null, c.message || ""),
          h("td", null, timeEl(c.time)),
        ),
      ),
    ),
  );
}

// fetchJSON GETs a relative URL; a JSON {"error"} body becomes the thrown message, the HTTP
// status its status.
export async function fetchJSON(url, signal) {
  const res = await fetch(url, { signal, headers: { Accept: "application/json" } });
  let body = null;
  try {
    body = await res.json();
  } catch {
    /* not JSON */
  }
  if (!res.ok) {
    const err = new Error((body && body.error) || `${res.status} ${res.statusText}`);
    err.status = res.status;
    throw err;
  }
  return body;
}

export function enc(s) {
  return encodeURIComponent(s);
}
