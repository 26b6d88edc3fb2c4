/**
 * Entity substitution for the retrieval experience model: a stored transition is re-used for a
 * new task and a new action by rewriting the entities it mentions. The mapping comes only from
 * data (the two tasks' instructions and goals, and the two actions' arguments), never from an
 * environment's code, so whatever it cannot transfer shows up as a sim-to-real gap.
 */
import type { JsonValue, Task } from '../core/types.ts';

/** An ordered list of replacements; earlier entries win when two claim the same text. */
export type Substitution = Array<[from: string, to: string]>;

/** Entities in an action: bracket contents (`click[red]`) or `word N` references (`apple 1`). */
const ENTITY_RE = /\[([^\]]*)\]|\b([a-z][a-z-]*) (\d+)\b/gi;

/**
 * An action's template and entities: `take apple 1 from countertop 1` gives template
 * `take {} from {}` and entities `apple 1`, `countertop 1`; `click[red]` gives `click[{}]`, `red`.
 */
export function actionTemplate(action: string): { template: string; entities: string[] } {
  const entities: string[] = [];
  const template = action.trim().replace(ENTITY_RE, (_m, bracket: string | undefined, word: string | undefined, num: string | undefined) => {
    if (bracket !== undefined) {
      entities.push(bracket);
      return '[{}]';
    }
    entities.push(`${word} ${num}`);
    return '{}';
  });
  return { template, entities };
}

/** The action's verb: the text before `[`, or its first word (`go` for `go to fridge 1`). */
export function actionVerb(action: string): string {
  const t = action.trim().toLowerCase();
  const bracket = t.indexOf('[');
  if (bracket > 0) return t.slice(0, bracket).trim();
  return t.split(/\s+/, 1)[0] ?? '';
}

function flatten(value: JsonValue, path: string, out: Map<string, string>): void {
  if (typeof value === 'string') {
    out.set(path, value);
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => flatten(v, `${path}[${i}]`, out));
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) flatten(v, path ? `${path}.${k}` : k, out);
  }
}

/**
 * Replacements that turn text about `(fromTask, fromAction)` into text about `(toTask, toAction)`:
 * the whole instruction first, then action entities (when both actions share a template), then
 * string values found at the same place in both goals.
 */
export function buildSubstitution(fromTask: Task, toTask: Task, fromAction?: string, toAction?: string): Substitution {
  const pairs: Substitution = [];
  if (fromTask.instruction !== toTask.instruction) pairs.push([fromTask.instruction, toTask.instruction]);
  if (fromAction !== undefined && toAction !== undefined) {
    const a = actionTemplate(fromAction);
    const b = actionTemplate(toAction);
    if (a.template === b.template) {
      a.entities.forEach((e, i) => {
        const to = b.entities[i];
        if (to !== undefined && e !== to && e.trim() !== '') pairs.push([e, to]);
      });
    }
  }
  const fromGoal = new Map<string, string>();
  const toGoal = new Map<string, string>();
  flatten(fromTask.goal, '', fromGoal);
  flatten(toTask.goal, '', toGoal);
  for (const [path, from] of fromGoal) {
    const to = toGoal.get(path);
    // Very short values ("m", "s") would rewrite unrelated words.
    if (to !== undefined && from !== to && from.length >= 3) pairs.push([from, to]);
  }
  return pairs;
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Applies all replacements in one pass (no chains: a replaced text is never replaced again),
 * matching whole words only and preferring the longest match at each position.
 */
export function applySubstitution(text: string, substitution: Substitution): string {
  const map = new Map<string, string>();
  // An empty `from` would match between every two characters and splice `to` in everywhere.
  for (const [from, to] of substitution) if (from !== '' && !map.has(from)) map.set(from, to);
  if (map.size === 0) return text;
  const keys = [...map.keys()].sort((a, b) => b.length - a.length);
  const re = new RegExp(`(?<![\\w])(?:${keys.map(escape).join('|')})(?![\\w])`, 'g');
  return text.replace(re, (m) => map.get(m) ?? m);
}
