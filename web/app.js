/* slabtap's page: one or two runs (?run=N&cmp=M), every panel drawn from the
 * admin endpoint's JSON API (/api/runs, /api/run/{sizes,classes,series,
 * traffic,advice,reads,reports,evictions,snapshot,targets}), polled every stats interval while the run is live and
 * read once for a finished run. No inline script, nothing from another
 * origin (the server's Content-Security-Policy forbids both).
 *
 * For tests and tools the page writes its own state into the DOM:
 *   body[data-state]        "loading", then "ready" once every view drew
 *   body[data-errors]       errors seen (window.onerror, unhandled
 *                           rejections, console.error/warn, CSP violations)
 *   body[data-scroll-width] document width vs body[data-client-width]
 *   .view[data-run-id], [data-polls], [data-ready]
 *   canvas[data-points]     points drawn in that chart (all datasets)
 *   table.classes tr[data-class-id] > td[data-key][data-v]: the raw numbers
 *   table.readclasses tr[data-class-id] > td[data-key][data-v]: the same
 *   p.hits-advice[data-hits-advice]  "present" (the line of words from the
 *                           saved report), "absent" (a hint with the command)
 *   canvas[data-chart="mrc"][data-curves]  curves of the saved MRC drawn
 *   section[data-panel="shadows"][data-targets]  targets shown (primary and
 *                           shadows; the panel is hidden without a shadow)
 *   ul.verdicts li.verdict-line[data-target]  one verdict line per shadow
 *   canvas[data-marks]      events (restarts) marked on a time chart
 *   window.slabtapPage.hitsAdviceLine(report)  the line made of a report
 */
'use strict';

