// Rollouts: one section per ManifestWorkReplicaSet and per add-on (ClusterManagementAddOn), and in
// it, per placement, the decision groups in order as rows of cluster chips coloured by state (the
// state word is in each chip's text too). A chip opens dialog#work-detail with the cluster's
// ManifestWork (api/works/{ns}/{name}): conditions and status feedback.
import { h, fill, badge, tone, timeEl, ago, accessText, natural, empty, conditionsTable, fetchJSON, enc } from "../dom.js";
import { touches } from "../store.js";

const prefs = { filter: "" };
const CHIP_CAP = 100; // chips per group before a "show all" button: a group can hold thousands
const expanded = new Set(); // rollout|placement|group keys the person expanded

export function rolloutKey(r) {
  return r.kind === "ClusterManagementAddOn" ? `addon/${r.name}` : `${r.namespace}/${r.name}`;
}

function kindLabel(r) {
  return r.kind === "ClusterManagementAddOn" ? "Add-on" : "ManifestWorkReplicaSet";
}

export function rolloutsView(store) {
  const rollouts = store.map("rollouts");
  const sections = new Map(); // store key -> section element
  let opener = null; // {rollout, placement, cluster} of the chip that opened the dialog
  let workAborter = null;

  const count = h("p.count");
  const access = h("p#rollouts-access.notice", { role: "note", hidden: true });
  const list = h("div.rollouts");
  const emptyMsg = h("p.empty", { hidden: true });
  const filter = h("input#rollout-filter", {
    type: "search",
    placeholder: "rollout or cluster name",
    autocomplete: "off",
    spellcheck: "false",
  });
  filter.value = prefs.filter;

  const dialogBody = h("div.dialog-body");
  const dialogTitle = h("h2#work-detail-title", null, "ManifestWork");
  const dialog = h(
    "dialog#work-detail",
    { "aria-labelledby": "work-detail-title" },
    h(
      "div.dialog-head",
      null,
      dialogTitle,
      h("button.btn.close", { type: "button", onclick: () => dialog.close(), "aria-label": "Close" }, "Close"),
    ),
    dialogBody,
  );
  dialog.addEventListener("close", () => {
    if (workAborter) workAborter.abort();
    // The chip may have been re-rendered by a delta meanwhile: find it again by its attributes.
    const o = opener;
    opener = null;
    if (!o) return;
    const sel =
      `section[data-rollout="${CSS.escape(o.rollout)}"] [data-rollout-placement="${CSS.escape(o.placement)}"] ` +
      `button[data-rollout-cluster="${CSS.escape(o.cluster)}"]`;
    const chip = el.querySelector(sel);
    if (chip) chip.focus();
  });
  // A click on the backdrop (outside the box) closes too.
  dialog.addEventListener("click", (e) => {
    if (e.target === dialog) dialog.close();
  });

  const el = h(
    "section.view-rollouts",
    { "aria-labelledby": "rollouts-heading" },
    h("div.view-head", null, h("h1#rollouts-heading", null, "Rollouts"), count),
    access,
    h(
      "div.toolbar",
      { role: "search", "aria-label": "Filter rollouts" },
      h("div.field.grow", null, h("label", { for: "rollout-filter" }, "Filter"), filter),
      legend(),
    ),
    list,
    emptyMsg,
    dialog,
  );

  function visible(r) {
    const f = prefs.filter.trim().toLowerCase();
    if (!f) return true;
    if (rolloutKey(r).toLowerCase().includes(f)) return true;
    for (const p of r.placements || [])
      for (const g of p.groups || []) for (const c of g.clusters || []) if (c.cluster.toLowerCase().includes(f)) return true;
    return false;
  }

  function ordered() {
    return Array.from(rollouts.values()).sort(
      (a, b) => natural(a.kind === "ClusterManagementAddOn" ? "1" : "0", b.kind === "ClusterManagementAddOn" ? "1" : "0") || natural(rolloutKey(a), rolloutKey(b)),
    );
  }

  function openWork(r, p, c) {
    opener = { rollout: rolloutKey(r), placement: p.name, cluster: c.cluster };
    dialogTitle.textContent = c.work ? `ManifestWork ${c.work}` : `Cluster ${c.cluster}`;
    const facts = h(
      "p.facts",
      null,
      badge(c.state),
      ` ${c.cluster} in ${kindLabel(r)} ${rolloutKey(r)}, placement ${p.name}`,
      c.since ? h("span.muted", null, " · since ", timeEl(c.since)) : null,
      c.why ? h("span.block", null, c.why) : null,
    );
    if (!c.work) {
      fill(dialogBody, facts, empty("This cluster has no ManifestWork yet."));
    } else {
      fill(dialogBody, facts, h("p.muted", null, "Loading the ManifestWork…"));
      if (workAborter) workAborter.abort();
      const ac = (workAborter = new AbortController());
      const [ns, ...rest] = c.work.split("/");
      fetchJSON(`api/works/${enc(ns)}/${enc(rest.join("/"))}`, ac.signal)
        .then((w) => fill(dialogBody, facts, workDetail(w)))
        .catch((err) => {
          if (!ac.signal.aborted) fill(dialogBody, facts, h("p.notice.tone-bad", { role: "note" }, `Cannot read ${c.work}: ${err.message}`));
        });
    }
    if (!dialog.open) dialog.showModal();
  }

  function chip(r, p, c) {
    const state = c.state || "ToApply";
    const title = `${c.cluster}: ${state}${c.why ? " — " + c.why : ""}${c.since ? ` (since ${ago(c.since)})` : ""}`;
    return h(
      `button.cluster-chip.tone-${tone(state)}`,
      {
        type: "button",
        "data-rollout-cluster": c.cluster,
        "data-state": state,
        "data-since": c.since || "",
        title,
        onclick: () => openWork(r, p, c),
      },
      h("span.chip-line", null, h("span.mark", { "aria-hidden": "true" }), h("span.chip-name", null, c.cluster), h("span.chip-state", null, state)),
      c.why ? h("span.chip-why", null, c.why) : null,
    );
  }

  function chipRow(r, p, g) {
    const all = g.clusters || [];
    const id = `${rolloutKey(r)}|${p.name}|${g.index}`;
    const capped = all.length > CHIP_CAP && !expanded.has(id);
    const row = h("div.chip-row", null, (capped ? all.slice(0, CHIP_CAP) : all).map((c) => chip(r, p, c)));
    if (capped) {
      const counts = {};
      for (const c of all.slice(CHIP_CAP)) counts[c.state] = (counts[c.state] || 0) + 1;
      const more = Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(", ");
      row.append(
        h(
          "button.btn.more-chips",
          {
            type: "button",
            onclick: (e) => {
              expanded.add(id);
              const next = chipRow(r, p, g);
              e.currentTarget.closest(".chip-row").replaceWith(next);
              const first = next.querySelectorAll("button[data-rollout-cluster]")[CHIP_CAP];
              if (first) first.focus();
            },
          },
          `Show ${all.length - CHIP_CAP} more (${more})`,
        ),
      );
    }
    return row;
  }

  function placementBlock(r, p) {
    return h(
      "div.rollout-placement",
      { "data-rollout-placement": p.name },
      h(
        "h3",
        null,
        h("span.muted", null, "Placement "),
        p.name,
        p.strategy ? h("span.tag.tone-neutral", null, p.strategy) : null,
        p.phase ? badge(phaseTone(p.phase), p.phase) : null,
      ),
      p.message ? h("p.muted", null, p.message) : null,
      p.error ? h("p.notice.tone-bad", { role: "note" }, p.error) : null,
      (p.groups || []).length
        ? h(
            "ol.rollout-groups",
            null,
            p.groups.map((g) =>
              h(
                "li.rollout-group",
                { "data-group": String(g.index), "data-state": g.state || "ToApply" },
                h(
                  "div.group-head",
                  null,
                  h("span.group-label", null, `Group ${g.index}`, g.name ? h("span.muted", null, ` · ${g.name}`) : null),
                  badge(g.state || "ToApply"),
                ),
                chipRow(r, p, g),
              ),
            ),
          )
        : empty("No clusters chosen yet."),
    );
  }

  function section(r) {
    const key = rolloutKey(r);
    const s = r.summary || {};
    const headId = `rollout-${key.replace(/[^\w-]/g, "_")}`;
    const total = s.total || 0;
    const pct = (n) => (total ? `${(100 * (n || 0)) / total}%` : "0%");
    return h(
      "section.rollout.card",
      { "data-rollout": key, "data-phase": r.phase || "", "aria-labelledby": headId },
      h(
        "div.rollout-head",
        null,
        h("h2", { id: headId }, h("span.tag.tone-neutral", null, kindLabel(r)), " ", key),
        h("div.rollout-badges", null, badge(phaseTone(r.phase), r.phase || "Unknown"), r.rolledBack ? badge("Failed", "Rolled back") : null),
      ),
      r.message ? h("p.rollout-msg", null, r.message) : null,
      total
        ? h(
            "div.progress-line",
            null,
            h(
              "div.bar",
              { "aria-hidden": "true" },
              seg("ok", pct(s.available)),
              seg("info", pct(s.progressing)),
              seg("bad", pct(s.degraded)),
            ),
            h(
              "p.stats",
              null,
              `${total} clusters · ${s.applied || 0} applied · ${s.available || 0} available · ${s.progressing || 0} progressing · ${s.degraded || 0} degraded`,
            ),
          )
        : null,
      (r.conditions || []).length
        ? h("details.conditions", null, h("summary", null, `Conditions (${r.conditions.length})`), conditionsTable(r.conditions))
        : null,
      (r.placements || []).length ? (r.placements || []).map((p) => placementBlock(r, p)) : empty("No placements."),
    );
  }

  function renderAll() {
    sections.clear();
    const rs = ordered();
    const shown = [];
    for (const r of rs) {
      const s = section(r);
      s.hidden = !visible(r);
      if (!s.hidden) shown.push(r);
      sections.set(r.key, s);
    }
    fill(list, Array.from(sections.values()));
    renderMeta(rs.length, shown.length);
  }

  function renderMeta(total, shown) {
    count.textContent = shown === total ? `${total} ${total === 1 ? "rollout" : "rollouts"}` : `${shown} of ${total} rollouts`;
    emptyMsg.hidden = shown > 0;
    emptyMsg.textContent = total ? "No rollout matches the filter." : "No rollouts: no ManifestWorkReplicaSets or add-on rollouts to show.";
    const text = [accessText(store.access, "rollouts", "rollouts")].filter(Boolean).join(" ");
    access.textContent = text;
    access.hidden = !text;
  }

  // update replaces only the sections whose rollout changed, keeping focus on a chip that was focused.
  function renderChanged(ev) {
    const changed = ev.changed.rollouts || new Set();
    const deleted = ev.deleted.rollouts || new Set();
    const structural = deleted.size > 0 || Array.from(changed).some((k) => !sections.has(k));
    const active = document.activeElement;
    let refocus = null;
    if (active && active.dataset && active.dataset.rolloutCluster && list.contains(active)) {
      const sec = active.closest("section[data-rollout]");
      const pl = active.closest("[data-rollout-placement]");
      refocus = { rollout: sec.dataset.rollout, placement: pl.dataset.rolloutPlacement, cluster: active.dataset.rolloutCluster };
    }
    if (structural) renderAll();
    else {
      for (const k of changed) {
        const r = rollouts.get(k);
        const old = sections.get(k);
        if (!r || !old) continue;
        // Keep the section element (an observer on it stays attached); replace what is inside.
        const s = section(r);
        for (const name of ["data-rollout", "data-phase", "aria-labelledby"]) old.setAttribute(name, s.getAttribute(name));
        old.replaceChildren(...s.childNodes);
        old.hidden = !visible(r);
      }
      const rs = Array.from(rollouts.values());
      renderMeta(rs.length, rs.filter(visible).length);
    }
    if (refocus && !list.contains(document.activeElement)) {
      const chipEl = list.querySelector(
        `section[data-rollout="${CSS.escape(refocus.rollout)}"] [data-rollout-placement="${CSS.escape(refocus.placement)}"] button[data-rollout-cluster="${CSS.escape(refocus.cluster)}"]`,
      );
      if (chipEl) chipEl.focus({ preventScroll: true });
    }
  }

  filter.addEventListener("input", () => {
    prefs.filter = filter.value;
    let shown = 0;
    for (const [k, s] of sections) {
      const r = rollouts.get(k);
      s.hidden = !(r && visible(r));
      if (!s.hidden) shown++;
    }
    renderMeta(rollouts.size, shown);
  });

  return {
    el,
    mount() {
      renderAll();
    },
    update(ev) {
      if (ev.type === "hello") return;
      if (ev.type === "snapshot") return renderAll();
      if (touches(ev, "rollouts")) renderChanged(ev);
    },
    unmount() {
      if (workAborter) workAborter.abort();
      if (dialog.open) dialog.close();
    },
  };
}

