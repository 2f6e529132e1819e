"""The report as one self-contained HTML page (no network, no files beside it).

The page embeds the report's JSON and draws, with a little JavaScript, a function x (transform x
executor) matrix with one coloured cell per result, filters (a name filter, status, transform and
executor boxes), the capabilities table and the known deviations.  A cell with failing examples
opens a panel with each failing input and both results (the executor's and NumPy's).  The state of
the filters lives in the address's fragment (``#q=linalg&status=failing&open=sin/jit/jax``), so a
link shows the same view; the browser test in ``test_report.py`` drives the page that way.
"""
from __future__ import annotations

import html
import json

_STYLE = """
body { font: 13px/1.4 system-ui, sans-serif; margin: 1.2em; color: #222; }
h1 { font-size: 1.4em; margin: 0 0 .2em; } h2 { font-size: 1.15em; margin: 1.4em 0 .4em; }
.meta { color: #555; } .filters { margin: .8em 0; display: flex; gap: 1.2em; flex-wrap: wrap; align-items: center; }
table { border-collapse: collapse; } th, td { border: 1px solid #ddd; padding: 1px 5px; }
th { background: #f4f4f4; position: sticky; top: 0; } td.fn { font-family: monospace; white-space: nowrap; }
td.cell { text-align: center; min-width: 2.2em; cursor: default; font-size: 11px; }
.s-ok { background: #c8efc8; } .s-deviation { background: #fff0a8; } .s-gap { background: #ffe0b0; }
.s-open { background: #f3c4f0; } .s-n\\/a { background: #f4f4f4; color: #999; }
.s-DIFFERS, .s-ERROR, .s-GAP\\! { background: #f29a9a; font-weight: bold; cursor: pointer; }
td.has-failures { cursor: pointer; text-decoration: underline dotted; }
#panel { position: fixed; right: 1em; top: 1em; bottom: 1em; width: 46%; overflow: auto; background: #fff;
         border: 2px solid #c33; padding: .8em; box-shadow: 0 0 12px #888; display: none; }
#panel pre { white-space: pre-wrap; word-break: break-all; background: #f7f7f7; padding: .4em; }
#panel .close { float: right; cursor: pointer; }
.k-native { background: #c8efc8; } .k-adapted { background: #def3de; } .k-other { background: #fff0a8; }
.k-generic { background: #e4ecfa; } .k-composite { background: #eee; } .k-unsupported { background: #f29a9a; }
.legend span { padding: 0 .5em; margin-right: .3em; }
"""

