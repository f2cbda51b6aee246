/**
 * The Sokoban board as gym_sokoban stores it (docs/spa-envs.md#sokoban): two flat row-major arrays,
 * `fixed` (walls, floor, targets) and `state` (adds boxes and the player), plus the text
 * render, its parser and the coordinate sentence (docs/spa-prompts.md#states).
 */

/** gym_sokoban cell codes (docs/spa-envs.md#sokoban). Code 6 exists only in renders. */
export const Cell = {
  wall: 0,
  floor: 1,
  target: 2,
  boxOnTarget: 3,
  box: 4,
  player: 5,
  playerOnTarget: 6,
} as const;

/** `SokobanEnvConfig.grid_lookup`, indexed by cell code (docs/spa-envs.md#sokoban). */
const GRID_CHARS: readonly string[] = ['#', '_', 'O', '√', 'X', 'P', 'S'];

/**
 * The legend line of the instruction prefix (docs/spa-prompts.md#prefix); one definition, shared with the
 * prompts.
 */
export { SOKOBAN_GRID_VOCABULARY as GRID_VOCABULARY } from '../protocol/action-vocabularies.js';

/**
 * Row/column deltas in gym_sokoban's order Up, Down, Left, Right (`CHANGE_COORDINATES`);
 * env action id `a` (1..4) uses index `a - 1`.
 */
export const DIRECTIONS: readonly (readonly [number, number])[] = [
  [-1, 0],
  [1, 0],
  [0, -1],
  [0, 1],
];

/** A board snapshot: `fixed` codes 0–2, `state` codes 0–5, both `rows × cols`, row-major. */
export interface SokobanRoom {
  readonly rows: number;
  readonly cols: number;
  readonly fixed: Uint8Array;
  readonly state: Uint8Array;
}

/** A deep copy, so callers can mutate without aliasing. */
export function copyRoom(room: SokobanRoom): SokobanRoom {
  return { rows: room.rows, cols: room.cols, fixed: room.fixed.slice(), state: room.state.slice() };
}

/** Whether `state[i]` holds a box (on or off a target). */
export function isBox(code: number | undefined): boolean {
  return code === Cell.box || code === Cell.boxOnTarget;
}

/** Whether the player may step onto a cell with this `state` code (floor or empty target). */
export function isWalkable(code: number | undefined): boolean {
  return code === Cell.floor || code === Cell.target;
}

/** RAGEN's text render: player-on-target shown as `S`, rows joined by `\n`, no trailing newline. */
export function renderRoom(room: SokobanRoom): string {
  const lines: string[] = [];
  for (let r = 0; r < room.rows; r++) {
    let line = '';
    for (let c = 0; c < room.cols; c++) {
      const i = r * room.cols + c;
      const code = room.state[i] === Cell.player && room.fixed[i] === Cell.target ? 6 : (room.state[i] ?? 0);
      line += GRID_CHARS[code];
    }
    lines.push(line);
  }
  return lines.join('\n');
}

/** Zero-indexed `(r,c)` cells of `room` matching `predicate`, row-major. */
function cellsWhere(room: SokobanRoom, predicate: (i: number) => boolean): string[] {
  const out: string[] = [];
  for (let i = 0; i < room.rows * room.cols; i++) {
    if (predicate(i)) out.push(`(${Math.floor(i / room.cols)},${i % room.cols})`);
  }
  return out;
}

/**
 * The coordinate sentence (docs/spa-prompts.md#states), e.g.
 * `Player (P) is at (4,2); box (X) is at (3,1); target (O) is at (1,1).`
 *
 * The private SPA renderer is not public, so for `S` and `√` we make our own choice
 * (docs/spa-prompts.md#states) and compute from the arrays: player = the `P`/`S` cell; boxes = `X` and `√`
 * cells; targets = every target cell (`O`, `√`, `S`). With several boxes or targets the
 * clause repeats once per item, row-major.
 */
export function describeRoom(room: SokobanRoom): string {
  const player = cellsWhere(room, (i) => room.state[i] === Cell.player);
  const boxes = cellsWhere(room, (i) => isBox(room.state[i]));
  const targets = cellsWhere(room, (i) => room.fixed[i] === Cell.target);
  const clauses = [
    ...player.map((p) => `Player (P) is at ${p}`),
    ...boxes.map((b) => `box (X) is at ${b}`),
    ...targets.map((t) => `target (O) is at ${t}`),
  ];
  return `${clauses.join('; ')}.`;
}

/** char → [fixed, state] for the render alphabet. */
const PARSE_TABLE: ReadonlyMap<string, readonly [number, number]> = new Map([
  ['#', [Cell.wall, Cell.wall]],
  ['_', [Cell.floor, Cell.floor]],
  ['O', [Cell.target, Cell.target]],
  ['√', [Cell.target, Cell.boxOnTarget]],
  ['X', [Cell.floor, Cell.box]],
  ['P', [Cell.floor, Cell.player]],
  ['S', [Cell.target, Cell.player]],
]);

/**
 * Parse a text render back into a room. Throws, naming the problem, on ragged rows,
 * unknown characters, a player count other than one, no boxes, or boxes ≠ targets.
 */
export function parseRender(render: string): SokobanRoom {
  const lines = render.split('\n').map((line) => Array.from(line));
  const cols = lines[0]?.length ?? 0;
  if (cols === 0) throw new Error(`Sokoban render: empty first row in ${JSON.stringify(render)}`);
  const rows = lines.length;
  const fixed = new Uint8Array(rows * cols);
  const state = new Uint8Array(rows * cols);
  let players = 0;
  let boxes = 0;
  let targets = 0;
  lines.forEach((line, r) => {
    if (line.length !== cols) {
      throw new Error(`Sokoban render: row ${r} has ${line.length} cells, expected ${cols} like row 0`);
    }
    line.forEach((ch, c) => {
      const codes = PARSE_TABLE.get(ch);
      if (!codes) {
        throw new Error(
          `Sokoban render: unknown character ${JSON.stringify(ch)} at (${r},${c}); expected one of # _ O √ X P S`,
        );
      }
      fixed[r * cols + c] = codes[0];
      state[r * cols + c] = codes[1];
      if (codes[1] === Cell.player) players++;
      if (isBox(codes[1])) boxes++;
      if (codes[0] === Cell.target) targets++;
    });
  });
  if (players !== 1) throw new Error(`Sokoban render: found ${players} players (P/S), expected exactly 1`);
  if (boxes === 0) throw new Error('Sokoban render: no box (X/√) found, expected at least 1');
  if (boxes !== targets) {
    throw new Error(`Sokoban render: ${boxes} boxes (X/√) but ${targets} targets (O/√/S); counts must match`);
  }
  return { rows, cols, fixed, state };
}
