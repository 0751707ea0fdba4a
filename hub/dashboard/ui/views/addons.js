// Add-ons: the add-on definitions (ClusterManagementAddOns) and a clusters × add-ons matrix of
// ManagedClusterAddOn health. Each cell has the health word, not colour alone, and the config refs and
// version. The matrix renders at most MAX_ROWS clusters; the filter narrows by cluster name.
import { h, fill, badge, accessText, natural, empty } from "../dom.js";
import { touches } from "../store.js";

const MAX_ROWS = 300;
const prefs = { filter: "" };

export function addonsView(store) {
  const addons = store.map("addons");
  const defs = store.map("addondefs");
  let frame = 0;
  let known = new Set(); // cluster names in the last matrix

  const count = h("p.count");
  const access = h("p#addons-access.notice", { role: "note", hidden: true });
  const defsBox = h("div.addon-defs");
  const filter = h("input#addon-filter", { type: "search", placeholder: "cluster name", autocomplete: "off", spellcheck: "false" });
  filter.value = prefs.filter;
  const matrixBox = h("div.table-wrap.matrix-wrap", { tabindex: "0", role: "region", "aria-label": "Add-on matrix, scrollable" });
  const more = h("p.hint", { hidden: true });
  const el = h(
    "section.view-addons",
    { "aria-labelledby": "addons-heading" },
    h("div.view-head", null, h("h1#addons-heading", null, "Add-ons"), count),
    access,
    h("h2", null, "Definitions"),
    defsBox,
    h("h2#matrix-heading", null, "Health by cluster"),
    h(
      "div.toolbar",
      { role: "search", "aria-label": "Filter the matrix" },
      h("div.field.grow", null, h("label", { for: "addon-filter" }, "Cluster"), filter),
    ),
    matrixBox,
    more,
  );

  function addonNames() {
    const names = new Set(defs.keys());
    for (const a of addons.values()) names.add(a.name);
    return Array.from(names).sort(natural);
  }

  function renderDefs() {
    const byName = new Map();
    for (const a of addons.values()) {
      const c = byName.get(a.name) || { total: 0, healthy: 0, unhealthy: 0 };
      c.total++;
      if (a.health === "Healthy") c.healthy++;
      if (a.health === "Unhealthy") c.unhealthy++;
      byName.set(a.name, c);
    }
    const names = addonNames();
    if (!names.length) return fill(defsBox, empty("No add-ons."));
    fill(
      defsBox,
      h(
        "ul.def-cards",
        null,
        names.map((n) => {
          const d = defs.get(n) || { name: n };
          const c = byName.get(n) || { total: 0, healthy: 0, unhealthy: 0 };
          return h(
            "li.card.def-card",
            { "data-addondef": n },
            h("h3", null, d.displayName && d.displayName !== n ? `${d.displayName} ` : "", h("code", null, n)),
            h(
              "p",
              null,
              `${c.healthy} of ${c.total} healthy`,
              c.unhealthy ? h("span.tone-text-bad", null, ` · ${c.unhealthy} unhealthy`) : null,
            ),
            d.installStrategy ? h("p.muted", null, `Install: ${d.installStrategy}`) : null,
            (d.defaultConfigs || []).length
              ? h("p.muted", null, "Default configs: ", d.defaultConfigs.map((x) => h("span.chip", null, configText(x))))
              : null,
          );
        }),
      ),
    );
  }

  function renderMatrix() {
    const names = addonNames();
    const byCluster = new Map();
    for (const a of addons.values()) {
      let m = byCluster.get(a.cluster);
      if (!m) byCluster.set(a.cluster, (m = new Map()));
      m.set(a.name, a);
    }
    // Clusters with no add-on are listed too, so a missing add-on is visible.
    for (const c of store.map("clusters").values()) if (!byCluster.has(c.name)) byCluster.set(c.name, new Map());
    known = new Set(byCluster.keys());
    const f = prefs.filter.trim().toLowerCase();
    const clusters = Array.from(byCluster.keys())
      .filter((c) => !f || c.toLowerCase().includes(f))
      .sort(natural);
    const shown = clusters.slice(0, MAX_ROWS);
    more.hidden = clusters.length <= MAX_ROWS;
    more.textContent = `Showing ${MAX_ROWS} of ${clusters.length} clusters; filter by name to see others.`;
    count.textContent = `${addons.size} add-on ${addons.size === 1 ? "instance" : "instances"} on ${byCluster.size} clusters`;

    if (!names.length) {
      fill(matrixBox, empty("No add-ons installed."));
      return;
    }
    const table = h(
      "table#addon-matrix.grid.matrix",
      { "aria-labelledby": "matrix-heading" },
      h("thead", null, h("tr", null, h("th", { scope: "col" }, "Cluster"), names.map((n) => h("th", { scope: "col" }, n)))),
      h(
        "tbody",
        null,
        shown.map((c) => {
          const m = byCluster.get(c);
          return h(
            "tr",
            { "data-addon-row": c },
            h("th", { scope: "row" }, c),
            names.map((n) => cell(c, n, m.get(n))),
          );
        }),
      ),
    );
    fill(matrixBox, table);
    if (!shown.length) matrixBox.append(empty("No cluster matches the filter."));
  }

  function renderAccess() {
    const text = [accessText(store.access, "addons", "add-ons"), accessText(store.access, "addondefs", "add-on definitions")]
      .filter(Boolean)
      .join(" ");
    access.textContent = text;
    access.hidden = !text;
  }

  function all() {
    renderAccess();
    renderDefs();
    renderMatrix();
  }

  // Deltas can come ten times a second; the matrix re-renders at most once a frame.
  function schedule() {
    if (frame) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      all();
    });
  }

  filter.addEventListener("input", () => {
    prefs.filter = filter.value;
    renderMatrix();
  });

  return {
    el,
    mount: all,
    update(ev) {
      if (ev.type === "hello") return;
      if (ev.type === "snapshot") return all();
      // A cluster's own changes do not show here; its arrival or removal adds or removes a row.
      const d = ev.deleted.clusters, c = ev.changed.clusters;
      if (touches(ev, "addons", "addondefs") || (d && d.size) || (c && Array.from(c).some((k) => !known.has(k)))) schedule();
    },
    unmount() {
      cancelAnimationFrame(frame);
      frame = 0;
    },
  };
}