// phaseTone maps a rollout phase (Progressing, Succeeded, Failed, ...) to a state word tone() knows.
function phaseTone(phase) {
  switch (phase) {
    case "Succeeded":
    case "Complete":
    case "Completed":
    case "AsExpected":
      return "Succeeded";
    case "Failed":
    case "Degraded":
    case "RolledBack":
      return "Failed";
    case "TimeOut":
      return "TimeOut";
    case "Progressing":
    case "Rolling":
    case "Processing":
      return "Progressing";
    default:
      return "Unknown";
  }
}

// seg is one part of the progress bar; its width goes through CSSOM, which the server's
// Content-Security-Policy (style-src 'self', no inline style attributes) allows.
function seg(t, width) {
  const el = h(`span.seg.tone-${t}`);
  el.style.width = width;
  return el;
}

function legend() {
  return h(
    "ul.legend",
    { "aria-label": "Cluster states" },
    ["ToApply", "Progressing", "Succeeded", "Failed", "TimeOut", "Skip"].map((s) =>
      h("li", null, h(`span.legend-dot.tone-${tone(s)}`, { "aria-hidden": "true" }), s),
    ),
  );
}

function workDetail(w) {
  const manifests = w.manifests || [];
  return h(
    "div.work",
    null,
    h("h3", null, "Conditions"),
    conditionsTable(w.conditions),
    h("h3", null, `Manifests (${manifests.length})`),
    manifests.length
      ? manifests.map((m) =>
          h(
            "div.manifest",
            { "data-manifest": `${m.kind}/${m.namespace ? m.namespace + "/" : ""}${m.name}` },
            h(
              "h4",
              null,
              h("span.tag.tone-neutral", null, m.kind || m.resource),
              " ",
              m.namespace ? `${m.namespace}/` : "",
              m.name,
              h("span.muted", null, ` ${[m.group, m.version].filter(Boolean).join("/")}`),
            ),
            conditionsTable(m.conditions),
            (m.feedback || []).length
              ? h(
                  "table.grid.compact",
                  null,
                  h("caption", null, "Status feedback"),
                  h("thead", null, h("tr", null, ["Name", "Type", "Value"].map((t) => h("th", { scope: "col" }, t)))),
                  h(
                    "tbody",
                    null,
                    m.feedback.map((f) =>
                      h(
                        "tr",
                        { "data-feedback": f.name },
                        h("th", { scope: "row" }, f.name),
                        h("td", null, f.type || ""),
                        h("td.wrap.mono", null, f.value == null ? "" : typeof f.value === "string" ? f.value : JSON.stringify(f.value)),
                      ),
                    ),
                  ),
                )
              : h("p.muted", null, "No status feedback."),
          ),
        )
      : empty("No manifests."),
  );
}
