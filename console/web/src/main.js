// toolsvc's operator console. Every string that comes from an upstream
// (names, descriptions, schemas, errors) is rendered by preact as a text
// node, never as markup: no dangerouslySetInnerHTML anywhere, and no link
// is ever built from an upstream's value. Live data arrives on one
// Server-Sent Events stream (/ui/api/events); nothing polls.
import { h, render } from 'preact';
import { useState, useEffect, useMemo, useRef, useLayoutEffect } from 'preact/hooks';
import htm from 'htm';
import uPlot from 'uplot';

const html = htm.bind(h);

// Timings the browser test and tests/bench/console read (reported, not
// asserted): firstRender from the Catalog's mount, firstRenderAt from the
// navigation's start (performance.now()'s origin), keystrokes end to end.
const timings = (window.__console = { firstRender: null, firstRenderAt: null, keystrokes: [], rankings: [], events: 0 });

// ---- the store: what the event stream and the API say -------------------

const store = {
  me: null,
  upstreams: [],
  discovery: null, // Kubernetes discovery's sources (an operator's; null without discovery)
  catalog: null, // the last catalog event (revision, count)
  feed: [], // catalog changes, newest first (at most 200)
  searchPrepared: 0, // how many times the stream said the search index is prepared
  connected: false,
  listeners: new Set(),
  emit() {
    for (const f of this.listeners) f();
  },
};

function useStore() {
  const [, set] = useState(0);
  useEffect(() => {
    const f = () => set((n) => n + 1);
    store.listeners.add(f);
    return () => store.listeners.delete(f);
  }, []);
  return store;
}

async function api(path, opts = {}) {
  const res = await fetch(path, { credentials: 'same-origin', ...opts });
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const msg = body ? `${body.code} ${body.reason}: ${body.message}` : `HTTP ${res.status}`;
    const err = new Error(msg);
    err.status = res.status;
    throw err;
  }
  return body;
}

function connect() {
  const es = new EventSource('/ui/api/events');
  es.addEventListener('open', () => {
    store.connected = true;
    store.emit();
  });
  es.addEventListener('error', () => {
    store.connected = false;
    store.emit();
  });
  es.addEventListener('discovery', (e) => {
    store.discovery = JSON.parse(e.data) || [];
    store.emit();
  });
  es.addEventListener('upstreams', (e) => {
    store.upstreams = JSON.parse(e.data);
    timings.events++;
    store.emit();
  });
  // The search index is prepared (every stage): a search the lexical stage
  // answered is asked again for the full ranking.
  es.addEventListener('search', (e) => {
    if (JSON.parse(e.data).prepared) {
      store.searchPrepared++;
      store.emit();
    }
  });
  es.addEventListener('catalog', (e) => {
    const ev = JSON.parse(e.data);
    const first = store.catalog === null;
    store.catalog = ev;
    if (!first && ev.previous) {
      store.feed = [{ ...ev, seen: new Date() }, ...store.feed].slice(0, 200);
    }
    timings.events++;
    store.emit();
  });
}

// ---- layout ---------------------------------------------------------------

const pages = [
  ['upstreams', 'Upstreams'],
  ['catalog', 'Catalog'],
  ['traffic', 'Traffic', true], // operators only
  ['calls', 'Calls'],
  ['playground', 'Playground'],
  ['tasks', 'Tasks'],
  ['logins', 'Logins'],
  ['config', 'Config', true], // operators only
];

