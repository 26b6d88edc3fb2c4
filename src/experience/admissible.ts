import type { Observation } from '../core/types.ts';
import { actionTemplate } from './retrieval/substitution.ts';

/**
 * Templates with one `{}` slot (`verb[{}]`) of actions whose argument is free text: where a state
 * lists one such action, any non-empty argument is admissible too (a text box that suggests a few
 * entries). An environment declares them, or recorded data shows them ({@link learnFreeTextActions}).
 */
export type FreeTextActions = ReadonlySet<string>;

const NONE: FreeTextActions = new Set();

/** The text before and after a template's one slot, or undefined for a template without exactly one. */
function slotEnds(template: string): [before: string, after: string] | undefined {
  const at = template.indexOf('{}');
  if (at < 0 || template.indexOf('{}', at + 2) >= 0) return undefined;
  return [template.slice(0, at), template.slice(at + 2)];
}

/** Whether `action` fills the slot of the template with `ends` (with a non-blank argument). */
function fills(action: string, [before, after]: [string, string]): boolean {
  return action.length > before.length + after.length && action.startsWith(before) && action.endsWith(after) && action.slice(before.length, action.length - after.length).trim() !== '';
}

/**
 * Whether `action` is admissible in `observation` under the abstract state format: it is one of
 * the listed actions, or it fills the slot of a `freeText` template of which the state lists an
 * action. Every experience model applies this rule.
 */
export function isAdmissible(observation: Observation, action: string, freeText: FreeTextActions = NONE): boolean {
  const a = action.trim();
  if (observation.actions.includes(a)) return true;
  for (const template of freeText) {
    const ends = slotEnds(template);
    if (ends && fills(a, ends) && observation.actions.some((x) => fills(x, ends))) return true;
  }
  return false;
}

/** One recorded step as {@link learnFreeTextActions} reads it. */
export interface RecordedStep {
  observation: Observation;
  action: string;
  valid: boolean;
}

/**
 * The one-slot templates that recorded data shows taking arguments the state did not list: the
 * environment accepted (valid) an action outside its list whose template the list had.
 */
export function learnFreeTextActions(steps: Iterable<RecordedStep>): Set<string> {
  const learned = new Set<string>();
  for (const { observation, action, valid } of steps) {
    const a = action.trim();
    if (!valid || observation.actions.includes(a)) continue;
    const { template } = actionTemplate(a);
    const ends = slotEnds(template);
    if (ends && fills(a, ends) && observation.actions.some((x) => actionTemplate(x).template === template)) learned.add(template);
  }
  return learned;
}
