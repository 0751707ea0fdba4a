// Plugins & policies: the WasmPlugins (ready, reason, digest, events) and the policy ConfigMaps the
// hub loads (state, last good version, rejection events).
import { h, fill, badge, accessText, natural, empty, eventsList, timeEl } from "../dom.js";
import { touches } from "../store.js";

export function pluginsView(store) {
  const plugins = store.map("plugins");
  const policies = store.map("policies");

  const access = h("p#plugins-access.notice", { role: "note", hidden: true });
  const pluginsBox = h("div.table-wrap");
  const policiesBox = h("div.table-wrap");
  const el = h(
    "section.view-plugins",
    { "aria-labelledby": "plugins-heading" },
    h("div.view-head", null, h("h1#plugins-heading", null, "Plugins & policies")),
    access,
    h("h2#wasm-heading", null, "WasmPlugins"),
    pluginsBox,
    h("h2#policies-heading", null, "Policies"),
    h("p.hint", null, "ConfigMaps labelled flotilla.dev/policy=true. The hub keeps running the last good version of a policy it rejects."),
    policiesBox,
  );

  function lastEvent(events) {
    const e = (events || [])[0];
    if (!e) return h("span.muted", null, "—");
    return h("span", { title: e.message || "" }, e.reason, " ", timeEl(e.time, "muted"));
  }

  function eventsCell(events) {
    const n = (events || []).length;
    if (!n) return h("span.muted", null, "None");
    return h("details", null, h("summary", null, `${n} ${n === 1 ? "event" : "events"}`), eventsList(events));
  }

  function renderPlugins() {
    const ps = Array.from(plugins.values()).sort((a, b) => natural(a.name, b.name));
    if (!ps.length) return fill(pluginsBox, empty("No WasmPlugins."));
    fill(
      pluginsBox,
      h(
        "table#plugins-table.grid",
        { "aria-labelledby": "wasm-heading" },
        h("thead", null, h("tr", null, ["Plugin", "Type", "Ready", "Reason", "Message", "Digest", "Events"].map((t) => h("th", { scope: "col" }, t)))),
        h(
          "tbody",
          null,
          ps.map((p) => {
            const ready = p.ready === "True" || p.ready === "False" ? p.ready : "Unknown";
            return h(
              "tr",
              { "data-plugin": p.name, "data-ready": ready },
              h("th", { scope: "row" }, p.name),
              h("td", null, p.type || h("span.muted", null, "—")),
              h("td", null, badge(ready, ready === "True" ? "Ready" : ready === "False" ? "Not ready" : "Unknown")),
              h("td", null, p.reason || ""),
              h("td.wrap", null, p.message || ""),
              h("td.mono", { title: p.digest || "" }, p.digest ? shortDigest(p.digest) : h("span.muted", null, "—")),
              h("td", null, eventsCell(p.events)),
            );
          }),
        ),
      ),
    );
  }

  function renderPolicies() {
    const ps = Array.from(policies.values()).sort((a, b) => natural(a.key, b.key));
    if (!ps.length) return fill(policiesBox, empty("No policy ConfigMaps."));
    fill(
      policiesBox,
      h(
        "table#policies-table.grid",
        { "aria-labelledby": "policies-heading" },
        h("thead", null, h("tr", null, ["Policy", "State", "Last good", "Latest event", "Events"].map((t) => h("th", { scope: "col" }, t)))),
        h(
          "tbody",
          null,
          ps.map((p) => {
            const state = p.state === "Loaded" || p.state === "Rejected" ? p.state : "Unknown";
            return h(
              "tr",
              { "data-policy": p.key, "data-state": state },
              h("th", { scope: "row" }, h("span.ns", null, p.namespace + "/"), p.name),
              h("td", null, badge(state)),
              h("td.mono", { title: p.lastGood || "" }, p.lastGood ? shortDigest(p.lastGood) : h("span.muted", null, "none")),
              h("td", null, lastEvent(p.events)),
              h("td", null, eventsCell(p.events)),
            );
          }),
        ),
      ),
    );
  }

  function renderAccess() {
    const text = [accessText(store.access, "plugins", "WasmPlugins"), accessText(store.access, "policies", "policies")].filter(Boolean).join(" ");
    access.textContent = text;
    access.hidden = !text;
  }

  // Keep open <details> open across a re-render.
  function keepOpen(box, fn) {
    const open = new Set(Array.from(box.querySelectorAll("details[open]")).map((d) => d.closest("tr") && (d.closest("tr").dataset.plugin || d.closest("tr").dataset.policy)));
    fn();
    for (const d of box.querySelectorAll("details")) {
      const tr = d.closest("tr");
      if (tr && open.has(tr.dataset.plugin || tr.dataset.policy)) d.open = true;
    }
  }

  return {
    el,
    mount() {
      renderAccess();
      renderPlugins();
      renderPolicies();
    },
    update(ev) {
      if (ev.type === "hello") return;
      renderAccess();
      if (touches(ev, "plugins")) keepOpen(pluginsBox, renderPlugins);
      if (touches(ev, "policies")) keepOpen(policiesBox, renderPolicies);
    },
  };
}

function shortDigest(d) {
  const m = /^(sha256:)?([0-9a-f]{12})[0-9a-f]*$/i.exec(d);
  return m ? `${m[1] || ""}${m[2]}…` : d;
}