function useRoute() {
  const get = () => (location.hash.replace(/^#\/?/, '') || 'upstreams').split('?')[0];
  // (#/playground?tool=NAME: the Playground with that tool)
  const [route, setRoute] = useState(get());
  useEffect(() => {
    const f = () => setRoute(get());
    addEventListener('hashchange', f);
    return () => removeEventListener('hashchange', f);
  }, []);
  return route;
}

function App() {
  const s = useStore();
  const route = useRoute();
  const page =
    route === 'catalog'
      ? html`<${Catalog} />`
      : route === 'traffic'
        ? html`<${Traffic} />`
        : route === 'calls'
          ? html`<${Calls} />`
          : route === 'playground'
            ? html`<${Playground} />`
            : route === 'tasks'
              ? html`<${Tasks} />`
              : route === 'logins'
                ? html`<${Logins} />`
              : route === 'config'
                ? html`<${Config} />`
                : html`<${Upstreams} />`;
  return html`
    <header>
      <h1>toolsvc</h1>
      <nav>
        ${pages
          .filter(([, , admin]) => !admin || (s.me && s.me.admin))
          .map(([id, label]) => html`<a id=${'nav-' + id} href=${'#/' + id} class=${route === id ? 'active' : ''}>${label}</a>`)}
      </nav>
      <span class="who" id="who">
        ${s.me ? (s.me.principal || (s.me.auth ? '' : 'local operator')) + (s.me.admin ? ' (admin)' : '') : ''}
        ${' '}${s.connected ? '● live' : '○ reconnecting'}
      </span>
      ${s.me && s.me.auth
        ? html`<form method="post" action="/ui/logout"><button type="submit">Sign out</button></form>`
        : null}
    </header>
    <main id=${'page-' + route}>${page}</main>`;
}

// ---- Upstreams ------------------------------------------------------------

function fmtTime(t) {
  if (!t) return '';
  const d = new Date(t);
  return d.toLocaleTimeString();
}

function Upstreams() {
  const s = useStore();
  const [msg, setMsg] = useState('');
  const act = async (name, action) => {
    setMsg('');
    try {
      await api(`/ui/api/upstreams/${encodeURIComponent(name)}/${action}`, {
        method: 'POST',
        headers: { 'X-Toolsvc-CSRF': s.me.csrf },
      });
      setMsg(`${action} ${name}: done`);
    } catch (e) {
      setMsg(`${action} ${name}: ${e.message}`);
    }
  };
  return html`
    <h2>Upstreams</h2>
    <p class="muted">What is up, what is down and why. Live: the table changes as the upstreams do.</p>
    ${msg ? html`<p id="action-result">${msg}</p>` : null}
    <table id="upstreams">
      <thead><tr>
        <th>Name</th><th>State</th><th>Transport</th><th>Era</th><th>Tools</th><th>Connects</th><th>Refreshes</th>
        <th>Last refresh</th><th>Breaker</th><th>Failures</th><th>In flight</th><th>Last error</th>
        ${s.discovery ? html`<th>Kubernetes object</th>` : null}
        ${s.me && s.me.admin ? html`<th>Actions</th>` : null}
      </tr></thead>
      <tbody>
        ${s.upstreams.map(
          (u) => html`<tr key=${u.name} data-upstream=${u.name} data-state=${u.state} class=${u.state}>
            <td>${u.name}</td>
            <td class=${'state state-' + u.state}>${u.state}</td>
            <td>${u.transport}</td><td>${u.era || ''}</td><td>${u.tools}</td><td>${u.connects}</td><td>${u.refreshes}</td>
            <td>${fmtTime(u.lastRefresh)}${u.lastRefresh && !u.lastRefreshOK ? ' (failed)' : ''}</td>
            <td>${u.breaker}${u.breakerRetry ? ' until ' + fmtTime(u.breakerRetry) : ''}</td>
            <td>${u.failures}</td><td>${u.inFlight}</td>
            <td class="last-error">${u.lastError || ''}</td>
            ${s.discovery
              ? html`<td class="kube-object">${u.object ? objectText(u.object) : ''}${u.refused ? html` <span class="error refused">refused</span>` : null}</td>`
              : null}
            ${s.me && s.me.admin && !u.refused
              ? html`<td>
                  <button class="reconnect" onClick=${() => act(u.name, 'reconnect')}>Reconnect</button>
                  <button class="refresh" onClick=${() => act(u.name, 'refresh')}>Refresh</button>
                </td>`
              : s.me && s.me.admin ? html`<td></td>` : null}
          </tr>`,
        )}
      </tbody>
    </table>
    ${s.upstreams.length === 0 ? html`<p class="muted">No upstream visible to you.</p>` : null}
    ${s.discovery
      ? html`<h3>Kubernetes discovery</h3>
          <p class="muted">Each source's list/watch. An object discovery refuses is a row above, marked refused, with why.</p>
          <table id="discovery">
            <thead><tr><th>Source</th><th>State</th><th>Since</th><th>Synced</th><th>Objects</th><th>Error</th></tr></thead>
            <tbody>
              ${s.discovery.map(
                (d) => html`<tr key=${d.name} data-source=${d.name} data-state=${d.state}>
                  <td>${d.name}</td><td class=${d.state === 'failing' ? 'error' : ''}>${d.state}</td><td>${fmtTime(d.since)}</td>
                  <td>${d.synced ? 'yes' : 'no'}</td><td>${d.objects}</td><td class="last-error">${d.error || ''}</td>
                </tr>`,
              )}
            </tbody>
          </table>`
      : null}`;
}

// objectText is a Kubernetes object as kind namespace/name.
function objectText(o) {
  if (o.name) return o.kind + ' ' + o.namespace + '/' + o.name;
  return o.kind + (o.namespace ? ' in ' + o.namespace : '') + ' (the source)';
}

// ---- Catalog --------------------------------------------------------------

const ROW_H = 26;
const LIST_H = 520;

function VirtualList({ rows, selected, onSelect }) {
  const [top, setTop] = useState(0);
  const first = Math.max(0, Math.floor(top / ROW_H) - 10);
  const last = Math.min(rows.length, Math.ceil((top + LIST_H) / ROW_H) + 10);
  const visible = rows.slice(first, last);
  return html`
    <div class="vlist" id="tool-list" style=${{ height: LIST_H + 'px' }} onScroll=${(e) => setTop(e.currentTarget.scrollTop)}>
      <div class="inner" style=${{ height: rows.length * ROW_H + 'px' }}>
        ${visible.map(
          (r, i) => html`<div key=${r[0]} class=${'row' + (r[0] === selected ? ' selected' : '')} data-tool=${r[0]}
              style=${{ top: (first + i) * ROW_H + 'px' }} onClick=${() => onSelect(r[0])}>
              <span class="name">${r[0]}</span><span class="desc">${r[2] || r[3]}</span>
            </div>`,
        )}
      </div>
    </div>`;
}

function ToolDetail({ name }) {
  const [tool, setTool] = useState(null);
  const [err, setErr] = useState('');
  const s = useStore();
  const rev = s.catalog && s.catalog.revision;
  useEffect(() => {
    if (!name) return;
    let live = true;
    api('/ui/api/tool?name=' + encodeURIComponent(name))
      .then((t) => live && (setTool(t), setErr('')))
      .catch((e) => live && (setTool(null), setErr(e.message)));
    return () => (live = false);
  }, [name, rev]);
  if (!name) return html`<p class="muted">Select a tool to see its schema and annotations.</p>`;
  if (err) return html`<p class="error" id="tool-error">${err}</p>`;
  if (!tool) return html`<p class="muted">Loading…</p>`;
  return html`<div id="tool-detail">
    <h3 id="tool-name">${tool.name}</h3>
    <p class="muted">server ${tool.server} · upstream name ${tool.originalName}${tool.available ? '' : ' · unavailable'}
      ${tool.taskSupport ? ' · tasks ' + tool.taskSupport : ''}</p>
    ${tool.title ? html`<p><b>${tool.title}</b></p>` : null}
    <p><a id="try-tool" href=${'#/playground?tool=' + encodeURIComponent(tool.name)}>Try it in the Playground</a></p>
    <pre id="tool-description">${tool.description || ''}</pre>
    <h4>Input schema</h4>
    <pre id="tool-schema">${tool.inputSchema ? JSON.stringify(tool.inputSchema, null, 2) : '(none)'}</pre>
    ${tool.outputSchema ? html`<h4>Output schema</h4><pre>${JSON.stringify(tool.outputSchema, null, 2)}</pre>` : null}
    ${tool.annotations ? html`<h4>Annotations</h4><pre id="tool-annotations">${JSON.stringify(tool.annotations, null, 2)}</pre>` : null}
  </div>`;
}

function Feed() {
  const s = useStore();
  const names = (ev, kind, n) =>
    ev[kind] && ev[kind].length
      ? html`<span class=${kind}> ${kind} ${n}: ${ev[kind].join(', ')}${n > ev[kind].length ? ' …' : ''}</span>`
      : null;
  return html`<h3>Changes</h3>
    <ul class="feed" id="feed">
      ${s.feed.length === 0 ? html`<li class="muted">No change since this page opened.</li>` : null}
      ${s.feed.map(
        (ev) => html`<li key=${ev.revision} data-revision=${ev.revision}>
          <span class="muted">${fmtTime(ev.time)}</span>
          ${names(ev, 'added', ev.nAdded)}${names(ev, 'changed', ev.nChanged)}${names(ev, 'removed', ev.nRemoved)}
        </li>`,
      )}
    </ul>`;
}

// The rows the Catalog asks for first (a screen is about 20): the list
// renders them while the whole list is on its way.
const WINDOW_ROWS = 60;

// The whole list comes in blocks of BLOCK_ROWS (the server's most): each
// block's JSON is parsed in a task of its own of a few milliseconds, so a
// keystroke typed while the list loads is answered between two blocks
// rather than after one parse of 2.5 MB (90-170 ms of the main thread at
// 20,000 tools, while toolsvc's index build shares the cores).
const BLOCK_ROWS = 1000;

// loadTools gets the caller's whole list block by block, all of one
// revision (a block of another revision starts the list again), calling
// onBlock with the rows so far.
async function loadTools(onBlock) {
  for (let attempt = 0; ; attempt++) {
    let rows = [];
    let rev = null;
    let b;
    for (let off = 0; ; off += BLOCK_ROWS) {
      b = await api('/ui/api/tools?offset=' + off + '&limit=' + BLOCK_ROWS);
      if (rev !== null && b.revision !== rev) break;
      rev = b.revision;
      rows = rows.concat(b.tools);
      if (!b.partial) return { revision: rev, total: b.total, tools: rows };
      onBlock && onBlock(rows, b.total);
    }
    // The catalog changed while it loaded: after a few tries (a catalog
    // changing faster than it loads), the whole list at once.
    if (attempt >= 2) return api('/ui/api/tools');
  }
}

function Catalog() {
  const s = useStore();
  const [all, setAll] = useState(null); // [[name, server, title, desc]]
  const [err, setErr] = useState('');
  const [q, setQ] = useState('');
  const [server, setServer] = useState('');
  const [hits, setHits] = useState(null); // rows ranked by SearchTools, or null
  const [ranking, setRanking] = useState(null); // {ranking, complete} of the hits
  const [selected, setSelected] = useState('');
  const [total, setTotal] = useState(null); // the caller's tools, known from the first window on
  const rev = s.catalog && s.catalog.revision;
  const loaded = useRef(''); // the revision of the whole list the page holds
  const inflight = useRef(null); // the whole list's request on its way
  const pending = useRef(null); // the keystroke being answered: {t0, ctrl}
  const t0 = useRef(performance.now());

  // At once, without waiting for the event stream: the first rows (what
  // the list shows first) and the count, then the whole list. The event
  // stream's catalog revision fetches the whole list again only when it
  // differs from the one held.
  useEffect(() => {
    let live = true;
    api('/ui/api/tools?limit=' + WINDOW_ROWS)
      .then((b) => live && loaded.current === '' && (setAll((held) => (held && held.length > b.tools.length ? held : b.tools)), setTotal(b.total)))
      .catch(() => {}); // the whole list's request reports the error
    return () => (live = false);
  }, []);
  useEffect(() => {
    if (rev && rev === loaded.current) return;
    let live = true;
    // A request still on its way (the mount's, before the stream said its
    // revision) is waited for, and asked again only if it is not of rev.
    const prior = inflight.current;
    // The first load shows its blocks as they come; a later one replaces
    // the list once it is whole.
    const get = () => loadTools((rows, n) => live && loaded.current === '' && (setAll(rows), setTotal(n)));
    const p = prior ? prior.then((b) => (!rev || b.revision === rev ? b : get()), get) : get();
    inflight.current = p;
    const settled = () => inflight.current === p && (inflight.current = null);
    p.then(
      (b) => {
        settled();
        if (!live) return;
        loaded.current = b.revision;
        setAll(b.tools);
        setTotal(b.total);
        setErr('');
      },
      (e) => (settled(), live && setErr(e.message)),
    );
    return () => (live = false);
  }, [rev]);

  useLayoutEffect(() => {
    if (all && timings.firstRender === null) {
      timings.firstRenderAt = performance.now();
      timings.firstRender = timings.firstRenderAt - t0.current;
      timings.firstRenderRows = total;
    }
  }, [all]);

  // A keystroke's search (reask: the same query again once the index is
  // prepared, not timed as a keystroke).
  const search = (value, reask) => {
    setQ(value);
    if (pending.current) pending.current.ctrl.abort();
    if (!value.trim()) {
      pending.current = null;
      setHits(null);
      setRanking(null);
      return;
    }
    const p = { t0: performance.now(), ctrl: new AbortController(), timed: !!reask };
    pending.current = p;
    const params = new URLSearchParams({ q: value });
    if (server) params.set('server', server);
    api('/ui/api/search?' + params, { signal: p.ctrl.signal })
      .then((b) => {
        if (pending.current !== p) return;
        p.done = true;
        p.ranking = b.ranking + (b.complete ? '' : ' (stage)');
        setHits(b.tools);
        setRanking({ ranking: b.ranking, complete: b.complete });
        setErr('');
      })
      .catch((e) => e.name !== 'AbortError' && pending.current === p && setErr(e.message));
  };

  // A stage of the index answered (the names, or the lexical stage): once
  // the stream says the index is prepared, the same query is asked again,
  // unless a keystroke's search is on its way (the prepared index answers
  // it).
  useEffect(() => {
    const p = pending.current;
    if (ranking && !ranking.complete && q.trim() && (!p || p.done)) search(q, true);
  }, [s.searchPrepared]);

  useLayoutEffect(() => {
    const p = pending.current;
    if (p && p.done && !p.timed) {
      p.timed = true;
      timings.keystrokes.push(performance.now() - p.t0);
      timings.rankings.push(p.ranking);
    }
  }, [hits]);

  const servers = useMemo(() => (all ? [...new Set(all.map((r) => r[1]))].sort() : []), [all]);
  // A search's hits carry their rows: they render without the whole list.
  const rows = useMemo(() => {
    if (hits) return server ? hits.filter((r) => r[1] === server) : hits;
    if (!all) return [];
    return server ? all.filter((r) => r[1] === server) : all;
  }, [all, hits, server]);

  return html`
    <h2>Catalog</h2>
    <div class="toolbar">
      <input id="search" type="search" placeholder="Search tools (SearchTools)" value=${q} onInput=${(e) => search(e.currentTarget.value)} />
      <select id="server" onChange=${(e) => setServer(e.currentTarget.value)}>
        <option value="">every server</option>
        ${servers.map((n) => html`<option value=${n}>${n}</option>`)}
      </select>
      <span class="muted" id="count">${rows.length} of ${total === null ? '…' : total} tools</span>
      ${ranking
        ? html`<span class="muted" id="ranking" data-ranking=${ranking.ranking} data-complete=${String(ranking.complete)}
            >ranked ${ranking.ranking}${ranking.complete ? '' : ', the full ranking on its way'}</span>`
        : null}
    </div>
    ${err ? html`<p class="error" id="catalog-error">${err}</p>` : null}
    <div class="catalog">
      <div><${VirtualList} rows=${rows} selected=${selected} onSelect=${setSelected} /></div>
      <div><${ToolDetail} name=${selected} /><${Feed} /></div>
    </div>`;
}

// ---- Traffic --------------------------------------------------------------

// The Traffic page opens its own event stream (?traffic=1) while it is
// shown: the server sends the last hour's summary every 2 s, and nothing
// when no Traffic page is open.
function useTraffic() {
  const [view, setView] = useState(null);
  useEffect(() => {
    const es = new EventSource('/ui/api/events?traffic=1');
    es.addEventListener('traffic', (e) => setView(JSON.parse(e.data)));
    return () => es.close();
  }, []);
  return view;
}

function Chart({ minutes }) {
  const el = useRef(null);
  const plot = useRef(null);
  useEffect(() => {
    const xs = minutes.map((m) => new Date(m.time).getTime() / 1000);
    const data = [xs, minutes.map((m) => m.calls / 60), minutes.map((m) => m.errors / 60),
      minutes.map((m) => m.p50ms), minutes.map((m) => m.p99ms)];
    if (!plot.current) {
      plot.current = new uPlot(
        {
          width: Math.max(600, el.current.clientWidth),
          height: 260,
          // The last hour, whatever minutes had calls (one point would
          // otherwise stretch the axis over years).
          scales: { x: { time: true, range: () => [Date.now() / 1000 - 3600, Date.now() / 1000] } },
          series: [
            {},
            { label: 'calls/s', stroke: '#0b5cad', scale: 'rate' },
            { label: 'errors/s', stroke: '#c62828', scale: 'rate' },
            { label: 'p50 ms', stroke: '#2e7d32', scale: 'ms' },
            { label: 'p99 ms', stroke: '#b26a00', scale: 'ms' },
          ],
          axes: [{}, { scale: 'rate', label: 'per second' }, { scale: 'ms', side: 1, label: 'ms', grid: { show: false } }],
        },
        data,
        el.current,
      );
    } else {
      plot.current.setData(data);
    }
  }, [minutes]);
  useEffect(() => () => plot.current && plot.current.destroy(), []);
  return html`<div id="traffic-chart" ref=${el}></div>`;
}

const fmtMS = (v) => (v ? (v < 10 ? v.toFixed(2) : v.toFixed(0)) : '');

function KeyTable({ id, rows, withServer }) {
  return html`<table id=${id}>
    <thead><tr><th>Name</th>${withServer ? html`<th>Server</th>` : null}<th>Calls</th><th>Errors</th><th>Error rate</th>
      <th>p50 ms</th><th>p99 ms</th></tr></thead>
    <tbody>
      ${rows.map(
        (r) => html`<tr key=${r.name} data-key=${r.name}>
          <td>${r.name}</td>${withServer ? html`<td>${r.server || ''}</td>` : null}<td class="calls">${r.calls}</td><td>${r.errors}</td>
          <td>${r.calls ? ((100 * r.errors) / r.calls).toFixed(1) + ' %' : ''}</td><td>${fmtMS(r.p50ms)}</td><td>${fmtMS(r.p99ms)}</td>
        </tr>`,
      )}
    </tbody>
  </table>`;
}

function Traffic() {
  const v = useTraffic();
  if (!v) return html`<p class="muted">Waiting for the traffic summary…</p>`;
  const minutes = v.minutes || [];
  const outcomes = {};
  for (const m of minutes) for (const [k, n] of Object.entries(m.outcomes || {})) outcomes[k] = (outcomes[k] || 0) + n;
  const total = minutes.reduce((a, m) => a + m.calls, 0);
  return html`
    <h2>Traffic</h2>
    <p class="muted">Tool calls on this replica over the last hour, per minute (latency: the upper bound of the
      histogram bucket, within 50 %). Longer and across replicas: the Grafana dashboard (deploy/grafana) over
      toolsvc_calls_total and toolsvc_call_duration_seconds.</p>
    <p id="traffic-total">${total} ${total === 1 ? 'call' : 'calls'} in the last hour</p>
    ${minutes.length ? html`<${Chart} minutes=${minutes} />` : html`<p class="muted">No call in the last hour.</p>`}
    <h3>Errors by outcome</h3>
    <table id="traffic-outcomes"><tbody>
      ${Object.entries(outcomes).sort((a, b) => b[1] - a[1]).map(([k, n]) => html`<tr key=${k}><td>${k}</td><td>${n}</td></tr>`)}
    </tbody></table>
    <h3>By upstream</h3>
    <${KeyTable} id="traffic-servers" rows=${v.servers || []} />
    <h3>Tools with the most calls</h3>
    <${KeyTable} id="traffic-tools" rows=${v.tools || []} withServer=${true} />`;
}

// ---- Calls ----------------------------------------------------------------

// The Calls page's own event stream (?calls=1 and its filters): the audit
// lines already kept, then each new one. A principal gets its own lines
// only; an operator every principal's.
function Calls() {
  const [filter, setFilter] = useState({ principal: '', tool: '', outcome: '' });
  const [draft, setDraft] = useState(filter);
  const [state, setState] = useState({ lines: [], loaded: false, auth: true, err: '' });
  useEffect(() => {
    const params = new URLSearchParams({ calls: '1' });
    for (const [k, v] of Object.entries(filter)) if (v) params.set(k, v);
    setState({ lines: [], loaded: false, auth: true, err: '' });
    const es = new EventSource('/ui/api/events?' + params);
    es.addEventListener('calls', (e) => {
      const b = JSON.parse(e.data);
      setState((st) => ({ ...st, loaded: true, auth: b.auth, lines: [...b.lines.reverse(), ...st.lines].slice(0, 500) }));
    });
    return () => es.close();
  }, [filter]);
  const field = (name, label) =>
    html`<input id=${'calls-' + name} placeholder=${label} value=${draft[name]}
      onInput=${(e) => setDraft({ ...draft, [name]: e.currentTarget.value })} />`;
  return html`
    <h2>Calls</h2>
    <p class="muted">The audit log's recent lines on this replica (at most 2,000 kept), newest first${
      store.me && !store.me.admin ? ': yours only' : ''}. Arguments are never shown.</p>
    <form class="toolbar" id="calls-filter" onSubmit=${(e) => (e.preventDefault(), setFilter(draft))}>
      ${field('principal', 'principal')}${field('tool', 'tool (exposed name)')}${field('outcome', 'outcome (ok, tool_error, a code)')}
      <button type="submit">Filter</button>
    </form>
    ${state.loaded && !state.auth ? html`<p class="muted">No auth section: nothing is audited, so no line.</p>` : null}
    <table id="calls">
      <thead><tr><th>Time</th><th>Principal</th><th>Operation</th><th>Tool / target</th><th>Outcome</th><th>ms</th></tr></thead>
      <tbody>
        ${state.lines.map(
          (l) => html`<tr key=${l.seq} data-principal=${l.principal} data-tool=${(l.attrs && l.attrs.tool) || ''}>
            <td>${fmtTime(l.time)}</td><td>${l.principal}</td><td>${l.op}</td>
            <td>${l.attrs ? l.attrs.tool || l.attrs.uri || l.attrs.prompt || l.attrs.server || '' : ''}</td>
            <td class=${l.outcome === 'ok' ? '' : 'error'}>${l.outcome}</td><td>${l.ms ? l.ms.toFixed(1) : ''}</td>
          </tr>`,
        )}
      </tbody>
    </table>`;
}

// ---- Playground -----------------------------------------------------------

// fieldKind is how the form edits one top-level property of the input
// schema: a text box, a number, a checkbox, a choice, or JSON text for
// anything else (objects, arrays, unions).
function fieldKind(p) {
  if (!p || typeof p !== 'object') return 'json';
  if (Array.isArray(p.enum) && p.enum.every((v) => typeof v === 'string')) return 'enum';
  if (p.type === 'string') return 'string';
  if (p.type === 'integer' || p.type === 'number') return 'number';
  if (p.type === 'boolean') return 'boolean';
  return 'json';
}

// buildArguments checks the form before anything is sent: required
// properties present, numbers and JSON well-formed. It returns the
// arguments and the problems by property.
function buildArguments(schema, values) {
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  const args = {};
  const problems = {};
  for (const [name, p] of Object.entries(props)) {
    const kind = fieldKind(p);
    const v = values[name];
    const empty = v === undefined || v === '' || (kind === 'boolean' && v === undefined);
    if (empty) {
      if (required.has(name) && kind !== 'boolean') problems[name] = 'required';
      continue;
    }
    if (kind === 'number') {
      const n = Number(v);
      if (!Number.isFinite(n)) problems[name] = 'not a number';
      else if (p.type === 'integer' && !Number.isInteger(n)) problems[name] = 'not an integer';
      else args[name] = n;
    } else if (kind === 'json') {
      try {
        args[name] = JSON.parse(v);
      } catch (e) {
        problems[name] = 'not valid JSON: ' + e.message;
      }
    } else {
      args[name] = v;
    }
  }
  return { args, problems };
}

// Content renders one content item of a result. Every value is text or a
// data: URL of an image/audio media type the page checks: nothing an
// upstream sends becomes markup or a link.
function Content({ c }) {
  const mediaType = (t, kind) => typeof t === 'string' && new RegExp('^' + kind + '/[a-z0-9.+-]+$').test(t);
  switch (c.type) {
    case 'text':
      return html`<pre class="result-text">${c.text}</pre>`;
    case 'image':
      return mediaType(c.mimeType, 'image') && !/svg/.test(c.mimeType)
        ? html`<img class="result-image" alt="image result" src=${'data:' + c.mimeType + ';base64,' + c.data} />`
        : html`<pre>(an image of type ${String(c.mimeType)}, not shown)</pre>`;
    case 'audio':
      return mediaType(c.mimeType, 'audio')
        ? html`<audio controls src=${'data:' + c.mimeType + ';base64,' + c.data}></audio>`
        : html`<pre>(audio of type ${String(c.mimeType)}, not played)</pre>`;
    case 'resource_link':
      return html`<pre>resource link: ${String(c.uri)}${c.name ? ' (' + c.name + ')' : ''}</pre>`;
    case 'resource':
      return html`<pre>resource ${String(c.resource && c.resource.uri)}: ${(c.resource && c.resource.text) || '(binary)'}</pre>`;
    default:
      return html`<pre>${JSON.stringify(c, null, 2)}</pre>`;
  }
}

// readEvents reads a Server-Sent Events stream from a fetch response (a
// POST's: EventSource only GETs) and calls on(event, data) for each event.
async function readEvents(res, on) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let event = 'message';
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data += line.slice(6);
      }
      if (data) on(event, JSON.parse(data));
    }
  }
}

