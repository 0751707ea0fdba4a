// The page's model: one EventSource on api/stream (hello, snapshot, delta), a Map per KIND keyed by
// each object's key, and listeners told what changed so a view re-renders only that.

export const KINDS = ["clusters", "clustersets", "placements", "rollouts", "addons", "addondefs", "plugins", "policies"];

export class Store {
  constructor(url = "api/stream") {
    this.url = url; // relative: the page works under any prefix
    this.kinds = new Map(KINDS.map((k) => [k, new Map()]));
    this.access = {};
    this.hello = null;
    this.rev = 0;
    this.snapshots = 0; // how many snapshots arrived (0: nothing to show yet)
    this.state = "connecting";
    this.listeners = new Set();
    this.stateListeners = new Set();
    this.es = null;
    this.retry = 0;
    this.retryTimer = 0;
  }

  // map returns the Map of one KIND (created on first use, so an unknown kind from a newer server is kept).
  map(kind) {
    let m = this.kinds.get(kind);
    if (!m) {
      m = new Map();
      this.kinds.set(kind, m);
    }
    return m;
  }

  // subscribe(fn): fn({type:"snapshot"}) or fn({type:"delta", changed:{KIND:Set}, deleted:{KIND:Set}}).
  subscribe(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  onState(fn) {
    this.stateListeners.add(fn);
    fn(this.state);
    return () => this.stateListeners.delete(fn);
  }

  setState(s) {
    if (s === this.state) return;
    this.state = s;
    for (const fn of this.stateListeners) fn(s);
  }

  start() {
    clearTimeout(this.retryTimer);
    if (this.es) this.es.close();
    const es = new EventSource(this.url);
    this.es = es;
    es.addEventListener("hello", (e) => {
      this.hello = parse(e.data, "hello");
      this.emit({ type: "hello" });
    });
    es.addEventListener("snapshot", (e) => {
      const msg = parse(e.data, "snapshot");
      if (!msg) return;
      this.applySnapshot(msg);
      this.retry = 0;
      this.setState("live");
    });
    es.addEventListener("delta", (e) => {
      const msg = parse(e.data, "delta");
      if (msg) this.applyDelta(msg);
    });
    es.addEventListener("error", () => {
      if (es !== this.es) return;
      this.setState(this.snapshots ? "reconnecting" : "connecting");
      // The browser retries by itself unless the response was not an event stream (then CLOSED):
      // retry that ourselves with a capped backoff.
      if (es.readyState === EventSource.CLOSED) {
        const delay = Math.min(30000, 1000 * 2 ** this.retry++);
        this.retryTimer = setTimeout(() => this.start(), delay);
      }
    });
  }

  applySnapshot(msg) {
    this.rev = msg.rev || 0;
    for (const m of this.kinds.values()) m.clear();
    for (const [kind, objs] of Object.entries(msg.objects || {})) {
      const m = this.map(kind);
      for (const o of objs || []) m.set(o.key, o);
    }
    this.access = msg.access || {};
    this.snapshots++;
    this.emit({ type: "snapshot" });
  }

  applyDelta(msg) {
    this.rev = msg.rev || this.rev;
    const changed = {};
    const deleted = {};
    for (const [kind, objs] of Object.entries(msg.upsert || {})) {
      const m = this.map(kind);
      const s = (changed[kind] = new Set());
      for (const o of objs || []) {
        m.set(o.key, o);
        s.add(o.key);
      }
    }
    for (const [kind, keys] of Object.entries(msg.delete || {})) {
      const m = this.map(kind);
      const s = (deleted[kind] = new Set());
      for (const k of keys || []) {
        if (m.delete(k)) s.add(k);
      }
    }
    if (msg.access) this.access = msg.access;
    this.emit({ type: "delta", changed, deleted });
  }

  emit(ev) {
    for (const fn of this.listeners) {
      try {
        fn(ev);
      } catch (err) {
        console.error("dashboard view failed on", ev.type, err);
      }
    }
  }
}

function parse(data, what) {
  try {
    return JSON.parse(data);
  } catch (err) {
    console.error(`dashboard: bad ${what} event`, err);
    return null;
  }
}

// touches reports whether a store event changed any of kinds.
export function touches(ev, ...kinds) {
  if (ev.type !== "delta") return true;
  return kinds.some((k) => (ev.changed[k] && ev.changed[k].size) || (ev.deleted[k] && ev.deleted[k].size));
}