_SCRIPT = r"""
const D = JSON.parse(document.getElementById('report-data').textContent);
const FAILING = ['DIFFERS', 'ERROR', 'GAP!'];
const SHORT = {'ok': '✓', 'deviation': 'dev', 'open': 'open', 'DIFFERS': '✗', 'ERROR': 'err', 'gap': 'gap',
               'GAP!': 'GAP!', 'n/a': '·'};
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) { if (k === 'text') e.textContent = v; else e.setAttribute(k, v); }
  for (const k of kids) e.append(k);
  return e;
}
function state() {
  const s = {q: '', status: 'all', open: '', t: D.transforms.join(','), e: D.executors.join(',')};
  for (const part of location.hash.replace(/^#/, '').split('&')) {
    const [k, v] = part.split('='); if (k && v !== undefined) s[k] = decodeURIComponent(v);
  }
  return s;
}
function setState(changes) {
  const s = Object.assign(state(), changes);
  location.hash = Object.entries(s).map(([k, v]) => k + '=' + encodeURIComponent(v)).join('&');
}
function rowStatuses(r, ts, es) { return ts.flatMap(t => es.map(e => r.cells[t][e].status)); }
function keep(r, s, ts, es) {
  if (s.q && !r.function.toLowerCase().includes(s.q.toLowerCase())) return false;
  const st = rowStatuses(r, ts, es);
  if (s.status === 'failing') return st.some(x => FAILING.includes(x));
  if (s.status === 'not-ok') return st.some(x => x !== 'ok' && x !== 'n/a');
  return true;
}
function drawMatrix() {
  const s = state(), ts = s.t.split(',').filter(x => x), es = s.e.split(',').filter(x => x);
  document.getElementById('q').value = s.q; document.getElementById('status').value = s.status;
  for (const box of document.querySelectorAll('input[data-t]')) box.checked = ts.includes(box.dataset.t);
  for (const box of document.querySelectorAll('input[data-e]')) box.checked = es.includes(box.dataset.e);
  const head1 = el('tr', {}, el('th', {rowspan: 2, text: 'function'}));
  const head2 = el('tr');
  for (const t of ts) { head1.append(el('th', {colspan: es.length, text: t})); for (const e of es) head2.append(el('th', {text: e})); }
  const body = el('tbody');
  let shown = 0;
  for (const r of D.rows) {
    if (!keep(r, s, ts, es)) continue;
    shown++;
    const tr = el('tr', {'data-function': r.function}, el('td', {class: 'fn', text: r.function}));
    for (const t of ts) for (const e of es) {
      const c = r.cells[t][e];
      const td = el('td', {class: 'cell s-' + c.status + (c.failures.length ? ' has-failures' : ''),
                           'data-status': c.status, 'data-cell': r.function + '/' + t + '/' + e,
                           title: `${r.function} / ${t} / ${e}: ${c.status}, ${c.examples} examples` + (c.note ? ' (' + c.note + ')' : ''),
                           text: SHORT[c.status] || c.status});
      if (c.failures.length) td.addEventListener('click', () => setState({open: r.function + '/' + t + '/' + e}));
      tr.append(td);
    }
    body.append(tr);
  }
  const table = document.getElementById('matrix'); table.replaceChildren(el('thead', {}, head1, head2), body);
  document.getElementById('shown').textContent = `${shown} of ${D.rows.length} functions shown`;
  drawPanel(s.open);
}
function drawPanel(key) {
  const panel = document.getElementById('panel');
  if (!key) { panel.style.display = 'none'; return; }
  const [fn, t, e] = key.split('/');  // no row name has a slash
  const row = D.rows.find(r => r.function === fn); const c = row && row.cells[t] && row.cells[t][e];
  if (!c) { panel.style.display = 'none'; return; }
  const close = el('span', {class: 'close', text: '✕ close'}); close.addEventListener('click', () => setState({open: ''}));
  const kids = [close, el('h2', {text: `${fn} / ${t} / ${e}: ${c.status}`}),
                el('p', {text: `${c.examples} examples, ${c.disagreements} disagreements` + (c.note ? `; ${c.note}` : '')})];
  c.failures.forEach((f, i) => {
    kids.push(el('h3', {text: `failing example ${i + 1}: ${f.status}` + (f.deviation ? ` (deviation ${f.deviation})` : '')}));
    kids.push(el('p', {class: 'detail', text: f.detail || ''}));
    for (const [label, key] of [['input', 'input'], [`${e} gave`, 'got'], ['NumPy gave', 'want']])
      if (f[key]) kids.push(el('div', {text: label}), el('pre', {class: 'f-' + key, text: f[key]}));
  });
  panel.replaceChildren(...kids); panel.style.display = 'block';
}
function setup() {
  const filters = document.getElementById('filters');
  const q = el('input', {id: 'q', placeholder: 'filter functions (e.g. linalg)', size: 28});
  q.addEventListener('change', () => setState({q: q.value}));
  const status = el('select', {id: 'status'}, el('option', {value: 'all', text: 'all rows'}),
                    el('option', {value: 'not-ok', text: 'rows not all ok'}), el('option', {value: 'failing', text: 'rows with failures'}));
  status.addEventListener('change', () => setState({status: status.value}));
  filters.append(q, status);
  for (const [attr, names, key] of [['t', D.transforms, 't'], ['e', D.executors, 'e']]) {
    const group = el('span');
    for (const n of names) {
      const box = el('input', {type: 'checkbox', ['data-' + attr]: n});
      box.addEventListener('change', () => setState({[key]: [...document.querySelectorAll('input[data-' + attr + ']')]
        .filter(b => b.checked).map(b => b.dataset[attr]).join(',')}));
      group.append(el('label', {}, box, n + ' '));
    }
    filters.append(group);
  }
  window.addEventListener('hashchange', drawMatrix);
  drawMatrix();
}
setup();
"""