// SchemaForm renders an input schema's top-level properties as a form
// (text, number, checkbox, choice; JSON text for the rest). Every label,
// description and choice is the upstream's text, rendered as text.
function SchemaForm({ prefix, schema, values, setValues, problems }) {
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  const input = (n, p) => {
    const kind = fieldKind(p);
    const set = (v) => setValues({ ...values, [n]: v });
    const id = prefix + n;
    if (kind === 'boolean') return html`<input id=${id} type="checkbox" checked=${!!values[n]} onChange=${(e) => set(e.currentTarget.checked)} />`;
    if (kind === 'enum')
      return html`<select id=${id} onChange=${(e) => set(e.currentTarget.value)}>
        <option value="">—</option>${p.enum.map((v) => html`<option value=${v}>${v}</option>`)}</select>`;
    if (kind === 'json')
      return html`<textarea id=${id} rows="3" placeholder="JSON" onInput=${(e) => set(e.currentTarget.value)}>${values[n] || ''}</textarea>`;
    return html`<input id=${id} type="text" inputmode=${kind === 'number' ? 'decimal' : 'text'}
      value=${values[n] || ''} onInput=${(e) => set(e.currentTarget.value)} />`;
  };
  return html`<table>
    ${Object.entries(props).map(
      ([n, p]) => html`<tr key=${n}>
        <th><label for=${prefix + n}>${(p && typeof p.title === 'string' && p.title) || n}${required.has(n) ? ' *' : ''}</label></th>
        <td>${input(n, p)} <span class="muted">${(p && typeof p.description === 'string' && p.description) || ''}</span>
          ${problems[n] ? html`<div class="error field-problem" data-field=${n}>${problems[n]}</div>` : null}</td>
      </tr>`,
    )}
  </table>`;
}

