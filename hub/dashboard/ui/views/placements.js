// Placements: a table of every Placement the viewer may see; selecting one shows its decisions,
// decision groups, events and the scheduler's explanation (api/placements/{ns}/{name}/explain).
import { h, fill, badge, timeEl, accessText, natural, eventsList, empty, fetchJSON, enc } from "../dom.js";
import { touches } from "../store.js";

const prefs = { selected: "" };

// The explanation is computed on the hub per request (a scheduling pass, Wasm prioritizers): it is
// fetched when the person selects a placement or asks for a refresh, and otherwise, while the
// placement changes, at most this often.
export const EXPLAIN_REFRESH_MS = 15000;

export function placementsView(store) {
  const placements = store.map("placements");
  const explains = new Map(); // key -> {state:"loading"|"ok"|"error", data, error, for: obj}
  let aborter = null;
  let refetchTimer = 0;
  let lastFetch = -Infinity; // performance.now() of the last explanation request

  const access = h("p#placements-access.notice", { role: "note", hidden: true });
  const tbody = h("tbody");
  const table = h(
    "table#placements-table.grid",
    { "aria-labelledby": "placements-heading" },
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        ["Placement", "Requested", "Selected", "Satisfied", "Groups"].map((t) => h("th", { scope: "col" }, t)),
      ),
    ),
    tbody,
  );
  const tableWrap = h("div.table-wrap", null, table);
  const emptyMsg = h("p.empty", { hidden: true }, "No placements to show.");
  const detail = h("section#placement-detail.detail", { "aria-live": "off", tabindex: "-1", "aria-label": "Placement detail" });
  const count = h("p.count");
  const el = h(
    "section.view-placements",
    { "aria-labelledby": "placements-heading" },
    h("div.view-head", null, h("h1#placements-heading", null, "Placements"), count),
    access,
    h(
      "div.split",
      null,
      h("div.split-main", null, tableWrap, emptyMsg, h("p.hint", null, "Select a placement (click, or Enter on a focused row) to see why clusters were chosen.")),
      detail,
    ),
  );

  function sortedPlacements() {
    return Array.from(placements.values()).sort((a, b) => natural(a.key, b.key));
  }

  function select(key, focusDetail) {
    prefs.selected = key;
    for (const tr of tbody.children) {
      if (tr.dataset.placement === key) tr.setAttribute("aria-current", "true");
      else tr.removeAttribute("aria-current");
    }
    loadExplain(key);
    renderDetail();
    if (focusDetail) detail.focus({ preventScroll: true });
  }

  function row(p) {
    const satisfied = p.satisfied === "True" || p.satisfied === "False" ? p.satisfied : "Unknown";
    const tr = h(
      "tr.selectable",
      {
        "data-placement": p.key,
        tabindex: "0",
        "aria-current": p.key === prefs.selected ? "true" : null,
        onclick: () => select(p.key, false),
        onkeydown: (e) => {
          if (e.key === "Enter" || e.key === " ") {
            e.preventDefault();
            select(p.key, true);
          }
        },
      },
      h("th", { scope: "row" }, h("span.ns", null, p.namespace + "/"), h("span.name", null, p.name)),
      h("td.num", null, p.requested == null ? h("span.muted", null, "all") : String(p.requested)),
      h("td.num", null, String(p.selected ?? 0)),
      h(
        "td",
        { title: [p.reason, p.message].filter(Boolean).join(": ") },
        badge(satisfied, satisfied === "True" ? "Satisfied" : satisfied === "False" ? "Not satisfied" : "Unknown"),
      ),
      h("td.num", null, String((p.groups || []).length)),
    );
    return tr;
  }

  function renderList() {
    const ps = sortedPlacements();
    const focused = tbody.contains(document.activeElement) && document.activeElement.dataset.placement;
    fill(tbody, ps.map(row));
    if (focused) {
      const again = tbody.querySelector(`tr[data-placement="${CSS.escape(focused)}"]`);
      if (again) again.focus({ preventScroll: true });
    }
    emptyMsg.hidden = ps.length > 0;
    tableWrap.hidden = ps.length === 0;
    count.textContent = `${ps.length} ${ps.length === 1 ? "placement" : "placements"}`;
    const text = accessText(store.access, "placements", "placements");
    access.textContent = text;
    access.hidden = !text;
  }

  function loadExplain(key) {
    const p = placements.get(key);
    if (!p) return;
    clearTimeout(refetchTimer);
    refetchTimer = 0;
    if (aborter) aborter.abort();
    const ac = (aborter = new AbortController());
    const prev = explains.get(key);
    explains.set(key, { state: "loading", data: prev && prev.data, for: p });
    lastFetch = performance.now();
    fetchJSON(`api/placements/${enc(p.namespace)}/${enc(p.name)}/explain`, ac.signal)
      .then((data) => {
        explains.set(key, { state: "ok", data, for: p });
        if (prefs.selected === key) renderDetail();
      })
      .catch((err) => {
        if (ac.signal.aborted) return;
        // 429: the hub is explaining other placements; keep what was shown and say so.
        if (err.status === 429) explains.set(key, { state: "busy", data: prev && prev.data, for: p });
        else explains.set(key, { state: "error", error: err.message, for: p });
        if (prefs.selected === key) renderDetail();
      });
  }

  function groupOf(p, cluster) {
    for (const g of p.groups || []) if ((g.clusters || []).includes(cluster)) return g;
    return null;
  }

  function renderDetail() {
    const key = prefs.selected;
    const p = key && placements.get(key);
    if (!p) {
      detail.hidden = false;
      fill(detail, h("h2", null, "Placement detail"), empty(key ? `Placement ${key} is gone.` : "No placement selected."));
      return;
    }
    const ex = explains.get(key) || { state: "loading" };
    const data = ex.data || {};
    const scores = data.scores || {};
    const decisions = p.decisions || [];
    const groupLabel = (g) => (g ? (g.name ? `${g.index} · ${g.name}` : String(g.index)) : "—");

    const decisionsTable = decisions.length
      ? h(
          "table.grid.compact",
          null,
          h("caption", null, `Decisions (${decisions.length})`),
          h("thead", null, h("tr", null, ["Cluster", "Group", "Score", "Reason"].map((t) => h("th", { scope: "col" }, t)))),
          h(
            "tbody",
            null,
            decisions.map((d) =>
              h(
                "tr",
                { "data-decision": d.cluster },
                h("th", { scope: "row" }, d.cluster),
                h("td", null, groupLabel(groupOf(p, d.cluster))),
                h("td.num", null, d.cluster in scores ? String(scores[d.cluster]) : "—"),
                h("td.wrap", null, d.reason || ""),
              ),
            ),
          ),
        )
      : h("div", null, h("h3", null, "Decisions"), empty("No cluster chosen."));

    const groups = (p.groups || []).length
      ? h(
          "ol.groups",
          { start: "0" },
          p.groups.map((g) =>
            h(
              "li",
              { "data-decision-group": String(g.index) },
              h("span.group-label", null, `Group ${groupLabel(g)}`),
              h("span.muted", null, ` — ${(g.clusters || []).length} clusters: `),
              (g.clusters || []).map((c) => h("span.chip", null, c)),
            ),
          ),
        )
      : empty("No decision groups.");

    let explain;
    if (ex.state === "loading" && !ex.data) explain = h("p.muted", null, "Loading the scheduler’s explanation…");
    else if (ex.state === "error") explain = h("p.notice.tone-bad", { role: "note" }, `Cannot explain: ${ex.error}`);
    else if (ex.state === "busy")
      explain = h(
        "div",
        null,
        h("p#explain-busy.notice", { role: "note" }, "The hub is busy explaining other placements: busy, try again in a moment (Refresh explanation)."),
        ex.data ? explainBlock(data) : null,
      );
    else explain = explainBlock(data);

    fill(
      detail,
      h(
        "div.detail-head",
        null,
        h("h2", null, p.namespace + "/" + p.name),
        h("button.btn", { type: "button", onclick: () => loadExplain(key) }, "Refresh explanation"),
      ),
      h(
        "p.facts",
        null,
        badge(p.satisfied || "Unknown", p.satisfied === "True" ? "Satisfied" : p.satisfied === "False" ? "Not satisfied" : "Unknown"),
        ` ${p.selected ?? 0} selected of ${p.requested == null ? "all matching" : p.requested} requested`,
        p.reason ? ` · ${p.reason}` : "",
        p.message ? h("span.block.muted", null, p.message) : null,
      ),
      decisionsTable,
      h("h3", null, "Decision groups"),
      groups,
      h("h3", null, "Why"),
      explain,
      h("h3", null, "Events"),
      eventsList(p.events),
    );
  }

  function explainBlock(data) {
    if (data.error) return h("p.notice", { role: "note" }, `Scheduler: ${data.error}`);
    const notChosen = data.notChosen || [];
    const filters = data.filters || [];
    const prios = data.prioritizers || [];
    const allScored = Object.keys(data.scores || {}).sort(natural);
    return h(
      "div.explain",
      null,
      notChosen.length
        ? h(
            "table.grid.compact",
            null,
            h("caption", null, `Not chosen (${notChosen.length})`),
            h("thead", null, h("tr", null, ["Cluster", "Why", "Score"].map((t) => h("th", { scope: "col" }, t)))),
            h(
              "tbody",
              null,
              notChosen.map((n) =>
                h(
                  "tr",
                  { "data-not-chosen": n.cluster },
                  h("th", { scope: "row" }, n.cluster),
                  h("td.wrap", null, n.why || ""),
                  h("td.num", null, n.cluster in (data.scores || {}) ? String(data.scores[n.cluster]) : "—"),
                ),
              ),
            ),
          )
        : h("p.muted", null, "Every candidate cluster was chosen."),
      filters.length
        ? h(
            "div",
            null,
            h("h4", null, "Filters (cumulative)"),
            h(
              "ul.filters",
              null,
              // Each stage is cumulative (OCM names it "Predicate,TaintToleration"): the clusters
              // that passed it and every stage before.
              filters.map((f) =>
                h(
                  "li",
                  { "data-filter": f.name },
                  h("strong", null, String(f.name || "").split(",").join(" → ")),
                  `: ${(f.clusters || []).length} pass `,
                  (f.clusters || []).map((c) => h("span.chip", null, c)),
                ),
              ),
            ),
          )
        : null,
      prios.length
        ? h(
            "table.grid.compact.scores",
            null,
            h("caption", null, "Prioritizer scores"),
            h(
              "thead",
              null,
              h("tr", null, h("th", { scope: "col" }, "Prioritizer"), h("th", { scope: "col" }, "Weight"), allScored.map((c) => h("th", { scope: "col" }, c))),
            ),
            h(
              "tbody",
              null,
              prios.map((pr) =>
                h(
                  "tr",
                  { "data-prioritizer": pr.name },
                  h("th", { scope: "row" }, pr.name, pr.error ? h("span.block.tone-text-bad", null, pr.error) : null),
                  h("td.num", null, String(pr.weight ?? "")),
                  allScored.map((c) => h("td.num", null, pr.scores && c in pr.scores ? String(pr.scores[c]) : "—")),
                ),
              ),
              h(
                "tr.total",
                null,
                h("th", { scope: "row" }, "Total"),
                h("td"),
                allScored.map((c) => h("td.num", null, String(data.scores[c]))),
              ),
            ),
          )
        : null,
    );
  }

  // scheduleRefetch refreshes the selected placement's explanation after it changed, at most once
  // per EXPLAIN_REFRESH_MS since the last request (changes in between share one refresh).
  function scheduleRefetch() {
    if (refetchTimer) return;
    const wait = Math.max(0, lastFetch + EXPLAIN_REFRESH_MS - performance.now());
    refetchTimer = setTimeout(() => {
      refetchTimer = 0;
      if (prefs.selected && placements.has(prefs.selected)) loadExplain(prefs.selected);
    }, wait);
  }

  return {
    el,
    mount() {
      renderList();
      if (prefs.selected) select(prefs.selected, false);
      else renderDetail();
    },
    update(ev) {
      if (ev.type === "hello") return;
      if (!touches(ev, "placements") && ev.type === "delta") {
        return;
      }
      renderList();
      const sel = prefs.selected;
      if (sel && ev.type === "delta" && ((ev.changed.placements && ev.changed.placements.has(sel)) || (ev.deleted.placements && ev.deleted.placements.has(sel)))) {
        renderDetail();
        scheduleRefetch();
      } else if (ev.type === "snapshot") {
        renderDetail();
      }
    },
    unmount() {
      clearTimeout(refetchTimer);
      refetchTimer = 0;
      if (aborter) aborter.abort();
    },
  };
}