(function () {
  // --- errors: counted and shown, never silent ---------------------------
  const errors = [];
  function noteError(msg) {
    errors.push(String(msg));
    document.body.dataset.errors = String(errors.length);
    const box = document.getElementById('errors');
    if (box) {
      box.hidden = false;
      box.textContent = errors.slice(-10).join('\n');
    }
  }
  window.addEventListener('error', function (e) {
    noteError('error: ' + (e.message || e.type) + (e.filename ? ' (' + e.filename + ':' + e.lineno + ')' : ''));
  });
  window.addEventListener('unhandledrejection', function (e) {
    noteError('unhandled rejection: ' + (e.reason && e.reason.stack ? e.reason.stack : e.reason));
  });
  document.addEventListener('securitypolicyviolation', function (e) {
    noteError('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI);
  });
  for (const level of ['error', 'warn']) {
    const orig = console[level].bind(console);
    console[level] = function () {
      noteError('console.' + level + ': ' + Array.prototype.map.call(arguments, String).join(' '));
      orig.apply(null, arguments);
    };
  }

  // --- palette: Okabe-Ito, plus a dash pattern and a point shape each ----
  const OI = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000', '#B8A000'];
  const DASHES = [[], [6, 3], [2, 2], [10, 3, 2, 3]];
  const SHAPES = ['circle', 'triangle', 'rect', 'rectRot', 'star', 'crossRot', 'rectRounded', 'cross'];
  function style(i) {
    return {
      borderColor: OI[i % OI.length],
      backgroundColor: OI[i % OI.length],
      borderDash: DASHES[i % DASHES.length],
      pointStyle: SHAPES[i % SHAPES.length],
    };
  }
  // a hatched fill, so an area is told apart by more than its color
  function hatch(color, angle) {
    const c = document.createElement('canvas');
    c.width = c.height = 8;
    const g = c.getContext('2d');
    g.strokeStyle = color;
    g.globalAlpha = 0.55;
    g.lineWidth = 2;
    g.beginPath();
    if (angle) { g.moveTo(0, 0); g.lineTo(8, 8); } else { g.moveTo(0, 8); g.lineTo(8, 0); }
    g.stroke();
    return g.createPattern(c, 'repeat');
  }

  // --- formatting ----------------------------------------------------------
  const nf = new Intl.NumberFormat('en-US');
  function fmtInt(v) { return v == null ? '–' : nf.format(Math.round(v)); }
  function fmtNum(v, d) { return v == null || !isFinite(v) ? '–' : Number(v).toFixed(d); }
  function fmtBytes(v) {
    if (v == null) return '–';
    const u = ['B', 'KB', 'MB', 'GB', 'TB'];
    let i = 0, x = Math.abs(v);
    while (x >= 1024 && i < u.length - 1) { x /= 1024; i++; }
    return (v < 0 ? '-' : '') + (i ? x.toFixed(x < 10 ? 2 : 1) : String(Math.round(x))) + ' ' + u[i];
  }
  // one decimal of megabytes (MiB), as `slabtap model advise` prints them
  function fmtMB(bytes) { return fmtNum(bytes / 1048576, 1) + ' MB'; }
  function fmtPct(ratio) { return fmtNum(100 * ratio, 2) + ' %'; }
  function fmtSigned(v, d) { return (v < 0 ? '-' : '+') + fmtNum(Math.abs(v), d); }
  // the saved hit-ratio advice in one line of words:
  //   "slab_sizes 32, fit to reads: +2.6 points hit ratio (87.99 % -> 90.60 %)
  //    in the same 35.0 MB; the current hit ratio in 33.0 MB (-5.7 %)"
  // with the measured numbers beside the predicted ones when --verify ran
  function hitsAdviceLine(a) {
    const cur = a.current, rec = a.recommended, sm = a.smallest_memory_same_hit_ratio;
    const budget = a.budget_bytes;
    const cp = cur.predicted, rp = rec.predicted, cm = cur.measured, rm = rec.measured;
    let s;
    if (rec.label === cur.label && rec.flags === cur.flags) {
      s = 'keep ' + cur.label + ': no candidate predicts more hits than ' + fmtPct(cp.hit_ratio) +
        (cm ? ' (measured ' + fmtPct(cm.hit_ratio) + ')' : '') + ' in ' + fmtMB(budget);
    } else {
      s = rec.label + ': ' + fmtSigned(100 * (rp.hit_ratio - cp.hit_ratio), 1) + ' points hit ratio (' +
        fmtPct(cp.hit_ratio) + ' -> ' + fmtPct(rp.hit_ratio) + ') in the same ' + fmtMB(budget);
      if (cm && rm) {
        s += ', measured ' + fmtSigned(100 * (rm.hit_ratio - cm.hit_ratio), 1) + ' points (' +
          fmtPct(cm.hit_ratio) + ' -> ' + fmtPct(rm.hit_ratio) + ') in ' + fmtMB(rm.memory_bytes);
      }
    }
    if (sm && budget > 0) {
      s += '; the current hit ratio in ' + fmtMB(sm.predicted.memory_bytes) + ' (' +
        fmtSigned((100 * (sm.predicted.memory_bytes - budget)) / budget, 1) + ' %)';
    }
    return s;
  }
  function fmtTime(ns) { return ns ? new Date(ns / 1e6).toISOString().replace('T', ' ').replace(/\..*/, ' UTC') : '–'; }
  function fmtSecs(s) {
    if (s < 0) return '-' + fmtSecs(-s);
    s = Math.round(s);
    const m = Math.floor(s / 60);
    return m ? m + ':' + String(s % 60).padStart(2, '0') : s + 's';
  }
  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text; // data is never parsed as HTML
    return e;
  }

  // --- the API ---------------------------------------------------------------
  // With --http-token the page is opened as /#token=TOKEN and sends it.
  const token = (location.hash.match(/token=([^&]+)/) || [])[1];
  async function api(path) {
    const headers = token ? { Authorization: 'Bearer ' + decodeURIComponent(token) } : {};
    let r;
    try {
      r = await fetch(path, { headers: headers, cache: 'no-store' });
    } catch (e) {
      return { status: 0, body: { error: 'endpoint unreachable' } };
    }
    let body = null;
    try { body = await r.json(); } catch (e) { body = { error: 'answer is not JSON (status ' + r.status + ')' }; }
    return { status: r.status, body: body };
  }

  // A 503 (busy: the queue is full, a query went over its budget, the
  // advice is being computed) is asked again, 0.5 s doubling to 8 s (or
  // when the answer's retry_after_s says), at most RETRY_TRIES times;
  // onWait(what the server said, ms until the next try, tries so far)
  // lets the panel say what it is waiting for.
  const RETRY_FIRST_MS = 500, RETRY_MAX_MS = 8000, RETRY_TRIES = 16;
  async function apiRetry(path, onWait, stopped) {
    let delay = RETRY_FIRST_MS;
    for (let i = 1; ; i++) {
      const r = await api(path);
      // 202: the answer is being computed (the advice); 503: busy
      if ((r.status !== 503 && r.status !== 202) || i > RETRY_TRIES || (stopped && stopped())) {
        r.tries = i;
        return r;
      }
      const hint = r.body && r.body.retry_after_s > 0 ? r.body.retry_after_s * 1000 : 0;
      const wait = Math.min(RETRY_MAX_MS, hint || delay);
      if (!hint) delay = Math.min(RETRY_MAX_MS, delay * 2);
      if (onWait) onWait((r.body && (r.body.computing || r.body.error)) || 'busy', wait, i);
      await new Promise((res) => setTimeout(res, wait));
      if (stopped && stopped()) return r;
    }
  }
  function waitText(what, msg, wait) {
    return 'waiting for ' + what + ': ' + msg + ' (asking again in ' + fmtNum(wait / 1000, 1) + ' s)';
  }

  // --- axes: human ticks -------------------------------------------------------
  // a step of 1, 2 or 5 times a power of ten, times a power of base (1024
  // for bytes: 10 KB, 20 MB; 10 for counts) giving at most n ticks over span
  function niceStep(span, n, base) {
    if (!(span > 0)) return 1;
    let unit = 1;
    while (unit * base <= span / n) unit *= base;
    for (let p = 1; ; p *= 10) {
      for (const m of [1, 2, 5]) if (m * p * unit * n >= span) return m * p * unit;
    }
  }
  // ticks of a byte axis at 1/2/5 x powers of 1024 (10 KB, 64 MB ... not 9.77 KB)
  function bytesTicks(axis) {
    const step = niceStep(axis.max - Math.min(0, axis.min), 5, 1024);
    const ticks = [];
    for (let v = 0; v <= axis.max + step / 1e6; v += step) ticks.push({ value: v });
    axis.ticks = ticks;
  }
  function fmtBytesTick(v) { return fmtBytes(v).replace(/\.0+ /, ' '); }
  function bytesAxis(title, max) {
    const ax = { beginAtZero: true, afterBuildTicks: bytesTicks, ticks: { callback: fmtBytesTick } };
    if (title) ax.title = { display: true, text: title };
    if (max > 0) ax.max = Math.ceil(max / niceStep(max, 5, 1024)) * niceStep(max, 5, 1024);
    return ax;
  }
  // time since the run started, every chart of a view over the same range
  // [0, run's end or now] with ticks at whole 1/2/5/10/15/30 s, minutes, hours
  const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
  function timeTicks(axis) {
    const span = axis.max - axis.min;
    const step = TIME_STEPS.find((x) => span / x <= 6) || niceStep(span, 6, 10);
    const ticks = [];
    for (let v = Math.ceil(axis.min / step) * step; v <= axis.max + 1e-9; v += step) ticks.push({ value: v });
    axis.ticks = ticks;
  }
  function fmtClock(s) {
    s = Math.round(s);
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), x = s % 60;
    return h ? h + ':' + String(m).padStart(2, '0') + ':' + String(x).padStart(2, '0') : m + ':' + String(x).padStart(2, '0');
  }

  // --- charts ------------------------------------------------------------------
  Chart.defaults.animation = false;
  Chart.defaults.font.size = 11;
  Chart.defaults.color = '#3d3d3d';
  Chart.defaults.plugins.legend.labels.usePointStyle = true;
  Chart.defaults.plugins.legend.labels.boxWidth = 8;
  Chart.defaults.elements.point.radius = 0;
  Chart.defaults.elements.point.hoverRadius = 3;
  Chart.defaults.elements.line.borderWidth = 1.5;
  Chart.defaults.maintainAspectRatio = false;

  // vertical lines at the ladder's chunk sizes, labelled with class and waste
  const ladderPlugin = {
    id: 'ladder',
    afterDatasetsDraw(chart, args, opts) {
      const lad = opts && opts.ladder;
      if (!lad || !lad.length) return;
      const x = chart.scales.x, area = chart.chartArea, g = chart.ctx;
      g.save();
      g.font = '10px system-ui, sans-serif';
      g.textAlign = 'right';
      let lastLabel = Infinity;
      for (let i = lad.length - 1; i >= 0; i--) {
        const c = lad[i];
        if (c.chunk_size < x.min || c.chunk_size > x.max) continue;
        const px = x.getPixelForValue(c.chunk_size);
        g.strokeStyle = c.writes ? '#D55E00' : '#9a9a9a';
        g.setLineDash(c.writes ? [4, 2] : [1, 3]);
        g.lineWidth = 1;
        g.beginPath(); g.moveTo(px, area.top); g.lineTo(px, area.bottom); g.stroke();
        if (c.writes && lastLabel - px > 34) {
          g.fillStyle = '#9a4400';
          g.save();
          g.translate(px - 2, area.top + 2);
          g.rotate(-Math.PI / 2);
          g.fillText('c' + c.class_id + ' ' + fmtNum(c.waste_pct, 1) + '%', 0, 0);
          g.restore();
          lastLabel = px;
        }
      }
      g.restore();
    },
  };
  Chart.register(ladderPlugin);

  // each line's name at its right end, so a series is told by its label and
  // not by its color alone (labels nudged apart so they never overlap)
  const endLabelPlugin = {
    id: 'endLabels',
    afterDatasetsDraw(chart, args, opts) {
      if (!opts || !opts.on || chart.data.datasets.length < 2) return;
      const g = chart.ctx, area = chart.chartArea, y = chart.scales.y;
      const items = [];
      chart.data.datasets.forEach((ds, i) => {
        if (!chart.isDatasetVisible(i)) return;
        for (let k = ds.data.length - 1; k >= 0; k--) {
          const p = ds.data[k];
          if (p && p.y != null) {
            items.push({ y: y.getPixelForValue(p.y), text: String(ds.label).split(' (')[0].replace(/ classes$/, ''), color: ds.borderColor });
            break;
          }
        }
      });
      items.sort((a, b) => a.y - b.y);
      for (let i = 1; i < items.length; i++) items[i].y = Math.max(items[i].y, items[i - 1].y + 10);
      g.save();
      g.font = '10px system-ui, sans-serif';
      g.textBaseline = 'middle';
      for (const it of items) {
        g.fillStyle = it.color;
        g.fillText(it.text, area.right + 3, Math.min(it.y, area.bottom + 20));
      }
      g.restore();
    },
  };
  Chart.register(endLabelPlugin);

  // a vertical line at each event (a shadow's start, restart, exit), in
  // its target's color, labelled with the event
  const eventsPlugin = {
    id: 'events',
    afterDatasetsDraw(chart, args, opts) {
      const marks = opts && opts.marks;
      if (!marks || !marks.length) return;
      const x = chart.scales.x, area = chart.chartArea, g = chart.ctx;
      g.save();
      g.font = '10px system-ui, sans-serif';
      g.setLineDash([3, 3]);
      g.lineWidth = 1;
      for (const m of marks) {
        if (m.x < x.min || m.x > x.max) continue;
        const px = x.getPixelForValue(m.x);
        g.strokeStyle = m.color;
        g.beginPath(); g.moveTo(px, area.top); g.lineTo(px, area.bottom); g.stroke();
        g.fillStyle = m.color;
        g.save();
        g.translate(px + 2, area.top + 2);
        g.rotate(Math.PI / 2);
        g.fillText(m.label, 0, 0);
        g.restore();
      }
      g.restore();
      chart.canvas.dataset.marks = String(marks.length);
    },
  };
  Chart.register(eventsPlugin);
  const END_LABELS = { endLabels: { on: true } };
  const END_PAD = { padding: { right: 52 } }; // room for "22 other" at 10 px
  const READS_EVERY_MS = 10000;
  const TARGETS_EVERY_MS = 2000; // /api/run/targets of a live run
  const TIME_CHARTS = ['pages', 'evictions', 'memory', 'rates', 'hits', 'latency', 'classhits', 'thits', 'tevictions']; // /api/run/reads of a live run: per-minute counts

  function secondsAxis(title, range) {
    const ax = {
      type: 'linear',
      title: { display: !!title, text: title },
      afterBuildTicks: timeTicks,
      ticks: { callback: (v) => fmtClock(v) },
    };
    if (range) { ax.min = range.min; ax.max = range.max; }
    return ax;
  }
  function countPoints(chart) {
    let n = 0;
    for (const ds of chart.data.datasets) for (const p of ds.data) if (p != null && (typeof p !== 'object' || p.y != null)) n++;
    return n;
  }

  // --- one run: all its panels --------------------------------------------------
  class View {
    constructor(root, run, side, page) {
      this.root = root;
      this.run = run;       // a row of /api/runs' runs, or the current run
      this.side = side;
      this.page = page;
      this.charts = {};
      this.timer = null;
      this.adviceTimer = null;
      this.polls = 0;
      this.sort = { key: 'class_id', dir: 1 };
      this.classRows = [];
      this.reports = null;
      this.readsAt = 0;
      this.targetsAt = 0;
      this.stopped = false;
      root.dataset.runId = String(run.run_id);
      root.dataset.side = side;
      root.dataset.polls = '0';
      root.querySelector('.run-title').textContent = (side === 'B' ? 'B: ' : compareOn(page) ? 'A: ' : '') +
        'run ' + run.run_id + ' · ' + run.name + kindText(run);
      this.setupTable();
    }

    get live() { return this.page.current && this.run.run_id === this.page.current.run_id; }

    q(sel) { return this.root.querySelector(sel); }

    // every time chart of this view: [0, the run's length] (now, while live)
    timeRange() {
      const r = this.run, end = r.ended_ns || Date.now() * 1e6;
      return { min: 0, max: Math.max(1, Math.ceil((end - r.started_ns) / 1e9)) };
    }

    // the numbers at the top: from what the panels fetched (h: more of them)
    headline(h) {
      this.head = Object.assign(this.head || {}, h);
      const x = this.head, box = this.q('.headline');
      if (!box) return;
      const item = (k, label, text) => {
        const e = el('span', { class: 'hl', 'data-k': k }, '');
        e.append(el('b', {}, text), ' ' + label);
        return e;
      };
      // rows the recorder could not keep: the running run's from the proxy itself
      const r = this.run, dropped = this.live ? this.page.current.rows_dropped : r.rows_dropped;
      box.replaceChildren(
        item('memory', 'memory used', x.malloced == null ? '–' : fmtBytes(x.malloced) + ' / ' + fmtBytes(x.limit)),
        item('waste', 'chunk waste', x.waste_pct == null ? '–' : fmtNum(x.waste_pct, 1) + ' %'),
        item('evictions', 'evictions/s', x.ev_per_s == null ? '–' : fmtNum(x.ev_per_s, 1)),
        item('hits', 'hit ratio', x.hit_ratio == null ? '–' : fmtPct(x.hit_ratio)),
        item('writes', 'writes/s', x.writes_per_s == null ? '–' : fmtNum(x.writes_per_s, x.writes_per_s < 10 ? 1 : 0)),
        item('lost', 'rows lost', dropped == null ? '–' : fmtInt(dropped)));
    }

    meta(extra) {
      const r = this.run;
      const parts = [this.live ? 'live' : r.crashed ? 'crashed' : 'finished',
        'started ' + fmtTime(r.started_ns)];
      if (r.ended_ns) parts.push('ran ' + fmtSecs((r.ended_ns - r.started_ns) / 1e9));
      if (r.upstream) parts.push('memcached ' + r.upstream);
      if (r.rows_recorded != null) parts.push(fmtInt(r.rows_recorded) + ' writes recorded');
      if (r.settings) parts.push('-f ' + r.settings.growth_factor + ', -n ' + r.settings.chunk_size);
      if (extra) parts.push(extra);
      this.q('.run-meta').textContent = parts.join(' · ');
    }

    chart(name, config) {
      const canvas = this.q('canvas[data-chart="' + name + '"]');
      let ch = this.charts[name];
      if (!ch) {
        ch = this.charts[name] = new Chart(canvas, config);
      } else {
        ch.data = config.data;
        Object.assign(ch.options, config.options || {});
        ch.update('none');
      }
      canvas.dataset.points = String(countPoints(ch));
      canvas.dataset.datasets = String(ch.data.datasets.length);
      return ch;
    }

    // GET path, a 503 asked again (apiRetry) while the panels say so
    fetch(path, what, panels) {
      return apiRetry(path, (msg, wait) => {
        for (const p of panels) this.panelError(p, waitText(what, msg, wait), true);
      }, () => this.stopped);
    }

    panelError(panel, msg, waiting) {
      const sec = this.q('[data-panel="' + panel + '"]');
      let p = sec.querySelector('.panel-error');
      if (!p) { p = el('p', { class: 'panel-error muted' }); sec.appendChild(p); }
      p.textContent = msg || '';
      p.hidden = !msg;
      if (waiting) p.dataset.waiting = '1';
      else delete p.dataset.waiting;
    }

    start() {
      this.meta();
      this.poll();
      this.advice(0);
    }

    stop() {
      this.stopped = true;
      clearTimeout(this.timer);
      clearTimeout(this.adviceTimer);
      for (const k in this.charts) this.charts[k].destroy();
    }

    async poll() {
      if (this.stopped) return;
      const id = this.run.run_id;
      const interval = Math.max(200, (this.page.current && this.page.current.stats_interval_ms) || 1000);
      const [sizes, classes, series, traffic] = await Promise.all([
        this.fetch('/api/run/sizes?run=' + id + '&buckets=96', 'the size histogram', ['sizes']),
        this.fetch('/api/run/classes?run=' + id, 'the classes', ['classes']),
        this.fetch('/api/run/series?run=' + id + '&points=300', 'the time series', ['pages', 'evictions', 'memory']),
        this.fetch('/api/run/traffic?run=' + id + '&points=300&top=10', 'the traffic', ['rates', 'hits', 'latency']),
      ]);
      if (this.stopped) return;
      // then (not at once: the proxy answers QUERY_QUEUE_MAX queries at a
      // time, two views and their advice included) the reads, counted per
      // minute (so asked again every READS_EVERY_MS at most: a week of them
      // is seven steps of the writer), and the saved reports, which change
      // only when the model saves again (with this proxy stopped: it holds
      // the file): read once
      const readsDue = !this.readsAt || Date.now() - this.readsAt >= READS_EVERY_MS;
      const snapRun = this.run.kind === 'snapshot';
      // the shadows (a query over every target's samples): every
      // TARGETS_EVERY_MS at most, never for a snapshot run
      const targetsDue = !snapRun && (!this.targetsAt || Date.now() - this.targetsAt >= TARGETS_EVERY_MS);
      const [reads, reports, evlog, snap, targets] = await Promise.all([
        readsDue ? this.fetch('/api/run/reads?run=' + id + '&points=300&top=7', 'the reads', ['classhits', 'readclasses']) : Promise.resolve(null),
        this.reports ? Promise.resolve(null) : this.fetch('/api/run/reports?run=' + id, "the model's reports", ['mrc']),
        readsDue ? this.fetch('/api/run/evictions?run=' + id + '&points=60&top=10', 'the evictions', ['evlog']) : Promise.resolve(null),
        readsDue && snapRun ? this.fetch('/api/run/snapshot?run=' + id + '&top=10', 'the snapshot', ['snapshot']) : Promise.resolve(null),
        targetsDue ? this.fetch('/api/run/targets?run=' + id, 'the shadows', ['shadows']) : Promise.resolve(null),
      ]);
      if (this.stopped) return;
      if (reads && reads.status === 200) this.readsAt = Date.now();
      if (targets && targets.status === 200) this.targetsAt = Date.now();
      this.drawSizes(sizes);
      this.drawClasses(classes);
      this.drawSeries(series);
      this.drawTraffic(traffic);
      if (reads) this.drawReads(reads);
      if (reports) this.drawReports(reports);
      if (evlog) this.drawEvictions(evlog);
      if (snap) this.drawSnapshot(snap);
      if (targets) this.drawTargets(targets);
      // charts drawn at other polls (the reads: every READS_EVERY_MS) get
      // this poll's range too
      const range = this.timeRange();
      for (const n of TIME_CHARTS) {
        const ch = this.charts[n];
        if (ch && (ch.options.scales.x.min !== range.min || ch.options.scales.x.max !== range.max)) {
          ch.options.scales.x.min = range.min;
          ch.options.scales.x.max = range.max;
          ch.update('none');
        }
      }
      this.polls++;
      this.root.dataset.polls = String(this.polls);
      this.root.dataset.ready = '1';
      this.meta(this.live ? 'updated ' + new Date().toLocaleTimeString('en-GB') : null);
      this.page.viewReady();
      if (this.live) this.timer = setTimeout(() => this.poll(), interval);
    }

    // advice: computed once per run in the background; while it is, the
    // 503 says how far it got and when to ask again (apiRetry)
    async advice() {
      if (this.stopped) return;
      const box = this.q('.advice-body');
      const r = await apiRetry('/api/run/advice?run=' + this.run.run_id, (msg, wait) => {
        box.replaceChildren(el('p', { class: 'muted', 'data-waiting': '1' }, waitText('the advice', msg, wait)));
      }, () => this.stopped);
      if (this.stopped) return;
      if (r.status !== 200) {
        box.replaceChildren(el('p', { class: 'muted', 'data-failed': '1' }, 'no advice: ' + (r.body && (r.body.error || r.body.computing) || 'status ' + r.status) +
          (r.status === 503 || r.status === 202 ? ' (asked ' + r.tries + ' times; reload the page to ask again)' : '')));
      } else {
        this.drawAdvice(r.body);
      }
      // a live run's advice is computed again once the run has grown
      if (this.live) this.adviceTimer = setTimeout(() => this.advice(), 30000);
    }

    drawAdvice(a) {
      const box = this.q('.advice-body');
      const v = String(a.verdict || '?');
      const cls = v === 'EXACT' ? 'good' : v === 'MISMATCH' ? 'bad' : 'other';
      const head = el('p');
      head.append(el('span', { class: 'verdict ' + cls, 'data-verdict': v }, v), ' ', el('span', {}, a.why || ''));
      const parts = [head];
      const cur = a.current, rec = a.recommended, cands = a.candidates || [];
      if (!cur || !cands.length) {
        box.replaceChildren.apply(box, parts);
        return;
      }
      const items = a.objective === 'items';
      const line = el('p', { class: 'advice-rec', 'data-recommended': rec.flags });
      line.append(el('b', {}, rec === cur || rec.label === cur.label ? "keep the run's own settings" : 'recommended: ' + rec.label),
        items ? ': ' + fmtInt(rec.items_held) + ' items held in ' + fmtBytes(a.memory_limit_bytes) + ' (now ' + fmtInt(cur.items_held) + ')'
          : ': ' + fmtBytes(rec.memory_bytes) + ' of pages for the working set (now ' + fmtBytes(cur.memory_bytes) + ')',
        ' — memcached flags: ', el('code', { class: 'flags' }, rec.flags));
      parts.push(line);
      const t = el('table', { class: 'advice-table' });
      const hr = el('tr');
      for (const h of ['settings', 'chunk waste', 'page slack', 'memory', 'items held', 'vs now', 'evictions']) hr.append(el('th', {}, h));
      t.append(el('thead'));
      t.tHead.append(hr);
      const tb = el('tbody');
      for (const c of cands) {
        const tr = el('tr', c.recommended ? { class: 'recommended' } : {});
        const di = cur.items_held ? (c.items_held / cur.items_held - 1) * 100 : null;
        const dm = cur.memory_bytes ? (c.memory_bytes / cur.memory_bytes - 1) * 100 : null;
        const d = items ? di : dm;
        // the flags (a slab_sizes list can be 60 sizes long) fold away
        const set = el('td', { class: 'settings' });
        const det = el('details');
        det.append(el('summary', {}, c.label + (c.recommended ? ' (recommended)' : '') + (c.over_limit ? ' (over -m)' : '')),
          el('code', { class: 'flags' }, c.flags));
        set.append(det);
        tr.append(set,
          el('td', {}, fmtNum(c.chunk_waste_pct, 1) + ' %'),
          el('td', {}, fmtBytes(c.page_slack_bytes)),
          el('td', {}, fmtBytes(c.memory_bytes)),
          el('td', {}, fmtInt(c.items_held)),
          el('td', {}, d == null ? '–' : (d > 0 ? '+' : '') + fmtNum(d, 1) + ' %' + (items ? ' items' : ' memory')),
          el('td', {}, fmtInt(c.evictions)));
        tb.append(tr);
      }
      t.append(tb);
      const wrap = el('div', { class: 'table-wrap' });
      wrap.append(t);
      parts.push(wrap);
      // how it was obtained
      const how = el('p', { class: 'note muted advice-how' });
      const ag = a.aggregates;
      how.append('How: objective ' + (items ? 'most items held in ' + fmtBytes(a.memory_limit_bytes) : 'least memory for the whole working set') +
        ' (' + (a.objective_why || '') + '); ' +
        (a.basis === 'aggregates'
          ? 'from the write aggregates of ' + fmtInt(a.writes_seen) + ' writes (' + fmtInt(ag && ag.live) + ' live items, sized from ' + (ag && ag.live_from) + (ag && ag.exact ? ', exact' : ', an estimate') + '), because ' + (a.basis_why || '') +
            '; each candidate takes the ' + fmtInt(a.live_items) + ' items as written once'
          : 'from the run\'s ' + fmtInt(a.rows_used) + ' rows: ' + fmtInt(a.live_items) + ' items left, and its ' + fmtInt(a.sequence_writes) + ' writes replayed in sequence (overwrites, deletes, evictions) into each candidate') +
        ', at most ' + a.max_classes +
        ' classes; ladder from ' + a.ladder_source + '; computed in ' + fmtNum(a.computed_s, 1) + ' s' +
        (this.live ? ', again once the run has grown by ' + a.regrow_pct + ' %' : '') + '. The same advice: ',
        el('code', {}, a.command || ''),
        ' (its default basis is the page\'s, by the same rule).');
      parts.push(how);
      box.replaceChildren.apply(box, parts);
    }

    drawSizes(r) {
      if (r.status !== 200) { this.panelError('sizes', 'sizes: ' + (r.body.error || r.status)); return; }
      this.panelError('sizes', '');
      const d = r.body;
      const buckets = (d.buckets || []).filter((b) => b.hi > 0);
      const byClass = {};
      for (const c of d.classes || []) byClass[c.class_id] = c;
      const ladder = (d.ladder || []).map((l) => Object.assign({}, l, byClass[l.class_id] || {}));
      // a step line over log-spaced buckets: each bucket a flat top from lo to hi
      const pts = [];
      for (const b of buckets) { pts.push({ x: b.lo, y: b.writes }); }
      if (buckets.length) {
        const last = buckets[buckets.length - 1];
        pts.push({ x: last.hi, y: last.writes }, { x: last.hi, y: 0 });
        pts.unshift({ x: buckets[0].lo, y: 0 });
      }
      const waste = (d.classes || []).filter((c) => c.writes > 0).map((c) => ({ x: c.chunk_size, y: c.waste_pct }));
      let xmin = buckets.length ? buckets[0].lo : 1, xmax = buckets.length ? buckets[buckets.length - 1].hi : 2;
      for (const w of waste) { xmin = Math.min(xmin, w.x); xmax = Math.max(xmax, w.x); }
      this.chart('sizes', {
        type: 'line',
        data: {
          datasets: [
            { label: 'writes per size bucket', data: pts, stepped: 'after', fill: 'origin',
              borderColor: OI[0], backgroundColor: hatch(OI[0], 0), yAxisID: 'y', pointRadius: 0 },
            { label: 'waste % of the class (at its chunk size)', data: waste, showLine: false,
              borderColor: OI[1], backgroundColor: OI[1], pointStyle: 'triangle', pointRadius: 5,
              yAxisID: 'y2' },
          ],
        },
        options: {
          parsing: false,
          scales: {
            x: { type: 'logarithmic', min: xmin * 0.95, max: xmax * 1.05,
              title: { display: true, text: 'item size in memcached (ntotal, bytes, log scale)' },
              ticks: { maxTicksLimit: 8, callback: (v) => fmtBytes(v) } },
            y: { beginAtZero: true, title: { display: true, text: 'writes' },
              ticks: { callback: (v) => fmtInt(v) } },
            y2: { position: 'right', beginAtZero: true, suggestedMax: 25, grid: { drawOnChartArea: false },
              title: { display: true, text: 'waste %' } },
          },
          plugins: { ladder: { ladder: ladder },
            tooltip: { callbacks: { label: (c) => c.datasetIndex ? 'waste ' + fmtNum(c.parsed.y, 1) + ' % at chunk ' + fmtInt(c.parsed.x) + ' B'
              : fmtInt(c.parsed.y) + ' writes from ' + fmtInt(c.parsed.x) + ' B' } } },
        },
      });
      const used = (d.classes || []).filter((c) => c.writes > 0);
      const req = used.reduce((s, c) => s + c.bytes_requested, 0), alloc = used.reduce((s, c) => s + c.bytes_allocated, 0);
      const nw = used.reduce((s, c) => s + c.writes, 0);
      this.q('.sizes-note').textContent = used.length
        ? 'dashed lines: chunk sizes of the ' + (d.ladder || []).length + ' classes (labelled: classes written to). ' +
          'Ever written (not what is resident now): ' + fmtInt(nw) + ' item-storing writes into ' + used.length + ' classes, ' +
          fmtBytes(req) + ' requested in ' + fmtBytes(alloc) + ' of chunks, ' +
          fmtNum(alloc ? (alloc - req) * 100 / alloc : 0, 1) + ' % of it chunk waste' +
          (this.run.rows_recorded != null && this.run.rows_recorded !== nw
            ? ' (the ' + fmtInt(this.run.rows_recorded) + ' writes recorded also count deletes, incr/decr, touch, append/prepend and refused writes)' : '') +
          '. Resident now: the classes table.'
        : 'no writes recorded yet.';
    }

    setupTable() {
      const ths = this.root.querySelectorAll('table.classes th');
      for (const th of ths) {
        th.tabIndex = 0;
        const go = () => {
          const k = th.dataset.key;
          this.sort = { key: k, dir: this.sort.key === k ? -this.sort.dir : (k === 'class_id' || k === 'chunk_size' ? 1 : -1) };
          this.renderTable();
        };
        th.addEventListener('click', go);
        th.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); go(); } });
      }
    }

    drawClasses(r) {
      if (r.status !== 200) { this.panelError('classes', 'classes: ' + (r.body.error || r.status)); return; }
      this.panelError('classes', '');
      const d = r.body;
      this.classRows = (d.classes || []).map((c) => Object.assign({ allocated: c.used_chunks * c.chunk_size }, c));
      this.renderTable();
      const lim = d.limit_maxbytes;
      this.q('.classes-note').textContent = 'resident now (sample of ' + fmtTime(d.t_ns) + '): ' + fmtBytes(d.total_malloced) +
        ' of ' + fmtBytes(lim) + ' malloced (' + fmtNum(lim ? d.total_malloced * 100 / lim : 0, 1) + ' %), ' +
        this.classRows.length + ' classes with pages.';
      const alloc = this.classRows.reduce((s, c) => s + c.allocated, 0), req = this.classRows.reduce((s, c) => s + (c.mem_requested || 0), 0);
      this.headline({ malloced: d.total_malloced, limit: lim, waste_pct: alloc ? (alloc - req) * 100 / alloc : null,
        ev_per_s: this.classRows.reduce((s, c) => s + (c.evicted_per_s || 0), 0) });
    }

    renderTable() {
      const { key, dir } = this.sort;
      const rows = this.classRows.slice().sort((a, b) => ((a[key] ?? -1) - (b[key] ?? -1)) * dir || a.class_id - b.class_id);
      for (const th of this.root.querySelectorAll('table.classes th')) {
        if (th.dataset.key === key) th.setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending');
        else th.removeAttribute('aria-sort');
      }
      const tb = this.q('table.classes tbody');
      const out = [];
      for (const c of rows) {
        const tr = el('tr', { 'data-class-id': String(c.class_id) });
        const cell = (k, text, title) => {
          const td = el('td', { 'data-key': k, 'data-v': String(c[k]) }, text);
          if (title) td.title = title;
          tr.append(td);
          return td;
        };
        cell('class_id', String(c.class_id));
        cell('chunk_size', fmtInt(c.chunk_size));
        cell('allocated', fmtBytes(c.allocated), fmtInt(c.allocated) + ' bytes');
        cell('mem_requested', fmtBytes(c.mem_requested), fmtInt(c.mem_requested) + ' bytes');
        const w = cell('waste_pct', fmtNum(c.waste_pct, 1));
        const bar = el('span', { class: 'waste-bar', 'aria-hidden': 'true' });
        bar.style.width = Math.max(0, Math.min(40, (c.waste_pct || 0) * 0.8)) + 'px';
        w.append(bar);
        cell('pages', fmtInt(c.pages));
        cell('used_chunks', fmtInt(c.used_chunks));
        cell('evicted', fmtInt(c.evicted));
        cell('evicted_per_s', fmtNum(c.evicted_per_s, 1));
        out.push(tr);
      }
      tb.replaceChildren.apply(tb, out);
    }

    drawSeries(r) {
      for (const p of ['pages', 'evictions', 'memory']) this.panelError(p, r.status !== 200 ? 'series: ' + (r.body.error || r.status) : '');
      if (r.status !== 200) return;
      const d = r.body, t = d.t || [];
      const t0 = this.run.started_ns || (t.length ? t[0] : 0);
      const xs = t.map((v) => (v - t0) / 1e9);
      const classes = d.classes || [];
      // the eight classes that matter most get a line each, the rest one "other"
      const top = (arr, f) => {
        const scored = classes.map((c) => ({ c: c, s: f(c) })).filter((x) => x.s > 0).sort((a, b) => b.s - a.s);
        return { keep: scored.slice(0, 7).map((x) => x.c), rest: scored.slice(7).map((x) => x.c) };
      };
      const line = (label, ys, i) => Object.assign({ label: label, data: ys.map((y, k) => ({ x: xs[k], y: y })), fill: false,
        pointRadius: xs.length < 60 ? 2 : 0 }, style(i));
      const pagesSel = top(classes, (c) => Math.max.apply(null, (c.pages || []).concat(0)));
      const pagesDs = pagesSel.keep.map((c, i) => line('c' + c.class_id + ' (' + fmtBytes(c.chunk_size) + ')', c.pages, i));
      if (pagesSel.rest.length) {
        pagesDs.push(line(pagesSel.rest.length + ' other classes', xs.map((_, k) => pagesSel.rest.reduce((s, c) => s + (c.pages[k] || 0), 0)), 7));
      }
      if (!pagesDs.length) pagesDs.push(line('no pages yet', xs.map(() => 0), 6));
      this.chart('pages', {
        type: 'line',
        data: { datasets: pagesDs },
        options: { parsing: false, scales: { x: secondsAxis('time since the run started (m:ss)', this.timeRange()), y: { beginAtZero: true, title: { display: true, text: 'pages (1 MB)' } } }, plugins: END_LABELS, layout: END_PAD },
      });

      const rate = (cum) => cum.map((v, k) => k === 0 ? 0 : Math.max(0, (v - cum[k - 1]) / Math.max(1e-9, (t[k] - t[k - 1]) / 1e9)));
      const evSel = top(classes, (c) => { const e = c.evicted || []; return e.length ? e[e.length - 1] - e[0] : 0; });
      const evDs = evSel.keep.map((c, i) => line('c' + c.class_id, rate(c.evicted), i));
      if (evSel.rest.length) {
        const sum = xs.map((_, k) => evSel.rest.reduce((s, c) => s + (c.evicted[k] || 0), 0));
        evDs.push(line(evSel.rest.length + ' other classes', rate(sum), 7));
      }
      if (!evDs.length) evDs.push(line('all classes (no evictions)', xs.map(() => 0), 6));
      this.chart('evictions', {
        type: 'line',
        data: { datasets: evDs },
        options: { parsing: false, scales: { x: secondsAxis('time since the run started (m:ss)', this.timeRange()), y: { beginAtZero: true, title: { display: true, text: 'evictions/s' } } }, plugins: END_LABELS, layout: END_PAD },
      });

      const lim = d.limit_maxbytes;
      this.chart('memory', {
        type: 'line',
        data: { datasets: [
          Object.assign(line('total_malloced', d.total_malloced || [], 0), { fill: 'origin', backgroundColor: hatch(OI[0], 0) }),
          Object.assign(line('limit (-m)', xs.map(() => lim), 1), { borderDash: [6, 3] }),
        ] },
        options: { parsing: false, scales: { x: secondsAxis('time since the run started (m:ss)', this.timeRange()),
          y: bytesAxis('', Math.max(lim || 0, Math.max.apply(null, (d.total_malloced || []).concat(0)))) } },
      });
    }

    // hit ratio per slab class (agg_reads: a row per class and minute)
    drawReads(r) {
      for (const p of ['classhits', 'readclasses']) this.panelError(p, r.status !== 200 ? 'reads: ' + (r.body.error || r.status) : '');
      if (r.status !== 200) return;
      const d = r.body, t = d.t || [], bucket = d.bucket_ns || 60e9;
      const t0 = this.run.started_ns || (t.length ? t[0] : 0);
      const end = this.run.ended_ns || Date.now() * 1e6;
      // a bucket's ratio drawn where it ends (the run's end, or now, for
      // the last): what the minutes up to there gave
      const xs = t.map((v) => (Math.min(Math.max(v + bucket, t0), Math.max(end, t0)) - t0) / 1e9);
      const lines = (d.lines || []).map((l, i) => Object.assign({
        label: l.class_id == null ? (l.other_classes || []).length + ' other classes'
          : 'c' + l.class_id + (l.chunk_size ? ' (' + fmtBytes(l.chunk_size) + ')' : ''),
        data: (l.reads || []).map((n, k) => ({ x: xs[k], y: n > 0 ? (l.hits[k] * 100) / n : null, reads: n })),
        fill: false, spanGaps: true, pointRadius: xs.length < 60 ? 3 : 0,
      }, style(l.class_id == null ? 7 : i)));
      this.chart('classhits', {
        type: 'line',
        data: { datasets: lines },
        options: { parsing: false, scales: { x: secondsAxis('time since the run started (m:ss)', this.timeRange()), y: { min: 0, max: 100, title: { display: true, text: 'hit ratio %' } } },
          plugins: Object.assign({ tooltip: { callbacks: { label: (c) => c.dataset.label + ': ' + fmtNum(c.parsed.y, 1) + ' % of ' + fmtInt(c.raw.reads) + ' reads' } } }, END_LABELS),
          layout: END_PAD },
      });
      const classes = d.classes || [];
      const unknown = classes.find((c) => c.class_id === 0);
      const tot = d.total || {};
      if (tot.hit_ratio != null) this.headline({ hit_ratio: tot.hit_ratio, reads_ratio: tot.hit_ratio });
      this.q('.classhits-note').textContent = !classes.length ? 'no reads recorded yet.'
        : fmtInt(tot.reads) + ' reads, hit ratio ' + (tot.hit_ratio == null ? '–' : fmtPct(tot.hit_ratio)) +
          '; per ' + fmtSecs(bucket / 1e9) + ' bucket.' +
          (unknown ? ' Not drawn: ' + fmtInt(unknown.misses) + ' misses of keys the recorder had not seen stored (class unknown).' : '');
      const rows = classes.map((c) => {
        const tr = el('tr', { 'data-class-id': String(c.class_id) });
        const cell = (k, text) => tr.append(el('td', { 'data-key': k, 'data-v': String(c[k]) }, text));
        cell('class_id', c.class_id ? String(c.class_id) : 'unknown');
        cell('chunk_size', c.chunk_size == null ? '–' : fmtInt(c.chunk_size));
        cell('reads', fmtInt(c.reads));
        cell('hits', fmtInt(c.hits));
        cell('misses', fmtInt(c.misses));
        cell('hit_ratio', c.hit_ratio == null ? '–' : fmtPct(c.hit_ratio));
        return tr;
      });
      if (!rows.length) {
        const tr = el('tr');
        tr.append(el('td', { colspan: '6' }, 'no reads recorded yet'));
        rows.push(tr);
      }
      const tb = this.q('table.readclasses tbody');
      tb.replaceChildren.apply(tb, rows);
      const foot = el('tr', { class: 'total' });
      if (classes.length) {
        foot.append(el('td', {}, 'all'), el('td', {}, ''), el('td', {}, fmtInt(tot.reads)), el('td', {}, fmtInt(tot.hits)),
          el('td', {}, fmtInt(tot.misses)), el('td', {}, tot.hit_ratio == null ? '–' : fmtPct(tot.hit_ratio)));
      }
      this.q('table.readclasses tfoot').replaceChildren(foot);
    }

    // the reports `slabtap model advise --objective hits --save` and
    // `slabtap model mrc --save` left in run_meta
    drawReports(r) {
      this.panelError('mrc', r.status !== 200 ? 'reports: ' + (r.body.error || r.status) : '');
      if (r.status !== 200) return;
      this.reports = r.body;
      const d = r.body, a = d.hits_advice, m = d.hits_mrc, cmds = d.commands || {};
      const line = this.q('.hits-advice'), flags = this.q('.hits-flags');
      const hint = (what, cmd) => [what + ': run ', el('code', {}, cmd || ''),
        ' with the proxy stopped (it holds the database file), then open the page again.'];
      if (a && a.current && a.recommended) {
        line.dataset.hitsAdvice = 'present';
        line.replaceChildren(hitsAdviceLine(a));
        flags.textContent = 'recommended memcached flags: ' + (a.recommended.flags || '–') +
          (a.verified ? ' (verified against memcached)' : '');
      } else {
        line.dataset.hitsAdvice = 'absent';
        line.replaceChildren.apply(line, hint('no hit-ratio advice saved for this run', cmds.hits_advice));
        flags.textContent = '';
      }
      const ds = [];
      const curves = (m && m.curves) || [];
      curves.forEach((c, i) => {
        const pts = (c.points || []).map((p) => ({ x: p.memory_bytes / 1048576, y: 100 * p.hit_ratio, p: p }));
        ds.push(Object.assign({ label: c.settings === 'current' ? "the run's own settings" : 'other settings (--flags)',
          data: pts, fill: false, pointRadius: 3 }, style(i),
        { pointStyle: pts.map((p) => (p.p.over_budget ? 'crossRot' : SHAPES[i % SHAPES.length])) }));
      });
      if (a && a.current && a.recommended) { // where the advice's two settings sit
        const mark = (label, c, i) => Object.assign({ label: label, showLine: false, pointRadius: 6,
          data: [{ x: c.predicted.memory_bytes / 1048576, y: 100 * c.predicted.hit_ratio }] }, style(i), { pointStyle: 'star' });
        if (ds.some((d) => d.data.length)) ds.push(mark('advice: now', a.current, 4), mark('advice: recommended', a.recommended, 2));
      }
      const canvas = this.q('canvas[data-chart="mrc"]');
      const npoints = curves.reduce((n, c) => n + (c.points || []).length, 0);
      canvas.dataset.curves = String(curves.length);
      canvas.parentNode.hidden = !npoints; // no empty axes: the note says what to run
      this.chart('mrc', {
        type: 'line',
        data: { datasets: ds },
        options: { parsing: false, scales: {
          x: { type: 'linear', title: { display: true, text: 'memory used (total_malloced), MB' } },
          y: { title: { display: true, text: 'hit ratio % (predicted)' } } },
          plugins: { tooltip: { callbacks: { label: (c) => c.dataset.label + ': ' + fmtNum(c.parsed.y, 2) + ' % in ' + fmtNum(c.parsed.x, 1) + ' MB' +
            (c.raw.p ? ' (-m ' + c.raw.p.mem_mb + (c.raw.p.over_budget ? ', over the size even at -m 1' : '') + ')' : '') } } } },
      });
      const note = this.q('.mrc-note');
      if (curves.length && !npoints) {
        note.textContent = 'the saved miss-ratio curve has no points: every size of its range is below the memory ' +
          "the run's classes take with one page each; save it again with a larger --memory-limit: " + (cmds.hits_mrc || '') +
          ' --memory-limit MB';
      } else if (curves.length) {
        note.textContent = 'predicted request by request (hits counted from request ' + fmtInt(m.measure_from) +
          ' on); each point at the largest -m whose memory used stays within the size (✕: over it even at -m 1).';
      } else {
        note.replaceChildren.apply(note, hint('no miss-ratio curve saved for this run', cmds.hits_mrc));
      }
    }

    drawTraffic(r) {
      for (const p of ['rates', 'hits', 'latency']) this.panelError(p, r.status !== 200 ? 'traffic: ' + (r.body.error || r.status) : '');
      if (r.status !== 200) return;
      const d = r.body, t = d.t || [];
      const t0 = this.run.started_ns || (t.length ? t[0] : 0);
      const xy = (ys) => (ys || []).map((y, k) => ({ x: (t[k] - t0) / 1e9, y: y }));
      const line = (label, ys, i, extra) => Object.assign({ label: label, data: xy(ys), fill: false,
        pointRadius: t.length < 60 ? 2 : 0 }, style(i), extra || {});
      this.chart('rates', {
        type: 'line',
        data: { datasets: [line('writes/s', d.writes, 1), line('reads/s', d.reads, 0, { borderDash: [6, 3] })] },
        options: { parsing: false, scales: { x: secondsAxis('time since the run started (m:ss)', this.timeRange()), y: { beginAtZero: true, ticks: { callback: (v) => fmtInt(v) } } } },
      });
      const ws = (d.writes || []).filter((v) => v != null), hs = (d.hits || []).reduce((a, b) => a + b, 0),
        ms = (d.misses || []).reduce((a, b) => a + b, 0);
      this.headline({ writes_per_s: ws.length ? ws[ws.length - 1] : null,
        hit_ratio: this.head && this.head.reads_ratio != null ? this.head.reads_ratio : hs + ms > 0 ? hs / (hs + ms) : null });
      const ratio = (d.hits || []).map((h, k) => {
        const n = h + ((d.misses || [])[k] || 0);
        return n > 0 ? (h * 100) / n : null;
      });
      this.chart('hits', {
        type: 'line',
        data: { datasets: [line('hit ratio %', ratio, 2, { spanGaps: true })] },
        options: { parsing: false, scales: { x: secondsAxis('time since the run started (m:ss)', this.timeRange()), y: { min: 0, max: 100, title: { display: true, text: '%' } } } },
      });
      this.chart('latency', {
        type: 'line',
        data: { datasets: [line('p50 µs', d.write_p50_us, 0), line('p99 µs', d.write_p99_us, 1, { borderDash: [6, 3] })] },
        options: { parsing: false, scales: { x: secondsAxis('time since the run started (m:ss)', this.timeRange()), y: { beginAtZero: true, title: { display: true, text: 'µs' } } } },
      });
      const pre = d.top_prefixes || [];
      const maxb = pre.reduce((m, p) => Math.max(m, p.bytes), 0) || 1;
      const tb = this.q('table.prefixes tbody');
      const rows = pre.map((p) => {
        const tr = el('tr');
        const bar = el('span', { class: 'bar', 'aria-hidden': 'true' });
        bar.style.width = (p.bytes * 100 / maxb).toFixed(1) + '%';
        const bc = el('td', { class: 'barcol' });
        bc.append(bar);
        tr.append(el('td', {}, p.prefix === '' ? '(none)' : p.prefix), el('td', {}, fmtInt(p.writes)), el('td', {}, fmtBytes(p.bytes)), bc);
        return tr;
      });
      if (!rows.length) {
        const tr = el('tr');
        tr.append(el('td', { colspan: '4' }, 'no key prefixes recorded (the proxy keeps them with --keys prefix, its default)'));
        rows.push(tr);
      }
      tb.replaceChildren.apply(tb, rows);
    }
  }

  // the shadows (issue 23): /api/run/targets, the primary and each shadow
  // side by side on the same scales, a verdict line per shadow. The panel
  // shows only when the run has a target besides the primary.
  View.prototype.drawTargets = function (r) {
    const sec = this.q('[data-panel="shadows"]');
    if (r.status !== 200) {
      // no shadows table in an older file, or a run without shadows: no panel
      if (!sec.hidden) this.panelError('shadows', 'shadows: ' + ((r.body && r.body.error) || r.status));
      return;
    }
    const d = r.body, ts = d.targets || [];
    if (ts.length < 2) { sec.hidden = true; return; }
    sec.hidden = false;
    this.panelError('shadows', '');
    sec.dataset.targets = String(ts.length);
    const t0 = (this.run.started_ns || 0) / 1e9;
    const pageBytes = (this.run.settings && this.run.settings.slab_page_size) || 1048576;
    const scale = (t) => (t.sample_n > 1 ? t.sample_n : 1);
    const label = (t) => t.target + (t.sample_n > 1 ? ' (×' + t.sample_n + ')' : '');
    // verdicts: one line per shadow, the words query_targets_json made
    const ul = sec.querySelector('ul.verdicts');
    ul.replaceChildren.apply(ul, ts.filter((t) => t.kind !== 'primary').map((t) => {
      const li = el('li', { class: 'verdict-line', 'data-target': t.target });
      const badge = t.kind === 'upstream' ? 'upstream' : t.restarts ? 'restarted ' + t.restarts + '×' : t.sample_n > 1 ? '1/' + t.sample_n + ' sample' : 'started';
      li.append(el('span', { class: 'badge' }, badge), ' ', el('span', { class: 'verdict-text' }, t.verdict || t.target + ': no verdict yet'));
      return li;
    }));
    // memory and waste per class: bars, one series per target
    const ids = Array.from(new Set([].concat.apply([], ts.map((t) => (t.classes || []).map((c) => c.class_id))))).sort((a, b) => a - b);
    const perClass = (f) => ts.map((t, i) => {
      const by = {};
      for (const c of t.classes || []) by[c.class_id] = c;
      return Object.assign({ label: label(t), data: ids.map((id) => (by[id] ? f(by[id]) * scale(t) : 0)) }, style(i),
        { backgroundColor: i ? hatch(OI[i % OI.length], i % 2) : OI[0], borderWidth: 1 });
    });
    const barOpts = (title) => ({ scales: { x: { title: { display: true, text: 'slab class' } }, y: bytesAxis(title, 0) } });
    this.chart('tmemory', {
      type: 'bar',
      data: { labels: ids.map((id) => 'c' + id), datasets: perClass((c) => (c.total_pages || 0) * pageBytes) },
      options: barOpts('memory'),
    });
    this.chart('twaste', {
      type: 'bar',
      data: { labels: ids.map((id) => 'c' + id), datasets: perClass((c) => Math.max(0, c.waste_bytes || 0)) },
      options: barOpts('waste'),
    });
    // hit ratio and evictions over time; restarts and other events marked
    const line = (t, i, ys) => Object.assign({ label: label(t), data: ys, fill: false, spanGaps: true,
      pointRadius: ys.length < 60 ? 2 : 0 }, style(i));
    const hitDs = ts.map((t, i) => line(t, i, (t.series || []).filter((p) => p.hit_ratio != null)
      .map((p) => ({ x: p.t - t0, y: 100 * p.hit_ratio }))));
    // each point's evictions are those since the point before; points in
    // the same second add up until the next second
    const evDs = ts.map((t, i) => {
      const s = t.series || [], ys = [];
      let acc = 0, from = s.length ? s[0].t : 0;
      for (let k = 1; k < s.length; k++) {
        acc += Math.max(0, s[k].evictions || 0);
        if (s[k].t > from) {
          ys.push({ x: s[k].t - t0, y: acc / (s[k].t - from) });
          acc = 0;
          from = s[k].t;
        }
      }
      return line(t, i, ys);
    });
    const marks = [];
    ts.forEach((t, i) => {
      for (const e of t.events || []) {
        if (e.event === 'connected' || e.event === 'lost') continue; // restarts, starts, exits
        marks.push({ x: e.t_ns / 1e9 - t0, color: OI[i % OI.length], label: e.event + (ts.length > 2 ? ' ' + t.target : '') });
      }
    });
    const xAxis = () => secondsAxis('time since the run started (m:ss)', this.timeRange());
    this.chart('thits', {
      type: 'line',
      data: { datasets: hitDs },
      options: { parsing: false, scales: { x: xAxis(), y: { min: 0, max: 100, title: { display: true, text: '%' } } }, plugins: { events: { marks: marks } } },
    });
    this.chart('tevictions', {
      type: 'line',
      data: { datasets: evDs },
      options: { parsing: false, scales: { x: xAxis(), y: { beginAtZero: true, title: { display: true, text: 'evictions/s' } } }, plugins: { events: { marks: marks } } },
    });
    // the totals, one row per target
    const tb = sec.querySelector('table.targets tbody');
    tb.replaceChildren.apply(tb, ts.map((t) => {
      const x = t.totals || {}, tr = el('tr', { 'data-target': t.target });
      const restarts = (t.events || []).filter((e) => e.event === 'restarted').length;
      tr.append(el('td', {}, t.target), el('td', {}, t.kind + (t.sample_n > 1 ? ', 1/' + t.sample_n + ' sample' : '')),
        el('td', {}, t.memory_mb != null ? fmtInt(t.memory_mb) + ' MB' : '–'),
        el('td', { 'data-key': 'hit_ratio', 'data-v': String(x.hit_ratio) }, x.hit_ratio == null ? '–' : fmtPct(x.hit_ratio)),
        el('td', { 'data-key': 'pages', 'data-v': String(x.pages) }, x.pages == null ? '–' : fmtInt(x.pages) + ' pages' + (t.sample_n > 1 ? ' (×' + t.sample_n + ')' : '')),
        el('td', { 'data-key': 'evictions', 'data-v': String(x.evictions) }, fmtInt(x.evictions)),
        el('td', { 'data-key': 'waste_bytes', 'data-v': String(x.waste_bytes) }, x.waste_bytes == null ? '–' : fmtBytes(x.waste_bytes)),
        el('td', {}, fmtInt(x.classes)),
        el('td', {}, t.restarts != null ? fmtInt(t.restarts) : fmtInt(restarts)));
      return tr;
    }));
    const sampled = ts.filter((t) => t.sample_n > 1);
    sec.querySelector('.shadows-note').textContent = 'hit ratio and evictions of a shadow count from its last (re)start; ' +
      (sampled.length ? 'a sampled shadow sees 1/N of the keys in 1/N of the memory: its memory and waste are drawn ×N' : 'every shadow sees every key');
  };

  View.prototype.drawEvictions = function (r) {
    if (r.status !== 200) { this.panelError('evlog', 'evictions: ' + (r.body.error || r.status)); return; }
    this.panelError('evlog', '');
    const d = r.body, t = d.totals || {};
    const buckets = {}; // class -> [count per bucket]
    let nb = 1;
    for (const s of d.series || []) {
      const i = Math.max(0, Math.round((s.t_ns - d.from_ns) / d.bucket_ns));
      nb = Math.max(nb, i + 1);
      (buckets[s.class_id] = buckets[s.class_id] || [])[i] = s.evictions;
    }
    const rows = (d.classes || []).map((c) => {
      const tr = el('tr', { 'data-class-id': String(c.class_id) });
      const spark = el('span', { class: 'spark', 'aria-hidden': 'true' });
      const b = buckets[c.class_id] || [], max = Math.max(1, ...b.filter((x) => x != null));
      for (let i = 0; i < nb; i++) {
        const bar = el('span');
        bar.style.height = ((b[i] || 0) * 100 / max).toFixed(0) + '%';
        spark.append(bar);
      }
      const sc = el('td', { class: 'barcol' });
      sc.append(spark);
      tr.append(el('td', {}, String(c.class_id)), el('td', { 'data-v': String(c.evictions) }, fmtInt(c.evictions)),
        el('td', {}, fmtInt(c.never_fetched) + ' (' + fmtPct(c.evictions ? c.never_fetched / c.evictions : 0) + ')'), sc);
      return tr;
    });
    const tb = this.q('table.evlog tbody');
    tb.replaceChildren.apply(tb, rows);
    const pre = (d.prefixes || []).map((p) => {
      const tr = el('tr');
      tr.append(el('td', {}, p.prefix === '' ? '(none)' : p.prefix), el('td', {}, String(p.class_id)),
        el('td', {}, fmtInt(p.evictions)), el('td', {}, fmtInt(p.never_fetched)));
      return tr;
    });
    const pb = this.q('table.evprefixes tbody');
    pb.replaceChildren.apply(pb, pre);
    this.q('.evlog-note').textContent = (t.evictions || t.deletions)
      ? fmtInt(t.evictions) + ' evictions logged (' + fmtInt(t.never_fetched) + ' never fetched), ' +
        fmtInt(t.deletions) + ' deletions; each bar a ' + fmtSecs(d.bucket_ns / 1e9) + ' slice of the run'
      : 'no eviction logged for this run: slabtap watch records them, and the proxy with --watch-evictions';
  };

  View.prototype.drawSnapshot = function (r) {
    const sec = this.q('[data-panel="snapshot"]');
    sec.hidden = false;
    if (r.status !== 200) { this.panelError('snapshot', 'snapshot: ' + (r.body.error || r.status)); return; }
    this.panelError('snapshot', '');
    const d = r.body;
    const s = (d.snapshots || []).find((x) => x.snap === d.snap);
    if (!s) { this.q('.snapshot-note').textContent = 'no snapshot recorded in this run yet'; return; }
    this.q('.snapshot-note').textContent = 'snapshot ' + s.snap + ' of ' + (d.snapshots || []).length + ', taken ' +
      fmtTime(s.t_ns) + ': ' + fmtInt(s.items) + ' items, ' + fmtBytes(s.bytes) + (s.complete ? '' : ' (cut short)');
    const idle = {}, nf = {};
    for (const h of d.idle || []) {
      (idle[h.class_id] = idle[h.class_id] || []).push(h);
      nf[h.class_id] = (nf[h.class_id] || 0) + h.never_fetched;
    }
    const median = (hs, n) => {
      let acc = 0;
      for (const h of hs) { acc += h.items; if (acc * 2 >= n) return h.bucket_s; }
      return null;
    };
    const rows = (d.classes || []).map((c) => {
      const tr = el('tr', { 'data-class-id': String(c.class_id) });
      const alloc = c.chunk_size != null ? c.chunk_size * c.items : null;
      const med = median(idle[c.class_id] || [], c.items);
      tr.append(el('td', {}, String(c.class_id)), el('td', {}, c.chunk_size == null ? '–' : fmtInt(c.chunk_size)),
        el('td', { 'data-v': String(c.items) }, fmtInt(c.items)), el('td', {}, fmtBytes(c.bytes)),
        el('td', {}, fmtInt(c.min_size) + '–' + fmtInt(c.max_size)),
        el('td', { 'data-v': String(c.waste_bytes) }, c.waste_bytes == null ? '–' : fmtBytes(c.waste_bytes)),
        el('td', {}, alloc ? fmtNum(c.waste_bytes * 100 / alloc, 1) + ' %' : '–'),
        el('td', {}, fmtPct(c.items ? (nf[c.class_id] || 0) / c.items : 0)),
        el('td', {}, med == null ? '–' : med === 0 ? '< 1 s' : '≥ ' + fmtSecs(med)));
      return tr;
    });
    const tb = this.q('table.snapclasses tbody');
    tb.replaceChildren.apply(tb, rows);
    const pre = d.prefixes || [], maxb = pre.reduce((m, p) => Math.max(m, p.bytes), 0) || 1;
    const pr = pre.map((p) => {
      const tr = el('tr');
      const bar = el('span', { class: 'bar', 'aria-hidden': 'true' });
      bar.style.width = (p.bytes * 100 / maxb).toFixed(1) + '%';
      const bc = el('td', { class: 'barcol' });
      bc.append(bar);
      tr.append(el('td', {}, p.prefix === '' ? '(none)' : p.prefix), el('td', {}, fmtInt(p.items)), el('td', {}, fmtBytes(p.bytes)), bc);
      return tr;
    });
    const pb = this.q('table.snapprefixes tbody');
    pb.replaceChildren.apply(pb, pr);
  };

  function compareOn(page) { return page.cmp != null; }

  // --- the page: run pickers, one or two views ------------------------------
  const page = { current: null, runs: [], views: [], run: null, cmp: null };

  function param(name) {
    const v = new URLSearchParams(location.search).get(name);
    return v && /^[0-9]{1,18}$/.test(v) ? Number(v) : null;
  }

  // side by side: the same scales on both sides, so heights compare
  const SYNCED = ['pages', 'evictions', 'memory', 'rates', 'latency'];
  page.sync = function () {
    if (page.views.length < 2 || !page.views.every((v) => v.root.dataset.ready === '1')) return;
    for (const name of SYNCED) {
      let ymax = 0, xmax = 0;
      const charts = page.views.map((v) => v.charts[name]).filter(Boolean);
      for (const ch of charts) {
        for (const ds of ch.data.datasets) {
          for (const p of ds.data) {
            if (p && p.y != null && isFinite(p.y)) ymax = Math.max(ymax, p.y);
            if (p && isFinite(p.x)) xmax = Math.max(xmax, p.x);
          }
        }
      }
      // the longer run's time range on both sides
      const tmax = Math.max.apply(null, page.views.map((v) => v.timeRange().max).concat(xmax));
      for (const ch of charts) {
        ch.options.scales.y.suggestedMax = ymax;
        ch.options.scales.x.min = 0;
        ch.options.scales.x.max = tmax;
        ch.update('none');
      }
    }
  };

  page.viewReady = function () {
    page.sync();
    const all = page.views.length && page.views.every((v) => v.root.dataset.ready === '1');
    if (all) document.body.dataset.state = 'ready';
    const de = document.documentElement;
    document.body.dataset.scrollWidth = String(de.scrollWidth);
    document.body.dataset.clientWidth = String(de.clientWidth);
  };

  // what recorded the run, when not the proxy: " (watch)", " (snapshot)"
  function kindText(r) { return r.kind && r.kind !== 'proxy' ? ' (' + r.kind + ')' : ''; }

  function runLabel(r) {
    const live = page.current && r.run_id === page.current.run_id;
    return '#' + r.run_id + ' ' + r.name + kindText(r) + ' · ' + fmtTime(r.started_ns).slice(0, 16) +
      (live ? ' (live)' : r.crashed ? ' (crashed)' : '');
  }

  function fillPickers() {
    for (const [id, sel, none] of [['run-picker', page.run, false], ['cmp-picker', page.cmp, true]]) {
      const s = document.getElementById(id);
      const opts = none ? [el('option', { value: '' }, 'none')] : [];
      for (const r of page.runs) {
        const o = el('option', { value: String(r.run_id) }, runLabel(r));
        if (r.run_id === sel) o.selected = true;
        opts.push(o);
      }
      s.replaceChildren.apply(s, opts);
      if (none && sel == null) s.value = '';
    }
  }

  function navigate() {
    const q = new URLSearchParams();
    if (page.run != null && !(page.current && page.run === page.current.run_id)) q.set('run', String(page.run));
    if (page.cmp != null) q.set('cmp', String(page.cmp));
    const s = q.toString();
    history.replaceState(null, '', location.pathname + (s ? '?' + s : '') + location.hash);
    build();
  }

  function build() {
    for (const v of page.views) v.stop();
    page.views = [];
    document.body.dataset.state = 'loading';
    const main = document.getElementById('views');
    main.replaceChildren();
    main.classList.toggle('compare', page.cmp != null);
    const tpl = document.getElementById('view-template');
    const ids = [page.run].concat(page.cmp != null ? [page.cmp] : []);
    ids.forEach((id, i) => {
      const run = page.runs.find((r) => r.run_id === id);
      if (!run) return;
      const frag = tpl.content.cloneNode(true);
      const root = frag.querySelector('.view');
      main.append(frag);
      const v = new View(root, run, i ? 'B' : 'A', page);
      page.views.push(v);
      v.start();
    });
    if (!page.views.length) {
      main.append(el('p', {}, 'run ' + page.run + ' is not in this database.'));
      document.body.dataset.state = 'ready';
    }
  }

  async function loadRuns() {
    const r = await api('/api/runs');
    if (r.status !== 200) {
      document.getElementById('page-status').textContent = 'cannot read /api/runs: ' + (r.body.error || r.status);
      return false;
    }
    const d = r.body;
    page.current = d.current || null;
    const runs = (d.runs || d.earlier || []).slice();
    if (page.current && !runs.some((x) => x.run_id === page.current.run_id)) runs.unshift(page.current);
    runs.sort((a, b) => b.run_id - a.run_id);
    page.runs = runs;
    return true;
  }

  async function main() {
    if (!(await loadRuns())) { document.body.dataset.state = 'ready'; return; }
    page.run = param('run');
    if (page.run == null) page.run = page.current ? page.current.run_id : (page.runs[0] || {}).run_id;
    page.cmp = param('cmp');
    if (page.cmp === page.run) page.cmp = null;
    const cur = page.current;
    const what = !cur ? '' : cur.kind === 'watch' ? 'watch run #' + cur.run_id + ' on '
      : cur.kind === 'snapshot' ? 'snapshot run #' + cur.run_id + ' of ' : 'proxy run #' + cur.run_id + ' in front of ';
    document.getElementById('page-status').textContent = cur
      ? what + cur.upstream + ', stats every ' + (cur.stats_interval_ms || '?') + ' ms'
      : '';
    fillPickers();
    document.getElementById('run-picker').addEventListener('change', (e) => {
      page.run = Number(e.target.value);
      if (page.cmp === page.run) page.cmp = null;
      fillPickers();
      navigate();
    });
    document.getElementById('cmp-picker').addEventListener('change', (e) => {
      page.cmp = e.target.value === '' ? null : Number(e.target.value);
      navigate();
    });
    build();
  }

  // for tests and tools: the words the page makes of a saved hits_advice
  window.slabtapPage = { hitsAdviceLine: hitsAdviceLine };
  window.addEventListener('resize', () => page.viewReady && page.views.length && page.viewReady());
  main();
})();