// samplingText is a sampling request's messages as plain text lines.
function samplingText(params) {
  const lines = [];
  if (params && typeof params.systemPrompt === 'string') lines.push('system: ' + params.systemPrompt);
  for (const m of (params && params.messages) || []) {
    const cs = Array.isArray(m.content) ? m.content : [m.content];
    for (const c of cs) lines.push(String(m.role) + ': ' + (c && c.type === 'text' ? c.text : JSON.stringify(c)));
  }
  if (params && params.maxTokens) lines.push('(at most ' + params.maxTokens + ' tokens)');
  return lines.join('\n');
}

// webHost is the host of an http(s) URL, '' for anything else (such a URL
// is shown as text and never offered to open).
function webHost(u) {
  try {
    const p = new URL(u);
    return p.protocol === 'https:' || p.protocol === 'http:' ? p.host : '';
  } catch {
    return '';
  }
}

// The roots an operator may give one request (console.MaxRoots).
const MAX_ROOTS = 32;

// InputRequest renders one request of an input_required: an elicitation
// as a form from its requested schema, a sampling request as its messages
// with a box for the operator's reply. answer(id, response) records the
// answer (null: the operator declined a sampling request).
function InputRequest({ req, answer }) {
  const [values, setValues] = useState({});
  const [problems, setProblems] = useState({});
  const [reply, setReply] = useState('');
  if (req.kind === 'elicitation') {
    const accept = (e) => {
      e.preventDefault();
      const { args, problems } = buildArguments(req.schema, values);
      setProblems(problems);
      if (Object.keys(problems).length) return;
      answer(req.id, { elicitation: { action: 'accept', content: args } });
    };
    return html`<form class="input-request" id="elicit-form" data-request=${req.id} onSubmit=${accept}>
      <h3>The tool asks</h3>
      <p class="elicit-message">${req.message}</p>
      <${SchemaForm} prefix="elicit-" schema=${req.schema} values=${values} setValues=${setValues} problems=${problems} />
      <button id="elicit-accept" type="submit">Send</button>
      <button id="elicit-decline" type="button" onClick=${() => answer(req.id, { elicitation: { action: 'decline' } })}>Decline</button>
      <button id="elicit-cancel" type="button" onClick=${() => answer(req.id, { elicitation: { action: 'cancel' } })}>Cancel</button>
    </form>`;
  }
  if (req.kind === 'sampling') {
    const send = (e) => {
      e.preventDefault();
      if (!reply) return setProblems({ reply: 'required' });
      answer(req.id, { sampling: { role: 'assistant', content: [{ type: 'text', text: reply }], model: 'toolsvc-console-operator' } });
    };
    return html`<form class="input-request" id="sampling-form" data-request=${req.id} onSubmit=${send}>
      <h3>The tool asks for a model's reply (sampling)</h3>
      <pre id="sampling-messages">${samplingText(req.params)}</pre>
      <textarea id="sampling-reply" rows="3" placeholder="your reply" onInput=${(e) => setReply(e.currentTarget.value)}>${reply}</textarea>
      ${problems.reply ? html`<div class="error field-problem" data-field="reply">${problems.reply}</div>` : null}
      <button id="sampling-answer" type="submit">Answer</button>
      <button id="sampling-decline" type="button" onClick=${() => answer(req.id, null)}>Decline</button>
    </form>`;
  }
  if (req.kind === 'url') {
    // The URL is the upstream's: shown as text with the host it goes to,
    // never as a link; Open (an http(s) URL only) is the operator's
    // explicit action, in a new tab that cannot reach this page.
    const host = webHost(req.url);
    const act = (action) => () => answer(req.id, { elicitation: { action } });
    return html`<div class="input-request" id="url-request" data-request=${req.id}>
      <h3>The tool asks you to open a web page (URL elicitation)</h3>
      <p class="elicit-message">${req.message}</p>
      <p>It goes to <b id="url-host">${host || '(not a web address: it cannot be opened from here)'}</b>:</p>
      <pre id="url-text">${req.url}</pre>
      ${host ? html`<button type="button" id="url-open" onClick=${() => window.open(req.url, '_blank', 'noopener,noreferrer')}>Open in a new tab</button>` : null}
      <button type="button" id="url-accept" onClick=${act('accept')}>Accept</button>
      <button type="button" id="url-decline" onClick=${act('decline')}>Decline</button>
      <button type="button" id="url-cancel" onClick=${act('cancel')}>Cancel</button>
    </div>`;
  }
  if (req.kind === 'roots') {
    const send = (e) => {
      e.preventDefault();
      const uris = reply.split('\n').map((l) => l.trim()).filter(Boolean);
      const bad = uris.findIndex((u) => !/^file:\/\/[^\s]*\/./.test(u));
      const problem = uris.length > MAX_ROOTS ? `at most ${MAX_ROOTS} roots` : bad >= 0 ? `line ${bad + 1}: want a file: URI (file:///path)` : '';
      setProblems(problem ? { roots: problem } : {});
      if (!problem) answer(req.id, { roots: uris.map((uri) => ({ uri })) });
    };
    return html`<form class="input-request" id="roots-form" data-request=${req.id} onSubmit=${send}>
      <h3>The tool asks for your roots (the directories it may work in)</h3>
      <textarea id="roots-list" rows="3" placeholder="file:///path, one a line (none: no roots)" onInput=${(e) => setReply(e.currentTarget.value)}>${reply}</textarea>
      ${problems.roots ? html`<div class="error field-problem" data-field="roots">${problems.roots}</div>` : null}
      <button id="roots-answer" type="submit">Send</button>
    </form>`;
  }
  return html`<p class="muted">The tool asks for input of a kind the Playground does not give (${req.kind}).</p>`;
}

