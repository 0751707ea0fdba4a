// Fleet: every ManagedCluster in one windowed table. Only the rows in view (plus an overscan) are
// in the DOM, each a fixed height, so 5,000 clusters scroll, filter and update without a stall: a
// delta re-renders the rows whose object changed and the summary, nothing else.
import { h, fill, badge, availableWord, timeEl, accessText, natural, cmp } from "../dom.js";
import { touches } from "../store.js";

const ROW_H = 36; // px; must match .fleet-table tbody tr in style.css
const OVERSCAN = 8;
const MAX_CHIPS = 2; // label chips per row; the rest are counted, and all are in the cell's title

// What the person chose survives a switch to another view and back.
const prefs = { filter: "", set: "", sort: "name", dir: 1 };
let firstPaintMarked = false;

const COLUMNS = [
  { id: "name", title: "Name", sort: (a, b) => natural(a.name, b.name) },
  { id: "available", title: "Available", sort: (a, b) => cmp(availRank(a), availRank(b)) },
  { id: "joined", title: "Joined", sort: (a, b) => cmp(a.joined || "", b.joined || "") },
  { id: "sets", title: "Sets" },
  { id: "labels", title: "Labels" },
  { id: "taints", title: "Taints", sort: (a, b) => cmp((a.taints || []).length, (b.taints || []).length) },
  { id: "version", title: "Version", sort: (a, b) => natural(a.version || "", b.version || "") },
  { id: "cpu", title: "CPU", sort: (a, b) => natural(a.cpu || "", b.cpu || "") },
  { id: "memory", title: "Memory", sort: (a, b) => natural(a.memory || "", b.memory || "") },
  { id: "lease", title: "Last lease", sort: (a, b) => cmp(b.lease || "", a.lease || "") },
  { id: "since", title: "Since", sort: (a, b) => cmp(b.since || "", a.since || "") },
];

function availRank(c) {
  return c.available === "False" ? 0 : c.available === "True" ? 2 : 1;
}

// parseFilter: comma-separated terms, all must hold. k=v / k==v, k!=v, k (label present or name
// contains k), !k (label absent). A term without an operator also matches a name substring.
export function parseFilter(text) {
  const terms = [];
  for (const raw of text.split(",")) {
    const t = raw.trim();
    if (!t) continue;
    let m;
    if ((m = /^([^=!\s]+)\s*(!=|==|=)\s*(.*)$/.exec(t))) {
      terms.push({ op: m[2] === "!=" ? "ne" : "eq", k: m[1], v: m[3].trim() });
    } else if ((m = /^!\s*([^=!\s]+)$/.exec(t))) {
      terms.push({ op: "absent", k: m[1] });
    } else if (!/[=!]/.test(t)) {
      terms.push({ op: "word", k: t, lower: t.toLowerCase() });
    } else {
      return { terms: [], error: `Cannot read “${t}”: use k=v, k!=v, k, !k or a name.` };
    }
  }
  return { terms, error: "" };
}

function matches(c, terms, set) {
  if (set && !(c.sets && c.sets.includes(set))) return false;
  const labels = c.labels || {};
  for (const t of terms) {
    switch (t.op) {
      case "eq":
        if (labels[t.k] !== t.v) return false;
        break;
      case "ne":
        if (labels[t.k] === t.v) return false;
        break;
      case "absent":
        if (t.k in labels) return false;
        break;
      default:
        if (!(t.k in labels) && !c.name.toLowerCase().includes(t.lower)) return false;
    }
  }
  return true;
}

