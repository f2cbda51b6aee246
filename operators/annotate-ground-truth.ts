import { map, type OperatorFunction } from 'rxjs';
import type { Message, Trajectory } from '../schemas/index.js';
import { randomizeCoordinates } from './internal/randomize-coordinates.js';

/**
 * How `<observation>`/`<prediction>` contents are filled:
 * - `gt`: the true env states (SPA, docs/spa-data.md#replacement);
 * - `self-belief`: the model's own text is kept (paper ablation, docs/spa-data.md#ablations);
 * - `random-coords`: true grids but every coordinate pair replaced by a random in-range one (ablation);
 * - `gt-fill`: `gt`, and a turn whose `<think>…</think>` lacks the tags gets them (this project's
 *   option for a model that cannot follow the format instruction yet, docs/spa-data.md#fill).
 */
export const ANNOTATIONS = ['gt', 'self-belief', 'random-coords', 'gt-fill'] as const;
export type Annotation = (typeof ANNOTATIONS)[number];

/** A trajectory whose assistant messages were annotated; `annotation` says how. */
export interface AnnotatedTrajectory extends Trajectory {
  readonly annotation: Annotation;
}

const OBSERVATION = /(<observation>)(.*?)(<\/observation>)/gs;
const PREDICTION = /(<prediction>)(.*?)(<\/prediction>)/gs;

/**
 * SPA's `replace_states_in_message` (docs/spa-data.md#replacement): every observation span gets `obs`,
 * every prediction span gets `pred`. Function replacers on purpose: a template string would
 * interpret `$1`/`$&` inside a state, the JS twin of Python's `\\13` misparse
 * (docs/spa-testvectors.md#ground-truth).
 */
export function replaceStates(message: string, obs: string, pred: string): string {
  return message
    .replace(OBSERVATION, (_m, open: string, _old: string, close: string) => open + obs + close)
    .replace(PREDICTION, (_m, open: string, _old: string, close: string) => open + pred + close);
}

const THINK = /<think>(.*?)<\/think>/s;
const HAS_OBSERVATION = /<observation>.*?<\/observation>/s;
const HAS_PREDICTION = /<prediction>.*?<\/prediction>/s;

/**
 * Adds the tags a world-model turn should have to a turn that wrote none (docs/spa-data.md#fill):
 * `<observation></observation>` first inside `<think>…</think>` when the turn has no observation,
 * `<prediction></prediction>` last inside it when it has no prediction; `replaceStates` then fills
 * them. A turn without a `<think>…</think>` stays as it is, as in SPA.
 */
export function fillStateTags(message: string): string {
  const observation = HAS_OBSERVATION.test(message) ? '' : '<observation></observation>';
  const prediction = HAS_PREDICTION.test(message) ? '' : '<prediction></prediction>';
  return message.replace(THINK, (_m, body: string) => `<think>${observation}${body}${prediction}</think>`);
}

/**
 * Annotates every assistant turn t: observation ← states[t] (the state shown before turn t),
 * prediction ← states[t+1] (the state after all actions executed in turn t). Applied to the
 * conversation in place, so later prompts contain the annotated earlier turns (docs/spa-data.md#replacement).
 */
export function annotateGroundTruth(
  options: { annotation?: Annotation } = {},
): OperatorFunction<Trajectory, AnnotatedTrajectory> {
  const annotation = options.annotation ?? 'gt';
  return map((trajectory) => ({
    ...trajectory,
    messages: annotateMessages(trajectory, annotation),
    annotation,
  }));
}

function annotateMessages(trajectory: Trajectory, annotation: Annotation): Message[] {
  if (annotation === 'self-belief') return [...trajectory.messages];
  const stateFor =
    annotation === 'gt' || annotation === 'gt-fill'
      ? (s: string) => s
      : (s: string, salt: string) => randomizeCoordinates(s, `${trajectory.trajectory_id}/${salt}`);
  let assistantTurn = 0;
  return trajectory.messages.map((message) => {
    if (message.role !== 'assistant') return message;
    const t = assistantTurn++;
    const obs = trajectory.states[t];
    const pred = trajectory.states[t + 1];
    if (obs === undefined || pred === undefined) {
      throw new Error(
        `trajectory ${trajectory.trajectory_id}: assistant turn ${t} has no ground-truth state (states has ${trajectory.states.length})`,
      );
    }
    const content = annotation === 'gt-fill' ? fillStateTags(message.content) : message.content;
    return {
      ...message,
      content: replaceStates(content, stateFor(obs, `o${t}`), stateFor(pred, `p${t}`)),
    };
  });
}