// What the caller can do about a refusal, by its reason (docs/errors.md).
const REASON_HINTS = {
  TASK_REQUIRED: 'This tool runs only as a task: "run as task" is now checked; call it again to run it as one.',
};

function Playground() {
  const s = useStore();
  const initial = new URLSearchParams(location.hash.split('?')[1] || '').get('tool') || '';
  const [name, setName] = useState(initial);
  const [tool, setTool] = useState(null);
  const [values, setValues] = useState({});
  const [problems, setProblems] = useState({});
  const [result, setResult] = useState(null);
  const [err, setErr] = useState('');
  const [hint, setHint] = useState(''); // REASON_HINTS of the last refusal
  const [busy, setBusy] = useState(false);
  const [progress, setProgress] = useState(null);
  const [logs, setLogs] = useState([]);
  const [asked, setAsked] = useState(null); // the input event waiting for answers
  const [asTask, setAsTask] = useState(false);
  const [ttl, setTtl] = useState(''); // the task's lifetime in seconds ('': the upstream's default)
  const [taskHandle, setTaskHandle] = useState('');
  const round = useRef(null); // {args, answers}
  const abort = useRef(null);
  const reset = () => {
    setProblems({});
    setResult(null);
    setErr('');
    setHint('');
    setProgress(null);
    setLogs([]);
    setAsked(null);
    setTaskHandle('');
  };
  useEffect(() => {
    setTool(null);
    setAsTask(false);
    setValues({});
    reset();
    if (!name) return;
    api('/ui/api/tool?name=' + encodeURIComponent(name))
      .then(setTool)
      .catch((e) => setErr(e.message));
  }, [name]);
  useEffect(() => () => abort.current && abort.current.abort(), []);
  // run posts one round (state and answers after the first) and follows
  // its stream: progress, log lines, then the result, a refusal, or what
  // the tool asks next.
  const run = async (args, state, responses, ttlMs) => {
    setBusy(true);
    setAsked(null);
    const ctrl = new AbortController();
    abort.current = ctrl;
    try {
      const res = await fetch('/ui/api/call/stream', {
        method: 'POST',
        signal: ctrl.signal,
        headers: { 'Content-Type': 'application/json', 'X-Toolsvc-CSRF': s.me.csrf },
        body: JSON.stringify({ name, arguments: args, state, responses, task: taskAsked() && !state, ttlMs }),
      });
      const fail = (body) => {
        const fields = {};
        for (const f of body.fields || []) fields[f.field.replace(/^arguments\.?/, '') || '(arguments)'] = f.description;
        setProblems(fields);
        setErr(`${body.code} ${body.reason}: ${body.message}`);
        setHint(REASON_HINTS[body.reason] || '');
        if (body.reason === 'TASK_REQUIRED') setAsTask(true);
      };
      if (!res.ok) return fail(await res.json());
      await readEvents(res, (event, data) => {
        if (event === 'progress') setProgress(data);
        else if (event === 'log') setLogs((ls) => [...ls, data].slice(-500));
        else if (event === 'result') setResult(data);
        else if (event === 'task') setTaskHandle(data.handle);
        else if (event === 'error') fail(data);
        else if (event === 'input') {
          round.current = { args, state: data.state, answers: {}, want: data.requests.length };
          setAsked(data);
        }
      });
    } catch (e2) {
      if (e2.name !== 'AbortError') setErr(e2.message);
    } finally {
      setBusy(false);
    }
  };
  const taskAsked = () => asTask || (tool && tool.taskSupport === 'required');
  const submit = (e) => {
    e.preventDefault();
    const { args, problems } = buildArguments(tool.inputSchema, values);
    let ttlMs;
    if (taskAsked() && ttl.trim() !== '') {
      // The core's one task.ttl rule (core.TaskTTL), checked here first.
      const secs = Number(ttl.trim());
      ttlMs = Math.round(secs * 1000);
      if (!Number.isFinite(secs) || ttlMs < 1 || ttlMs > TASK_TTL_MAX_MS) {
        problems['task.ttl'] = 'must be from 0.001 s to 365 days (31536000 s), or empty for the upstream\'s default';
      }
    }
    reset();
    setProblems(problems);
    if (Object.keys(problems).length) return; // shown before anything is sent
    run(args, '', undefined, ttlMs);
  };
  // answer records one answer; when every request has one, the next
  // round goes. Declining a sampling request (MCP has no declined
  // sampling result) ends the call here.
  const answer = (id, response) => {
    const r = round.current;
    if (response === null) {
      setAsked(null);
      setErr('You declined the sampling request: the call was not continued.');
      return;
    }
    r.answers[id] = response;
    if (Object.keys(r.answers).length === r.want) run(r.args, r.state, r.answers);
  };
  const pct = progress && progress.total > 0 ? Math.min(100, (100 * progress.progress) / progress.total) : null;
  return html`
    <h2>Playground</h2>
    <p class="muted">Call a tool as yourself: the same checks, limits and audit line as any caller. The form follows
      the tool's input schema and is checked before it is sent; progress, log lines and what the tool asks
      (a form, a web page to open, a model's reply, your roots) show here as the call runs.</p>
    <div class="toolbar">
      <input id="play-tool" placeholder="tool (exposed name)" value=${name} onChange=${(e) => setName(e.currentTarget.value.trim())} />
    </div>
    ${err ? html`<p class="error" id="play-error">${err}</p>` : null}
    ${hint ? html`<p class="hint" id="play-hint">${hint}</p>` : null}
    ${tool
      ? html`<form id="play-form" onSubmit=${submit}>
          <p><b>${tool.name}</b> <span class="muted">${tool.title || ''}</span></p>
          <${SchemaForm} prefix="arg-" schema=${tool.inputSchema} values=${values} setValues=${setValues} problems=${problems} />
          ${problems['(arguments)'] ? html`<p class="error field-problem">${problems['(arguments)']}</p>` : null}
          ${tool.taskSupport === 'optional' || tool.taskSupport === 'required'
            ? html`<p><label><input id="play-as-task" type="checkbox" checked=${asTask || tool.taskSupport === 'required'}
                disabled=${tool.taskSupport === 'required'} onChange=${(e) => setAsTask(e.currentTarget.checked)} /> run as task</label>
                ${taskAsked()
                  ? html` <label>ttl (s) <input id="play-task-ttl" type="text" inputmode="decimal" size="10" placeholder="upstream default"
                      value=${ttl} onInput=${(e) => setTtl(e.currentTarget.value)} /></label>`
                  : null}</p>
              ${problems['task.ttl'] ? html`<p class="error field-problem" id="play-task-ttl-problem">task.ttl: ${problems['task.ttl']}</p>` : null}`
            : null}
          <button id="play-call" type="submit" disabled=${busy || !!asked}>${busy ? 'Calling…' : 'Call'}</button>
        </form>`
      : null}
    ${progress
      ? html`<div id="play-progress">
          ${pct === null ? html`<progress></progress>` : html`<progress max="100" value=${pct}></progress>`}
          <span class="progress-text">${progress.total > 0 ? `${progress.progress} / ${progress.total}` : String(progress.progress)}</span>
          <span class="progress-message muted"> ${progress.message || ''}</span>
        </div>`
      : null}
    ${logs.length
      ? html`<div id="play-log"><h4>Log</h4>
          ${logs.map(
            (l, i) => html`<div key=${i} class=${'log-line level-' + l.level}>
              <span class="log-level">${l.level}</span> <span class="muted">${l.server}${l.logger ? '/' + l.logger : ''}</span>
              ${' '}<span class="log-data">${typeof l.data === 'string' ? l.data : JSON.stringify(l.data)}</span></div>`,
          )}</div>`
      : null}
    ${asked
      ? html`<div id="play-input">
          ${asked.requests.map((r) => html`<${InputRequest} key=${asked.state + r.id} req=${r} answer=${answer} />`)}
        </div>`
      : null}
    ${result ? html`<${ResultView} id="play-result" result=${result} />` : null}
    ${taskHandle ? html`<${TaskFollow} key=${taskHandle} handle=${taskHandle} />` : null}`;
}

