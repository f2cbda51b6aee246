import type { Position } from '../types.js';
import { checkRectangular, findTiles, requireOneGoal } from './lake-map.js';
import type { LakeMap, LakeTile } from './lake-map.js';

/** Render characters (RAGEN FrozenLake `grid_lookup`, docs/spa-envs.md#frozenlake). */
const FLOOR = '_';
const HOLE = 'O';
const GOAL = 'G';
const PLAYER = 'P';
const PLAYER_IN_HOLE = 'X';
const PLAYER_ON_GOAL = '√';

/**
 * SPA's FrozenLake symbol legend for the instruction prefix (docs/spa-prompts.md#prefix); shared with the
 * prompts.
 */
export { FROZENLAKE_GRID_VOCABULARY as LAKE_GRID_VOCABULARY } from '../protocol/action-vocabularies.js';

/**
 * RAGEN's text render: rows joined by `\n`, no trailing newline; S renders as floor; the player's
 * cell shows `P`, `X` (in a hole) or `√` (on the goal).
 */
export function renderLake(map: LakeMap, player: Position): string {
  return map.tiles
    .map((rowTiles, row) =>
      rowTiles
        .map((tile, col) => (row === player.row && col === player.col ? playerChar(tile) : tileChar(tile)))
        .join(''),
    )
    .join('\n');
}

function tileChar(tile: LakeTile): string {
  if (tile === 'H') return HOLE;
  if (tile === 'G') return GOAL;
  return FLOOR;
}

function playerChar(tile: LakeTile): string {
  if (tile === 'H') return PLAYER_IN_HOLE;
  if (tile === 'G') return PLAYER_ON_GOAL;
  return PLAYER;
}

/**
 * Our coordinate sentence (docs/spa-prompts.md#states says FrozenLake's is UNKNOWN; this mirrors Sokoban's
 * template): `Player (P) is at (r,c); hole (O) is at (r,c); …; goal (G) is at (r,c).`, zero-indexed,
 * holes row-major with one clause each (none when there are no holes). The player clause always
 * gives the player's cell, and the hole/goal clauses list every hole/goal cell even when the
 * player stands on it.
 */
export function describeLake(map: LakeMap, player: Position): string {
  const at = (p: Position): string => `(${p.row},${p.col})`;
  const clauses = [
    `Player (P) is at ${at(player)}`,
    ...findTiles(map, 'H').map((hole) => `hole (O) is at ${at(hole)}`),
    ...findTiles(map, 'G').map((goal) => `goal (G) is at ${at(goal)}`),
  ];
  return `${clauses.join('; ')}.`;
}

/** A map and player position recovered from a render. */
export interface ParsedLakeRender {
  readonly map: LakeMap;
  readonly player: Position;
}

const RENDER_TILES: Readonly<Record<string, LakeTile>> = {
  [FLOOR]: 'F',
  [HOLE]: 'H',
  [GOAL]: 'G',
  [PLAYER]: 'S',
  [PLAYER_IN_HOLE]: 'H',
  [PLAYER_ON_GOAL]: 'G',
};

/**
 * Inverse of `renderLake`: the player's cell becomes the start `S` when it is floor (`P`);
 * a player shown in a hole (`X`) or on the goal (`√`) keeps that tile (the state is terminal).
 */
export function parseLakeRender(render: string): ParsedLakeRender {
  const players: Position[] = [];
  const tiles = render.split('\n').map((line, row) =>
    Array.from(line).map((ch, col) => {
      const tile = RENDER_TILES[ch];
      if (tile === undefined) {
        throw new Error(
          `FrozenLake render row ${row}: unexpected character ${JSON.stringify(ch)}; expected one of _ O G P X √`,
        );
      }
      if (ch === PLAYER || ch === PLAYER_IN_HOLE || ch === PLAYER_ON_GOAL) players.push({ row, col });
      return tile;
    }),
  );
  const map = checkRectangular(tiles, 'FrozenLake render');
  const [player] = players;
  if (player === undefined || players.length !== 1) {
    throw new Error(`FrozenLake render: expected exactly one player (P, X or √), found ${players.length}`);
  }
  requireOneGoal(map, 'FrozenLake render');
  return { map, player };
}