function configText(x) {
  const ref = [x.group, x.resource].filter(Boolean).join("/");
  const name = [x.namespace, x.name].filter(Boolean).join("/");
  return `${ref}${name ? " " + name : ""}`;
}

function cell(cluster, addon, a) {
  if (!a) return h("td.cell-none", null, h("span.muted", null, "not installed"));
  const health = a.health || "Unknown";
  const configs = (a.configs || []).map((c) => {
    const sync = c.applied && c.desired && c.applied !== c.desired ? " (applying)" : "";
    return `${configText(c)}${sync}`;
  });
  // version is the AddOnTemplate or WasmPlugin the add-on runs (what flotilla get addons shows).
  const secondary = [a.version ? `version ${a.version}` : "", configs.join(", ")].filter(Boolean).join(" · ");
  const why = [a.reason, a.message].filter(Boolean).join(": ");
  return h(
    `td.cell-health`,
    {
      "data-addon-cell": `${cluster}/${addon}`,
      "data-health": health,
      title: [`${addon} on ${cluster}: ${health}`, why, configs.length ? "Configs: " + configs.join(", ") : "", a.installNamespace ? `Namespace: ${a.installNamespace}` : ""]
        .filter(Boolean)
        .join("\n"),
    },
    badge(health),
    secondary ? h("span.cell-sub", null, secondary) : null,
    health !== "Healthy" && why ? h("span.cell-why", null, why) : null,
  );
}