// ResultView renders a tool's result: its content (text, images, audio,
// resource links) and structured content, every string as text.
function ResultView({ id, result }) {
  return html`<div id=${id} class=${result.isError ? 'error' : ''}>
    <h3>${result.isError ? 'The tool reported an error' : 'Result'}</h3>
    ${(result.content || []).map((c, i) => html`<${Content} key=${i} c=${c} />`)}
    ${result.structuredContent ? html`<h4>Structured content</h4><pre>${JSON.stringify(result.structuredContent, null, 2)}</pre>` : null}
  </div>`;
}

// TaskFollow follows one task by its handle (the core's WatchTask, as an
// event stream): its status live, what a 2026-07-28 task asks rendered as
// the Playground renders a call's requests and answered through the core's
// UpdateTask (POST /ui/api/tasks/answer), its result rendered like a
// call's once it has ended, and a Cancel button while it runs (the core's
// CancelTask).
function TaskFollow({ handle }) {
  const s = useStore();
  const [st, setSt] = useState(null);
  const [err, setErr] = useState('');
  const given = useRef({}); // the answers to the requests shown, by id
  useEffect(() => {
    const es = new EventSource('/ui/api/tasks/watch?handle=' + encodeURIComponent(handle));
    es.addEventListener('state', (e) => {
      const v = JSON.parse(e.data);
      given.current = {};
      setSt(v);
      if (v.task.terminal) es.close();
    });
    es.addEventListener('error', (e) => {
      if (e.data) setErr(errText(JSON.parse(e.data)));
      es.close();
    });
    return () => es.close();
  }, [handle]);
  const cancel = async () => {
    try {
      const res = await fetch('/ui/api/tasks/cancel', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Toolsvc-CSRF': s.me.csrf },
        body: JSON.stringify({ handle }),
      });
      const body = await res.json();
      if (!res.ok) return setErr(errText(body));
      setSt((cur) => ({ ...(cur || {}), task: body }));
    } catch (e2) {
      setErr(e2.message);
    }
  };
  // answer records one answer; when every request shown has one, they go
  // in one UpdateTask. The watch then sends the task's next state.
  const answer = async (id, response) => {
    if (response === null) return setErr('You declined the sampling request: the task still waits for it (Cancel ends it).');
    given.current[id] = response;
    if (Object.keys(given.current).length < st.requests.length) return;
    const responses = given.current;
    given.current = {};
    setErr('');
    try {
      const res = await fetch('/ui/api/tasks/answer', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Toolsvc-CSRF': s.me.csrf },
        body: JSON.stringify({ handle, responses }),
      });
      const body = await res.json();
      if (!res.ok) return setErr(errText(body));
      setSt((cur) => (cur && !cur.task.terminal ? { ...cur, task: body, requests: null } : cur));
    } catch (e2) {
      setErr(e2.message);
    }
  };
  const t = st && st.task;
  return html`<div id="task-follow" data-status=${t ? t.status : ''}>
    <h3>Task ${t ? html`<span class="muted">${t.tool} · ${t.taskId}</span>` : null}</h3>
    ${err ? html`<p class="error" id="task-error">${err}</p>` : null}
    ${t
      ? html`<p>Status: <b id="task-status">${t.status}</b>${t.waiting ? ' (' + t.waiting + ' waiting)' : ''}
          <span class="muted"> ${t.message || ''}</span>
          ${t.ttlSeconds ? html`<span class="muted" id="task-ttl"> · kept ${t.ttlSeconds} s</span>` : null}
          ${t.terminal ? null : html` <button id="task-cancel" type="button" onClick=${cancel}>Cancel</button>`}</p>`
      : html`<p class="muted">Following…</p>`}
    ${st && st.requests && st.requests.length && !t.terminal
      ? html`<div id="task-input">
          ${st.requests.map((r) => html`<${InputRequest} key=${(t.updated || '') + r.id} req=${r} answer=${answer} />`)}
        </div>`
      : null}
    ${st && st.result ? html`<${ResultView} id="task-result" result=${st.result} />` : null}
    ${st && st.error ? html`<p class="error" id="task-failure">${errText(st.error)}</p>` : null}
  </div>`;
}