export function fleetView(store) {
  const clusters = store.map("clusters");
  let sorted = []; // all cluster objects, in the chosen order
  let list = []; // the keys of the ones the filter keeps
  let parsed = parseFilter(prefs.filter);
  const rendered = new Map(); // key -> tr in the DOM

  const count = h("span#fleet-count");
  const ofTotal = h("span.muted");
  const summary = h("div#fleet-summary.summary", { role: "group", "aria-label": "Cluster availability" });
  const filter = h("input#fleet-filter", {
    type: "search",
    value: prefs.filter,
    placeholder: "env=prod,region!=eu or a name",
    autocomplete: "off",
    spellcheck: "false",
    "aria-describedby": "fleet-filter-help",
  });
  filter.value = prefs.filter;
  const help = h("p#fleet-filter-help.hint", null);
  const setSel = h("select#fleet-set", null);
  const access = h("p#fleet-access.notice", { role: "note", hidden: true });

  const theadRow = h("tr", { "aria-rowindex": "1" });
  const topSpacer = h("tr.spacer", { "aria-hidden": "true" }, h("td", { colspan: COLUMNS.length }));
  const bottomSpacer = h("tr.spacer", { "aria-hidden": "true" }, h("td", { colspan: COLUMNS.length }));
  const tbody = h("tbody", null, topSpacer, bottomSpacer);
  const table = h(
    "table#fleet-table.grid.fleet-table",
    { "aria-labelledby": "fleet-heading", "aria-describedby": "fleet-count" },
    h("colgroup", null, COLUMNS.map((c) => h(`col.col-${c.id}`))),
    h("thead", null, theadRow),
    tbody,
  );
  const scroller = h("div.table-scroll", { tabindex: "0", role: "region", "aria-label": "Clusters table, scrollable" }, table);
  const emptyMsg = h("p.empty", { hidden: true });

  const el = h(
    "section.view-fleet",
    { "aria-labelledby": "fleet-heading" },
    h("div.view-head", null, h("h1#fleet-heading", null, "Fleet"), h("p.count", null, count, " ", ofTotal)),
    summary,
    access,
    h(
      "div.toolbar",
      { role: "search", "aria-label": "Filter clusters" },
      h("div.field.grow", null, h("label", { for: "fleet-filter" }, "Filter"), filter),
      h("div.field", null, h("label", { for: "fleet-set" }, "Cluster set"), setSel),
    ),
    help,
    scroller,
    emptyMsg,
  );

  function renderHead() {
    fill(
      theadRow,
      COLUMNS.map((c) => {
        if (!c.sort) return h("th", { scope: "col" }, c.title);
        const active = prefs.sort === c.id;
        return h(
          "th",
          { scope: "col", "data-col": c.id, "aria-sort": active ? (prefs.dir > 0 ? "ascending" : "descending") : "none" },
          h(
            "button.sort",
            {
              type: "button",
              onclick: () => {
                if (prefs.sort === c.id) prefs.dir = -prefs.dir;
                else (prefs.sort = c.id), (prefs.dir = 1);
                renderHead();
                // The header was rebuilt: keep the focus on this column's button.
                theadRow.querySelector(`th[data-col="${c.id}"] button`).focus();
                resort();
                refilter();
                renderWindow();
              },
            },
            c.title,
            h("span.sort-mark", { "aria-hidden": "true" }, active ? (prefs.dir > 0 ? "▲" : "▼") : "↕"),
          ),
        );
      }),
    );
  }

  function resort() {
    const col = COLUMNS.find((c) => c.id === prefs.sort) || COLUMNS[0];
    const dir = prefs.dir;
    sorted = Array.from(clusters.values());
    sorted.sort((a, b) => dir * col.sort(a, b) || natural(a.name, b.name));
  }

  function refilter() {
    const { terms } = parsed;
    const set = prefs.set;
    if (!terms.length && !set) list = sorted.map((c) => c.key);
    else {
      list = [];
      for (const c of sorted) if (matches(c, terms, set)) list.push(c.key);
    }
    table.setAttribute("aria-rowcount", String(list.length + 1));
    count.dataset.count = String(list.length);
    count.dataset.total = String(clusters.size);
    count.textContent = `${list.length} ${list.length === 1 ? "cluster" : "clusters"}`;
    ofTotal.textContent = list.length === clusters.size ? "" : `shown of ${clusters.size}`;
    emptyMsg.hidden = list.length > 0 || !store.snapshots;
    emptyMsg.textContent = clusters.size ? "No cluster matches the filter." : "No clusters to show.";
  }

  function renderSummary() {
    let av = 0, un = 0, unk = 0;
    for (const c of clusters.values()) {
      if (c.available === "True") av++;
      else if (c.available === "False") un++;
      else unk++;
    }
    summary.dataset.available = String(av);
    summary.dataset.unavailable = String(un);
    summary.dataset.unknown = String(unk);
    const stat = (n, label, t) =>
      h(`div.stat.tone-${t}`, null, h("span.stat-n", null, n.toLocaleString("en")), h("span.stat-label", null, h("span.mark", { "aria-hidden": "true" }), label));
    const sets = setCount();
    fill(
      summary,
      stat(clusters.size, "Total", "plain"),
      stat(av, "Available", "ok"),
      stat(un, "Unavailable", un ? "bad" : "plain"),
      stat(unk, "Unknown", unk ? "neutral" : "plain"),
      stat(sets, sets === 1 ? "Cluster set" : "Cluster sets", "plain"),
    );
  }

  let setNames = new Set();
  function setCount() {
    return setNames.size;
  }

  function renderSets() {
    const names = new Set(store.map("clustersets").keys());
    for (const c of clusters.values()) for (const s of c.sets || []) names.add(s);
    setNames = names;
    const sets = Array.from(names).sort(natural);
    if (prefs.set && !names.has(prefs.set)) sets.unshift(prefs.set);
    fill(
      setSel,
      h("option", { value: "" }, "All sets"),
      sets.map((s) => h("option", { value: s, selected: s === prefs.set }, s)),
    );
    setSel.value = prefs.set;
  }

  function renderAccess() {
    const text = accessText(store.access, "clusters", "clusters");
    access.textContent = text;
    access.hidden = !text;
  }

  function renderHelp() {
    help.classList.toggle("error", !!parsed.error);
    help.textContent =
      parsed.error || "Label selector: k=v, k!=v, k, !k; commas mean “and”. A plain word also matches names.";
  }

  function row(c, tr) {
    tr = tr || h("tr");
    tr.dataset.cluster = c.name;
    tr.dataset.available = c.available === "True" || c.available === "False" ? c.available : "Unknown";
    tr._obj = c;
    const labels = Object.entries(c.labels || {});
    const labelText = labels.map(([k, v]) => `${k}=${v}`).join(", ");
    const taintsFull = (c.taints || []).map((t) => `${t.key}${t.value ? "=" + t.value : ""}:${t.effect}`).join(", ");
    // Well-known taint keys are long (cluster.open-cluster-management.io/unreachable): show the name.
    const taints = (c.taints || []).map((t) => `${t.key.slice(t.key.lastIndexOf("/") + 1)}:${t.effect}`);
    const why = [c.reason, c.message].filter(Boolean).join(": ");
    fill(
      tr,
      h(
        "th",
        { scope: "row", title: c.name },
        h(
          "span.cell-line",
          null,
          h("span.name", null, c.name),
          c.accepted === false ? h("span.tag.tone-warn", null, "not accepted") : null,
        ),
      ),
      h("td", { title: why || availableWord(c.available) }, badge(c.available || "Unknown", availableWord(c.available))),
      h("td", null, c.joined === "True" ? "Joined" : c.joined === "False" ? "Not joined" : h("span.muted", null, "Unknown")),
      h("td", { title: (c.sets || []).join(", ") }, (c.sets || []).join(", ") || h("span.muted", null, "—")),
      h(
        "td.chips",
        { title: labelText },
        labels.length
          ? h(
              "span.cell-line",
              null,
              labels.slice(0, MAX_CHIPS).map(([k, v]) => h("span.chip", null, v === "" ? k : `${k}=${v}`)),
              labels.length > MAX_CHIPS ? h("span.chip.more", null, `+${labels.length - MAX_CHIPS}`) : null,
            )
          : h("span.muted", null, "—"),
      ),
      h(
        "td",
        { title: taintsFull },
        taints.length ? h("span.cell-line", null, taints.map((t) => h("span.chip.taint", null, t))) : h("span.muted", null, "—"),
      ),
      h("td", null, c.version || h("span.muted", null, "—")),
      h("td.num", null, c.cpu || "—"),
      h("td.num", null, c.memory || "—"),
      h("td", null, timeEl(c.lease)),
      h("td", null, timeEl(c.since)),
    );
    return tr;
  }

  function renderWindow() {
    const n = list.length;
    const viewH = scroller.clientHeight || window.innerHeight;
    const top = scroller.scrollTop;
    let start = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
    let end = Math.min(n, Math.ceil((top + viewH) / ROW_H) + OVERSCAN);
    if (start > end) start = end;
    topSpacer.firstChild.style.height = `${start * ROW_H}px`;
    bottomSpacer.firstChild.style.height = `${(n - end) * ROW_H}px`;
    topSpacer.hidden = start === 0;
    bottomSpacer.hidden = n === end;

    const want = [];
    const keep = new Set();
    for (let i = start; i < end; i++) {
      const key = list[i];
      const c = clusters.get(key);
      if (!c) continue;
      let tr = rendered.get(key);
      if (!tr || tr._obj !== c) {
        tr = row(c, tr);
        rendered.set(key, tr);
      }
      const idx = String(i + 2);
      if (tr.getAttribute("aria-rowindex") !== idx) tr.setAttribute("aria-rowindex", idx);
      want.push(tr);
      keep.add(key);
    }
    for (const [key, tr] of rendered) {
      if (!keep.has(key)) {
        tr.remove();
        rendered.delete(key);
      }
    }
    // Reorder only when the sequence between the spacers differs.
    let node = topSpacer.nextSibling;
    let same = true;
    for (const tr of want) {
      if (node !== tr) {
        same = false;
        break;
      }
      node = node.nextSibling;
    }
    if (!same || node !== bottomSpacer) tbody.replaceChildren(topSpacer, ...want, bottomSpacer);
  }

  let scrollQueued = false;
  scroller.addEventListener(
    "scroll",
    () => {
      if (scrollQueued) return;
      scrollQueued = true;
      requestAnimationFrame(() => {
        scrollQueued = false;
        renderWindow();
      });
    },
    { passive: true },
  );
  const onResize = () => renderWindow();
  window.addEventListener("resize", onResize);

  // Filtering is synchronous: 5,000 clusters take a few ms, and the count is right when input returns.
  filter.addEventListener("input", () => {
    prefs.filter = filter.value;
    parsed = parseFilter(prefs.filter);
    renderHelp();
    refilter();
    scroller.scrollTop = 0;
    renderWindow();
  });
  setSel.addEventListener("change", () => {
    prefs.set = setSel.value;
    refilter();
    scroller.scrollTop = 0;
    renderWindow();
  });

  function full() {
    renderAccess();
    renderSets();
    renderSummary();
    resort();
    refilter();
    renderWindow();
  }

  function markFirstPaint() {
    if (firstPaintMarked || !store.snapshots) return;
    firstPaintMarked = true;
    requestAnimationFrame(() => performance.mark("fleet-first-paint"));
  }

  renderHead();
  renderHelp();

  return {
    el,
    mount() {
      full();
      markFirstPaint();
    },
    update(ev) {
      if (ev.type === "hello") return;
      if (ev.type === "snapshot") {
        full();
        markFirstPaint();
        return;
      }
      if (touches(ev, "clustersets")) renderSets();
      renderAccess();
      if (!touches(ev, "clusters")) return;
      const deleted = ev.deleted.clusters || new Set();
      // A new key grows the map; a delete (with or without an add) is in deleted.
      const added = deleted.size > 0 || clusters.size !== sorted.length;
      // Names only change with adds and deletes; other sort keys can change with any update.
      if (added || prefs.sort !== "name") resort();
      else sorted = sorted.map((c) => clusters.get(c.key) || c);
      if (added) renderSets();
      refilter();
      renderSummary();
      renderWindow();
    },
    unmount() {
      window.removeEventListener("resize", onResize);
    },
  };
}
