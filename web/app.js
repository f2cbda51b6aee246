/* global document, window, EventSource */
// The `spa tap --web` page: listens to /events (Server-Sent Events) and draws each record as a
// card, newest first. The server already split boards into cells and marked the cells where the
// model's belief differs from the true state (web/server/web-record.ts); this file only draws.
// Plain DOM, no framework and no build step: the page is small. Its session is a cookie the
// server set when the page was first opened, sent with every request (the token is not in the
// address). A record that cannot be drawn becomes a card saying why; the feed goes on.
// Record text arrives with its controls and invisible format characters escaped (`\u202E`); every
// value from a record is still drawn in its own <bdi>, and every card isolates its direction, so
// right-to-left text in one value cannot reorder the labels and values around it.

const MAX_CARDS = 60; // older cards are removed: the feed is a window, not a log
const feed = document.getElementById('feed');
const kindSelect = document.getElementById('kind');
const statusEl = document.getElementById('status');
let paused = false;
let queue = [];

/** Creates an element with a class and children (strings become text nodes, never HTML). */
function el(tag, className, ...children) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const child of children) node.append(child instanceof window.Node ? child : String(child));
  return node;
}

/** A value from a record: its own <bdi> (direction from its own text, isolated from its neighbours). */
function v(value) {
  return el('bdi', '', value);
}

function drawBoard(label, board) {
  if (board === null) return el('div', 'board empty', el('div', 'label', label), '(not written)');
  const differs = new Set(board.differs.map(([r, c]) => `${r},${c}`));
  const box = el('div', 'board', el('div', 'label', label));
  if (board.rows.length === 0) box.append(el('div', 'caption', '(empty)'));
  board.rows.forEach((row, r) => {
    const line = el('div', 'row');
    row.forEach((cell, c) => line.append(el('bdi', differs.has(`${r},${c}`) ? 'cell diff' : 'cell', cell)));
    box.append(line);
  });
  if (board.caption) box.append(el('div', 'caption', v(board.caption)));
  if (board.differs.length > 0)
    box.append(el('div', 'caption bad', `${board.differs.length} cell(s) differ`));
  return box;
}

function parseOutcome(parse) {
  const how = `${parse.matched} match${parse.penalty ? ', format penalty' : ''}`;
  return parse.ok
    ? el('span', 'ok', `parse ok (${how})`)
    : el('span', 'bad', 'parse REJECTED ', v(parse.reason ?? '(no reason)'), ` (${how})`);
}

function drawTurn(turn) {
  const actions = turn.parse.actions.join(', ') || '(none)';
  return el(
    'div',
    'turn',
    el('div', '', `turn ${turn.turn}: `, parseOutcome(turn.parse)),
    el(
      'div',
      'where',
      'actions ',
      v(actions),
      ' · executed ',
      v(turn.executed.join(', ') || '(none)'),
      ' · reward ',
      v(turn.rewardText),
      turn.done ? ' · done' : '',
    ),
    el(
      'div',
      'boards',
      drawBoard('board before (true)', turn.before),
      drawBoard("model's observation", turn.believedBefore),
      drawBoard('board after (true)', turn.after),
      drawBoard("model's prediction", turn.believedAfter),
    ),
  );
}

function drawTrajectory(t) {
  const outcome = t.success ? el('span', 'ok', 'success') : el('span', 'bad', 'no success');
  return [
    el(
      'div',
      '',
      v(t.env),
      ' (',
      v(t.variant),
      `) seed ${t.seed} · ${t.mode} · policy `,
      v(t.policy),
      ` v${t.policyVersion} · `,
      outcome,
      ` · reward ${t.totalReward} · penalty ${t.penalty}`,
    ),
    el('div', 'where', 'trajectory ', v(t.trajectoryId), ' · group ', v(t.groupId)),
    ...t.turns.map(drawTurn),
  ];
}

/** A dead letter (or an undecodable record): why, from where, and what of its payload could be read. */
function drawRejected(record) {
  const r = record.rejected;
  return [
    el(
      'div',
      '',
      el('span', 'bad', 'reason ', v(r.reason)),
      ' · from ',
      v(r.source),
      ' · key ',
      v(r.key ?? '(none)'),
    ),
    el('div', '', 'detail: ', v(r.detail)),
    el('div', 'where', `payload ${record.payloadBytes} bytes`),
    ...(record.payloadNote ? [el('div', 'where', 'payload: ', v(record.payloadNote))] : []),
    ...(record.payloadTrajectory ? drawTrajectory(record.payloadTrajectory) : []),
    ...(record.payloadRow
      ? [
          el('div', '', v(record.payloadRow.env), ` turn ${record.payloadRow.turn}: rejected response`),
          el('pre', 'response', record.payloadRow.response),
        ]
      : []),
  ];
}