// TASK_TTL_MAX_MS is core.MaxTaskTTL (365 days) in milliseconds.
const TASK_TTL_MAX_MS = 365 * 24 * 3600 * 1000;

function errText(b) {
  return `${b.code} ${b.reason}: ${b.message}`;
}

// ---- Tasks ----------------------------------------------------------------

// The Tasks page's own event stream (?tasks=1): the caller's tasks on this
// replica (ListTasks), again every 2 s when they changed.
function Tasks() {
  const [rows, setRows] = useState(null);
  const [err, setErr] = useState('');
  const [open, setOpen] = useState(''); // the handle of the task followed below
  useEffect(() => {
    const es = new EventSource('/ui/api/events?tasks=1');
    es.addEventListener('tasks', (e) => (setRows(JSON.parse(e.data)), setErr('')));
    es.addEventListener('tasks-error', (e) => {
      const b = JSON.parse(e.data);
      setErr(`${b.code} ${b.reason}: ${b.message}`);
    });
    return () => es.close();
  }, []);
  return html`
    <h2>Tasks</h2>
    <p class="muted">Your tool calls that run as MCP tasks, on this replica, newest first (toolsvc tasks on the CLI
      does the same). Open one to follow it: its status live, its result, Cancel while it runs.</p>
    ${err ? html`<p class="error" id="tasks-error">${err}</p>` : null}
    ${rows === null ? html`<p class="muted">Loading…</p>` : null}
    ${rows && rows.length === 0 ? html`<p class="muted">No task.</p>` : null}
    ${rows && rows.length
      ? html`<table id="tasks">
          <thead><tr><th>Tool</th><th>Task id</th><th>Status</th><th>Message</th><th>Created</th><th>Updated</th><th>Era</th><th></th></tr></thead>
          <tbody>
            ${rows.map(
              (r) => html`<tr key=${r.server + '/' + r.taskId} data-task=${r.taskId} data-status=${r.status}>
                <td>${r.tool}</td><td>${r.taskId}</td>
                <td class=${r.status === 'failed' ? 'error' : r.terminal ? '' : 'state-connecting'}>${r.status}${
                  r.waiting ? ' (' + r.waiting + ' waiting)' : ''}</td>
                <td>${r.message || ''}</td><td>${fmtTime(r.created)}</td><td>${fmtTime(r.updated)}</td><td>${r.era}</td>
                <td><button class="task-open" type="button" onClick=${() => setOpen(r.handle)}>Open</button></td>
              </tr>`,
            )}
          </tbody>
        </table>`
      : null}
    ${open ? html`<${TaskFollow} key=${open} handle=${open} />` : null}`;
}

// ---- Logins ---------------------------------------------------------------

