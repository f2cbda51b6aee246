/**
 * The structure the generator relies on in an exported graph, checked when a session opens.
 * `spa_trainer.export` writes it (trainer/spa_trainer/export/graph.py) and refuses a graph that
 * lacks it (export/structure.py reads the file); here the loader checks what onnxruntime-node
 * shows of the graph (input names, the declared logits shape) and the manifest's `graph` list, so
 * an artifact exported before (when these were rewrites made here at load time) fails with what
 * to do instead of running slower or wrongly.
 */
import type { InferenceSession } from 'onnxruntime-node';
import type { PolicyManifest } from './artifact.js';

/** manifest.json's `graph` entries the generator needs (export/structure.py's `GRAPH`). */
const GRAPH_PARTS = ['split_cache', 'last_position_logits', 'grouped_attention'] as const;

/** The input that carries the recent columns of one `past_key_values.*` input. */
export function recentName(pastName: string): string {
  return `recent.${pastName.replace(/^past_key_values\./, '')}`;
}

/** What the loader sees of a session: its input names and output metadata. */
export type SessionView = Pick<InferenceSession, 'inputNames' | 'outputMetadata'>;

/** Each missing part with the reason; empty when the graph is the generator's. */
export function missingStructure(manifest: PolicyManifest, session: SessionView): string[] {
  const listed = new Set(manifest.graph ?? []);
  const reasons = new Map<string, string>();
  for (const part of GRAPH_PARTS)
    if (!listed.has(part)) reasons.set(part, `manifest.json's "graph" does not list it`);
  const inputs = new Set(session.inputNames);
  const noRecent = manifest.inputs
    .filter((n) => n.startsWith('past_key_values.'))
    .some((n) => !inputs.has(recentName(n)));
  if (noRecent) reasons.set('split_cache', 'the graph has no recent.* inputs');
  const logits = session.outputMetadata.find((m) => m.name === 'logits');
  const dims = logits?.isTensor ? logits.shape : [];
  if (dims.length !== 3 || dims[1] !== 1)
    reasons.set('last_position_logits', `logits is declared [${dims.join(', ')}], not [batch, 1, vocab]`);
  return [...reasons].map(([part, why]) => `${part} (${why})`);
}

/** Throws naming what `modelPath`'s graph lacks and how to re-export it. */
export function checkStructure(modelPath: string, manifest: PolicyManifest, session: SessionView): void {
  const missing = missingStructure(manifest, session);
  if (missing.length === 0) return;
  throw new Error(
    `${modelPath}: exported without ${missing.join(', ')}; the generator runs only the graph ` +
      'spa_trainer.export writes since commit 358b749 (2026-11-27). Re-export the weights: ' +
      'trainer/.venv/bin/python -m spa_trainer.export --model <checkpoint or model folder> --out <artifact root>',
  );
}
