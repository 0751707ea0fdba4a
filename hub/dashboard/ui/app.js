// Entry point: the hash router (#/fleet, #/placements, ...), the connection indicator and the one
// Store every view reads. Views are built on entry and told about each store event while shown.
import { Store } from "./store.js";
import { refreshTimes, fill, h } from "./dom.js";
import { fleetView } from "./views/fleet.js";
import { placementsView } from "./views/placements.js";
import { rolloutsView } from "./views/rollouts.js";
import { addonsView } from "./views/addons.js";
import { pluginsView } from "./views/plugins.js";

const VIEWS = {
  fleet: { make: fleetView, title: "Fleet" },
  placements: { make: placementsView, title: "Placements" },
  rollouts: { make: rolloutsView, title: "Rollouts" },
  addons: { make: addonsView, title: "Add-ons" },
  plugins: { make: pluginsView, title: "Plugins & policies" },
};

const store = new Store("api/stream");
const main = document.getElementById("view");
const conn = document.getElementById("conn");
const hubInfo = document.getElementById("hub-info");
let current = null; // {name, view}

function routeName() {
  const m = /^#\/([\w-]+)/.exec(location.hash);
  return m && VIEWS[m[1]] ? m[1] : "fleet";
}

function show(name, focus) {
  if (current && current.name === name) return;
  if (current && current.view.unmount) current.view.unmount();
  const view = VIEWS[name].make(store);
  current = { name, view };
  main.dataset.view = name;
  if (store.snapshots) {
    fill(main, view.el);
    view.mount();
    main.dataset.ready = "true";
  } else {
    fill(main, h("p.loading", null, "Waiting for the hub’s data…"), view.el);
    main.setAttribute("aria-busy", "true");
    main.removeAttribute("data-ready");
  }
  document.title = `${VIEWS[name].title} · Flotilla`;
  for (const a of document.querySelectorAll("[data-view-link]")) {
    if (a.dataset.viewLink === name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  // A new view starts at its top, not at the scroll position of the one before.
  window.scrollTo(0, 0);
  // After a navigation by the person, move focus to the view so a screen reader starts there.
  if (focus) main.focus({ preventScroll: true });
}

window.addEventListener("hashchange", () => {
  // The skip link's #view is not a route.
  if (!location.hash.startsWith("#/")) return;
  show(routeName(), true);
});

document.querySelector(".skip-link").addEventListener("click", (e) => {
  e.preventDefault();
  main.focus();
});

store.subscribe((ev) => {
  if (ev.type === "hello") {
    renderHello();
    return;
  }
  if (!current) return;
  if (ev.type === "snapshot" && main.dataset.ready !== "true") {
    const loading = main.querySelector(":scope > .loading");
    if (loading) loading.remove();
    main.removeAttribute("aria-busy");
    current.view.mount();
    main.dataset.ready = "true";
    return;
  }
  current.view.update(ev);
});

const STATE_TEXT = { connecting: "Connecting…", live: "Live", reconnecting: "Reconnecting…" };
store.onState((s) => {
  conn.dataset.state = s;
  conn.querySelector(".conn-text").textContent = STATE_TEXT[s] || s;
  conn.title = s === "live" ? "Receiving updates from the hub" : "Waiting for the event stream";
});

function renderHello() {
  const hello = store.hello || {};
  fill(
    hubInfo,
    hello.mode ? h("span.tag.tone-neutral", { title: hello.mode === "hub" ? "Served by the hub" : "Served locally" }, hello.mode) : null,
    hello.user ? h("span.who", { title: "Signed in as" }, hello.user) : null,
    hello.hub ? h("span.hub-url", { title: "Hub API server" }, hello.hub) : null,
  );
}

// Relative times ("12s ago") stay current without a re-render.
setInterval(() => refreshTimes(main), 5000);

show(routeName(), false);
store.start();