function body(record) {
  switch (record.kind) {
    case 'Trajectory':
      return drawTrajectory(record.trajectory);
    case 'SftRow':
      return [
        el(
          'div',
          '',
          v(record.env),
          ' · ',
          v(record.trajectoryId),
          ` turn ${record.turn} · annotation ${record.annotation} · answer `,
          v(record.answer ?? '(none)'),
        ),
        el(
          'div',
          'boards',
          drawBoard('observation', record.observation),
          drawBoard('prediction', record.prediction),
        ),
      ];
    case 'Rollout': {
      const r = record.rollout;
      return [
        el(
          'div',
          '',
          v(r.env),
          ` seed ${r.seed} · group `,
          v(r.group_id),
          ` · v${r.policy_version} · score ${r.score} · success ${r.success} · turns ${r.num_turns} · penalty ${r.penalty}`,
        ),
      ];
    }
    case 'Rejected':
    case 'Undecodable':
      return drawRejected(record);
    case 'PolicyUpdate': {
      const p = record.policy;
      return [
        el(
          'div',
          '',
          `v${p.version} · stage ${p.stage} · step ${p.step} · `,
          v(p.model),
          ' (',
          v(p.format),
          ') · ',
          v(p.uri),
        ),
      ];
    }
    case 'Odd':
      return [
        el('div', '', el('span', 'bad', `${record.recordKind}: ${record.reason}`)),
        el('div', '', v(record.detail)),
      ];
    default:
      return [el('div', '', JSON.stringify(record))];
  }
}

/** A record timestamp as ISO text; Kafka allows any 64-bit value, Date only ±8.64e15 ms. */
function when(timestamp) {
  const date = new Date(timestamp);
  return Number.isNaN(date.getTime()) ? `timestamp ${timestamp}` : date.toISOString();
}

function card(record) {
  const s = record.source;
  const where = [
    `${s.topic}[${s.partition}]@${s.offset} · key `,
    v(s.key ?? '(none)'),
    ` · ${when(s.timestamp)}`,
  ];
  let parts;
  try {
    parts = body(record);
  } catch (error) {
    // The server's cards are drawable (web/server/web-record.ts); this keeps one that is not
    // from ending the feed, and says so.
    parts = [el('div', 'bad', `cannot draw this ${record.kind} card: ${error}`)];
  }
  const article = el(
    'article',
    `card ${record.kind}`,
    el('h2', '', record.kind),
    el('div', 'where', ...where),
    ...parts,
  );
  article.dir = 'auto';
  return article;
}

/** Draws queued records once per frame; a burst only draws the newest MAX_CARDS. */
function flush() {
  window.requestAnimationFrame(flush);
  if (paused || queue.length === 0) return;
  const wanted = kindSelect.value;
  const fresh = queue.filter((r) => !wanted || r.kind === wanted).slice(-MAX_CARDS);
  queue = [];
  for (const record of fresh) feed.prepend(card(record));
  while (feed.childElementCount > MAX_CARDS) feed.lastElementChild.remove();
}

function pct(x) {
  return x === null ? '—' : `${(100 * x).toFixed(1)} %`;
}

function drawChart(svg, points) {
  svg.replaceChildren();
  if (points.length === 0) return;
  const max = Math.max(1, ...points.map((p) => p.value));
  const t0 = points[0].t;
  const span = Math.max(1, points[points.length - 1].t - t0);
  const xy = points.map(
    (p) => `${(((p.t - t0) / span) * 290 + 5).toFixed(1)},${(75 - (p.value / max) * 65).toFixed(1)}`,
  );
  const line = document.createElementNS('http://www.w3.org/2000/svg', 'polyline');
  line.setAttribute('points', xy.join(' '));
  const label = document.createElementNS('http://www.w3.org/2000/svg', 'text');
  label.setAttribute('x', '5');
  label.setAttribute('y', '9');
  label.textContent = `max ${max} · now ${points[points.length - 1].value}`;
  svg.append(line, label);
}

function drawStats(stats) {
  const rows = stats.envs.map((e) =>
    el(
      'tr',
      '',
      el('td', '', v(e.env)),
      el('td', '', v(e.stage)),
      el('td', '', e.episodes),
      el('td', '', pct(e.successRate)),
      el('td', '', e.fullGroups),
      el('td', '', pct(e.pass1)),
      el('td', '', `${pct(e.passK)} (k=${e.k})`),
    ),
  );
  document.querySelector('#envs tbody').replaceChildren(...rows);
  const counts = Object.entries(stats.byKind).map(([kind, n]) => `${kind} ${n}`);
  document.getElementById('counts').textContent = `${stats.read} read · ${counts.join(' · ')}`;
  drawChart(document.getElementById('throughput'), stats.throughput);
  drawChart(document.getElementById('lag'), stats.lag);
}

const events = new EventSource('events');
events.addEventListener(
  'open',
  () => ((statusEl.textContent = 'live'), (statusEl.className = 'status live')),
);
events.addEventListener(
  'error',
  () => ((statusEl.textContent = 'reconnecting…'), (statusEl.className = 'status down')),
);
events.addEventListener('record', (event) => {
  queue.push(JSON.parse(event.data));
  // Paused or hidden (no animation frames): keep only what could still be drawn (slides).
  if (queue.length > 4 * MAX_CARDS) queue = queue.slice(-MAX_CARDS);
});
events.addEventListener('stats', (event) => drawStats(JSON.parse(event.data)));
document.getElementById('pause').addEventListener('click', (event) => {
  paused = !paused;
  event.target.textContent = paused ? 'resume' : 'pause';
});
window.requestAnimationFrame(flush);