// The Logins page: the userOAuth logins the caller may see (its own; an
// operator's: everyone's), from its own event stream (?logins=1: again
// when they changed); Log out revokes one (the core's admin logout). An
// operator whose token store cannot list everyone's (Redis) names the
// principal.
function Logins() {
  const s = useStore();
  const [body, setBody] = useState(null);
  const [err, setErr] = useState('');
  const [who, setWho] = useState('');
  const [lookup, setLookup] = useState(null); // an operator's look-up of one principal
  const [done, setDone] = useState('');
  useEffect(() => {
    const es = new EventSource('/ui/api/events?logins=1');
    es.addEventListener('logins', (e) => (setBody(JSON.parse(e.data)), setErr('')));
    es.addEventListener('logins-error', (e) => {
      const b = JSON.parse(e.data);
      setErr(`${b.code} ${b.reason}: ${b.message}`);
    });
    return () => es.close();
  }, []);
  const find = async (e) => {
    e.preventDefault();
    setLookup(null);
    if (!who) return;
    try {
      setLookup(await api('/ui/api/logins?principal=' + encodeURIComponent(who)));
    } catch (e2) {
      setErr(e2.message);
    }
  };
  const logout = async (l) => {
    setDone('');
    try {
      await api('/ui/api/logins/logout', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Toolsvc-CSRF': s.me.csrf },
        body: JSON.stringify({ server: l.server, principal: l.principal }),
      });
      setDone(`${l.principal} is logged out of ${l.server}`);
      if (lookup) setLookup({ ...lookup, logins: lookup.logins.filter((x) => x !== l) });
    } catch (e2) {
      setErr(e2.message);
    }
  };
  // A login of one's own (the core's OpAdminLogin, as `toolsvc login`):
  // the link is shown as text with the host it goes to, and opened only by
  // the Open button, in a new tab that cannot reach this page.
  const [link, setLink] = useState(null); // {server, principal, loggedIn, loginUrl}
  const perUser = s.upstreams.filter((u) => u.perUser && !u.refused).map((u) => u.name);
  const startLogin = async (e) => {
    e.preventDefault();
    setErr('');
    setLink(null);
    const f = e.currentTarget.elements;
    const req = { server: f['login-server'].value, force: f['login-force'].checked };
    if (f['login-principal']) req.principal = f['login-principal'].value.trim();
    try {
      setLink(
        await api('/ui/api/logins/login', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'X-Toolsvc-CSRF': s.me.csrf },
          body: JSON.stringify(req),
        }),
      );
    } catch (e2) {
      setErr(e2.message);
    }
  };
  const shown = lookup || body;
  return html`
    <h2>Logins</h2>
    <div id="login-section">
      <h3>Log in to an upstream</h3>
      ${perUser.length === 0
        ? html`<p class="muted" id="login-nothing">No upstream you may see has per-user credentials.</p>`
        : html`<form class="toolbar" id="login-form" onSubmit=${startLogin}>
            <select id="login-server" name="login-server">
              ${perUser.map((n) => html`<option value=${n}>${n}</option>`)}
            </select>
            ${s.me && !s.me.auth ? html`<input id="login-principal" name="login-principal" placeholder="principal (whose login)" />` : null}
            <label><input type="checkbox" id="login-force" name="login-force" /> again, even if logged in</label>
            <button type="submit" id="login-start">Get a login link</button>
          </form>`}
      ${link && link.loggedIn
        ? html`<p id="login-done">${link.principal} is logged in to ${link.server} already.</p>`
        : null}
      ${link && !link.loggedIn
        ? html`<div id="login-got">
            <p>To log ${link.principal} in to ${link.server}, open this address; it goes to${' '}
              <b id="login-host">${webHost(link.loginUrl) || '(not a web address)'}</b>. This page lists the login once it is done.</p>
            <pre id="login-link">${link.loginUrl}</pre>
            ${webHost(link.loginUrl)
              ? html`<button type="button" id="login-open" onClick=${() => window.open(link.loginUrl, '_blank', 'noopener,noreferrer')}>
                  Open the login page</button>`
              : null}
          </div>`
        : null}
    </div>
    <p class="muted">${s.me && s.me.admin ? "Every principal's" : 'Your'} logins to upstreams in credentials mode userOAuth:
      toolsvc keeps a token per principal and server (never shown). Log out revokes it at the authorization server and
      deletes it; the next call asks for a new login.</p>
    ${s.me && s.me.admin
      ? html`<form class="toolbar" id="logins-find" onSubmit=${find}>
          <input id="logins-principal" placeholder="principal" value=${who} onInput=${(e) => setWho(e.currentTarget.value.trim())} />
          <button type="submit">Show</button>
          ${lookup ? html`<button type="button" onClick=${() => (setLookup(null), setWho(''))}>All</button>` : null}
        </form>`
      : null}
    ${err ? html`<p class="error" id="logins-error">${err}</p>` : null}
    ${done ? html`<p id="logins-done">${done}</p>` : null}
    ${shown === null ? html`<p class="muted">Loading…</p>` : null}
    ${shown && shown.logins.length === 0 ? html`<p class="muted" id="logins-none">No login.</p>` : null}
    ${shown && shown.logins.length
      ? html`<table id="logins">
          <thead><tr><th>Principal</th><th>Server</th><th>Access token expires</th><th>Refreshable</th><th></th></tr></thead>
          <tbody>
            ${shown.logins.map(
              (l) => html`<tr key=${l.principal + '@' + l.server} data-login=${l.principal + '@' + l.server}>
                <td>${l.principal}</td><td>${l.server}</td><td>${l.expiry ? fmtTime(l.expiry) : '—'}</td>
                <td>${l.refreshable ? 'yes' : 'no'}</td>
                <td><button class="logout" onClick=${() => logout(l)}>Log out</button></td>
              </tr>`,
            )}
          </tbody>
        </table>`
      : null}
    ${shown && shown.more ? html`<p class="muted">More than ${shown.logins.length} logins: name a principal to see theirs.</p>` : null}`;
}

// ---- Config ---------------------------------------------------------------

// The Config page: the configuration file's status (an operator's), from
// the page's own event stream (?config=1: again after each reload).
function Config() {
  const [st, setSt] = useState(null);
  const [eff, setEff] = useState(null);
  const [err, setErr] = useState('');
  useEffect(() => {
    api('/ui/api/config').then(setSt).catch((e) => setErr(e.message)); // the refusal, if any, said once
    const es = new EventSource('/ui/api/events?config=1');
    es.addEventListener('config', (e) => setSt(JSON.parse(e.data)));
    es.addEventListener('effective', (e) => setEff(JSON.parse(e.data)));
    return () => es.close();
  }, []);
  if (err) return html`<p class="error" id="config-error">${err}</p>`;
  if (!st) return html`<p class="muted">Loading…</p>`;
  if (st.demo) return html`<p id="config-demo">toolsvc runs the built-in demo: no configuration file.</p>`;
  const list = (label, xs) => (xs && xs.length ? html`<tr><th>${label}</th><td>${xs.join(', ')}</td></tr>` : null);
  return html`
    <h2>Config</h2>
    <p class="muted">The configuration file and its last reload (SIGHUP, a change of the file, or ReloadConfig). Problems
      are listed without secret values.</p>
    <table id="config">
      <tr><th>File</th><td>${st.Path}</td></tr>
      <tr><th>Loaded</th><td>${fmtTime(st.Loaded)}</td></tr>
      <tr><th>Reloads</th><td id="config-reloads">${st.Reloads}</td></tr>
      ${st.Reloads
        ? html`<tr><th>Last reload</th><td id="config-last" class=${st.LastReloadOK ? '' : 'error'}>
            ${fmtTime(st.LastReload)} ${st.LastReloadOK ? 'applied' : 'refused: the running configuration was kept'}</td></tr>`
        : null}
      ${st.LastReloadError ? html`<tr><th>Problems</th><td><pre id="config-problems">${st.LastReloadError}</pre></td></tr>` : null}
      ${list('Warnings', st.Warnings)}${list('Added', st.Added)}${list('Removed', st.Removed)}${list('Restarted', st.Restarted)}
      ${(st.Discovery || []).map(
        (d) => html`<tr key=${d.Name}><th>Discovery ${d.Name}</th><td>${d.State}${d.Synced ? ', synced' : ''}, ${d.Objects} objects${
          d.Err ? ': ' + d.Err : ''}</td></tr>`,
      )}
    </table>
    <h3>Effective configuration</h3>
    <p class="muted">What runs, as toolsvc loaded it from the file: every secret (a value from a secret reference,
      header and environment values, tokens, client secrets, passwords) shown as [redacted]. Unset values are left out.</p>
    ${eff ? html`<pre id="config-effective">${JSON.stringify(eff, null, 2)}</pre>` : html`<p class="muted">Loading…</p>`}`;
}

// ---- start ----------------------------------------------------------------

api('/ui/api/me')
  .then((me) => {
    store.me = me;
    store.emit();
  })
  .catch((e) => {
    if (e.status === 401) location.href = '/ui/login';
  });
connect();
const root = document.getElementById('app');
root.textContent = ''; // the static "Loading…"
render(html`<${App} />`, root);
