import type { LakeMap, LakeTile } from './lake-map.js';
import { describeLake, renderLake } from './lake-render.js';
import type { GymDirection } from './transitions.js';

/**
 * A map's render pieces for the env's hot path (step + render). The map is immutable, so a view is
 * built once per loaded map and shared by clones; it starts with two short strings per row and
 * fills the rest on first use, so loading a map stays cheap. Its renders and descriptions equal
 * `renderLake` / `describeLake` byte for byte (test/envs/env-fast-paths.test.ts checks every cell
 * of every SPA puzzle); those two stay the readable definitions.
 */
export class LakeView {
  readonly rows: number;
  readonly cols: number;
  /** `tiles[row * cols + col]`, the map flattened row-major. */
  readonly tiles: readonly LakeTile[];
  /** `above[row]`: the render of the rows before `row`, each followed by `\n` (no player there). */
  private readonly above: string[] = [];
  /** `below[row]`: `\n` and the render of the rows after `row`, joined by `\n`. */
  private readonly below: string[] = [];
  /** `playerRows[cell]`: the cell's row rendered with the player on it, once asked for. */
  private readonly playerRows: (string | undefined)[] = [];
  /** `describeLake` after the player clause, once asked for. */
  private describeTail: string | undefined;

  constructor(private readonly map: LakeMap) {
    this.rows = map.rows;
    this.cols = map.cols;
    this.tiles = map.tiles.flat();
    const lines = renderLake(map, { row: -1, col: -1 }).split('\n');
    let above = '';
    for (const line of lines) {
      this.above.push(above);
      above += `${line}\n`;
    }
    let below = '';
    for (let row = lines.length - 1; row >= 0; row--) {
      this.below[row] = below;
      below = `\n${lines[row] as string}${below}`;
    }
  }

  /**
   * `renderLake(map, player)` for the player on `cell` (row-major index): three pieces, so one
   * string is built per render (measured fastest of row loops, joins and these pieces).
   */
  render(cell: number): string {
    const row = Math.floor(cell / this.cols);
    return (this.above[row] as string) + this.playerRow(cell, row) + (this.below[row] as string);
  }

  /** `describeLake(map, player)` for the player on `cell`. */
  describe(cell: number): string {
    const row = Math.floor(cell / this.cols);
    if (this.describeTail === undefined) {
      // describeLake's player clause comes first; everything after it does not depend on the player.
      this.describeTail = describeLake(this.map, { row: 0, col: 0 }).slice(playerClause(0, 0).length);
    }
    return playerClause(row, cell - row * this.cols) + this.describeTail;
  }

  /** gymnasium `_inc` on cell indexes: one cell in `direction`, clamped (as `moveOnLake`). */
  move(cell: number, direction: GymDirection): number {
    const row = Math.floor(cell / this.cols);
    const col = cell - row * this.cols;
    switch (direction) {
      case 0:
        return col > 0 ? cell - 1 : cell;
      case 1:
        return row < this.rows - 1 ? cell + this.cols : cell;
      case 2:
        return col < this.cols - 1 ? cell + 1 : cell;
      case 3:
        return row > 0 ? cell - this.cols : cell;
    }
  }

  private playerRow(cell: number, row: number): string {
    let text = this.playerRows[cell];
    if (text === undefined) {
      // A one-row map through renderLake keeps a single definition of the characters.
      const line: LakeMap = { rows: 1, cols: this.cols, tiles: [this.map.tiles[row] as readonly LakeTile[]] };
      text = renderLake(line, { row: 0, col: cell - row * this.cols });
      this.playerRows[cell] = text;
    }
    return text;
  }
}

function playerClause(row: number, col: number): string {
  return `Player (P) is at (${row},${col})`;
}