def _capabilities(data: dict) -> str:
    caps = data.get("capabilities", {})
    exs = [e for e in data["executors"] if e in caps]
    if not exs:
        return ""
    funcs = sorted({f for e in exs for f in caps[e]["functions"]})
    head = "".join(f"<th>{html.escape(e)}</th>" for e in exs)
    counts = "".join(f"<td>{html.escape(', '.join(f'{v} {k}' for k, v in caps[e]['counts'].items() if v))}</td>" for e in exs)
    rows = []
    for f in funcs:
        cells = "".join(
            f'<td class="k-{caps[e]["functions"][f]["kind"]}" title="{html.escape(caps[e]["functions"][f]["what"])}">'
            f'{caps[e]["functions"][f]["kind"]}</td>' for e in exs)
        rows.append(f'<tr><td class="fn">{html.escape(f)}</td>{cells}</tr>')
    legend = " ".join(f'<span class="k-{k}">{k}</span>' for k in ("native", "adapted", "other", "generic", "composite", "unsupported"))
    return (f'<h2>Capabilities (read from the executors\' tables; hover a cell for the implementation)</h2>'
            f'<p class="legend">{legend}</p><table id="capabilities"><tr><th>function</th>{head}</tr>'
            f'<tr><td>counts</td>{counts}</tr>{"".join(rows)}</table>')


def _deviations(data: dict) -> str:
    items = "".join(f"<li><b>{html.escape(d['id'])}</b> [{html.escape(', '.join(d['executors']))}]: "
                    f"{html.escape(d['reason'])}<br><code>{html.escape(d['reproducer'])}</code></li>"
                    for d in data.get("deviations", []))
    return f"<h2>Known deviations (conformance/deviations.py)</h2><ul id='deviations'>{items}</ul>"


def _official(data: dict) -> str:
    off = data.get("official")
    if not off:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(e)}</td><td>{o.get('passed', '')}</td><td>{o.get('failed_or_xfailed', '')}</td>"
        f"<td>{len(o.get('new_failures', [])) if 'passed' in o else html.escape(o.get('error', '')[:300])}</td></tr>"
        for e, o in off.items())
    stored = any("stored" in o for o in off.values())
    note = ("<p>Stored results of earlier runs (the command of each is in the JSON); "
            "<code>--array-api-tests PATH</code> runs the suite now.</p>" if stored else "")
    return ("<h2>Official array-api-tests</h2>" + note + "<table id='official'><tr><th>executor</th><th>passed</th>"
            f"<th>failed or known</th><th>new failures</th></tr>{rows}</table>")


def embed_json(data) -> str:
    """``data`` as JSON that is inert inside ``<script type="application/json">``: no ``<`` (so no
    ``</script>``, ``<!--`` or ``<script`` in the data can end or change the element), no ``>``/``&``
    either; each is a JSON ``\\u`` escape, which ``JSON.parse`` reads back as the character."""
    text = json.dumps(data, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(data: dict) -> str:
    """The page for one report (``python -m conformance``'s JSON)."""
    s = data["summary"]
    embedded = embed_json(data)
    unavailable = "".join(f"<li>{html.escape(k)}: {html.escape(str(v))}</li>" for k, v in data.get("unavailable", {}).items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>arrayx conformance</title><style>{_STYLE}</style></head>
<body>
<h1>arrayx conformance: does a result depend on the executor?</h1>
<p class="meta">{html.escape(data['command'])} &middot; {html.escape(data['created'])} &middot; {html.escape(data['machine'])}
&middot; {data['max_examples']} example(s) per function and transform &middot; {data['duration_s']} s</p>
<p id="totals"><b>{s['examples']}</b> examples, <b>{s['example_executor_pairs']}</b> example-executor pairs compared
with the NumPy executor, <b>{s['disagreements']}</b> disagreements, <b>{s['failing_cells']}</b> failing cells.</p>
{f'<p>Executors not available here:</p><ul>{unavailable}</ul>' if unavailable else ''}
<p class="legend"><span class="s-ok">✓ ok</span><span class="s-deviation">dev: known deviation</span>
<span class="s-open">open: being fixed</span><span class="s-gap">gap: listed NotImplementedError</span>
<span class="s-GAP!">GAP!: unlisted</span><span class="s-DIFFERS">✗ differs</span><span class="s-ERROR">err: raised</span>
<span class="s-n/a">· not applicable</span> &mdash; click a red cell for its failing inputs and both results.</p>
<div class="filters" id="filters"></div>
<p id="shown"></p>
<table id="matrix"></table>
<div id="panel"></div>
{_capabilities(data)}
{_official(data)}
{_deviations(data)}
<script type="application/json" id="report-data">{embedded}</script>
<script>{_SCRIPT}</script>
</body></html>
"""
