/**
 * The experience model's output: the constraint sent to WebLLM (a JSON schema for
 * `response_format: json_object`, or an EBNF grammar), and the validation of a reply into a
 * whole {@link ExperienceStep} or a plain-words problem. Parsing never throws and never returns
 * a partly valid step; DreamGym's rules are enforced after parsing.
 */
import { z } from 'zod';
import type { Observation } from '../core/types.ts';
import type { ExperienceStep } from './types.ts';

/** Length limits on a reply (a runaway generation is rejected, not truncated). */
export const OUTPUT_LIMITS = { reasoning: 4000, stateText: 8000, action: 300, actions: 200 } as const;

const text = (max: number) => z.string().trim().min(1).max(max);

/** The reply of a step without its reasoning (what the `--no-reasoning` ablation asks for). Extra keys are ignored. */
export const StepOutcomeSchema = z.object({
  next_state: z.object({
    text: text(OUTPUT_LIMITS.stateText),
    actions: z.array(text(OUTPUT_LIMITS.action)).max(OUTPUT_LIMITS.actions),
  }),
  reward: z.number().finite().min(0).max(1),
  done: z.boolean(),
  valid: z.boolean(),
});

/** The reply of a step, as validated: reasoning first, then the outcome. Extra keys are ignored. */
export const StepReplySchema = z.object({ reasoning: text(OUTPUT_LIMITS.reasoning) }).extend(StepOutcomeSchema.shape);
export type StepReply = z.infer<typeof StepReplySchema>;

/** The reply of a reset without its reasoning. */
export const ResetStateSchema = z.object({
  state: z.object({
    text: text(OUTPUT_LIMITS.stateText),
    actions: z.array(text(OUTPUT_LIMITS.action)).min(1).max(OUTPUT_LIMITS.actions),
  }),
});

/** The reply of a reset (an episode's initial state). */
export const ResetReplySchema = z.object({ reasoning: text(OUTPUT_LIMITS.reasoning) }).extend(ResetStateSchema.shape);
export type ResetReply = z.infer<typeof ResetReplySchema>;

const stringType = { type: 'string' } as const;
// An action is one line, so its length can be bounded (XGrammar's bounded string admits no escapes);
// the state text and the reasoning span lines and are bounded by max_tokens.
const actionType = { type: 'string', minLength: 1, maxLength: OUTPUT_LIMITS.action } as const;
const stateSchema = (minActions: 0 | 1) => ({
  type: 'object',
  properties: { text: stringType, actions: { type: 'array', items: actionType, minItems: minActions, maxItems: OUTPUT_LIMITS.actions } },
  required: ['text', 'actions'],
});

const stepProperties = { next_state: stateSchema(0), reward: { type: 'number', minimum: 0, maximum: 1 }, done: { type: 'boolean' }, valid: { type: 'boolean' } };

/** JSON schema (as WebLLM wants it: a string) of a step reply, keys in reasoning-first order. */
export const STEP_JSON_SCHEMA = JSON.stringify({
  type: 'object',
  properties: { reasoning: stringType, ...stepProperties },
  required: ['reasoning', 'next_state', 'reward', 'done', 'valid'],
});

/** JSON schema of a step reply without reasoning (the `--no-reasoning` ablation). */
export const STEP_JSON_SCHEMA_NO_REASONING = JSON.stringify({
  type: 'object',
  properties: stepProperties,
  required: ['next_state', 'reward', 'done', 'valid'],
});

/** JSON schema of a reset reply. */
export const RESET_JSON_SCHEMA = JSON.stringify({
  type: 'object',
  properties: { reasoning: stringType, state: stateSchema(1) },
  required: ['reasoning', 'state'],
});

/** JSON schema of a reset reply without reasoning. */
export const RESET_JSON_SCHEMA_NO_REASONING = JSON.stringify({
  type: 'object',
  properties: { state: stateSchema(1) },
  required: ['state'],
});

/** Whitespace between JSON tokens, at most this many characters (a small model can loop on newlines). */
export const GRAMMAR_MAX_WS = 8;

const GRAMMAR_COMMON = String.raw`state ::= "{" ws "\"text\"" ws ":" ws statetext ws "," ws "\"actions\"" ws ":" ws actions ws "}"
actions ::= "[" ws "]" | "[" ws action ( ws "," ws action ){0,${OUTPUT_LIMITS.actions - 1}} ws "]"
boolean ::= "true" | "false"
statetext ::= "\"" char{1,${OUTPUT_LIMITS.stateText}} "\""
action ::= "\"" char{1,${OUTPUT_LIMITS.action}} "\""
char ::= [^"\\\x00-\x1F] | "\\" escape
escape ::= ["\\/bfnrt] | "u" hex hex hex hex
hex ::= [0-9a-fA-F]
ws ::= [ \t\n]{0,${GRAMMAR_MAX_WS}}`;

const REASONING_RULE = String.raw`reasoning ::= "\"" char{1,${OUTPUT_LIMITS.reasoning}} "\""`;

/** A step reply's keys after the reasoning (the rule `outcome`), and the rules they use. */
const STEP_GRAMMAR_OUTCOME = String.raw`outcome ::= "\"next_state\"" ws ":" ws state ws "," ws "\"reward\"" ws ":" ws reward ws "," ws "\"done\"" ws ":" ws boolean ws "," ws "\"valid\"" ws ":" ws boolean ws "}"
reward ::= "0" ( "." [0-9]{1,6} )? | "1" ( "." "0"{1,6} )?
${GRAMMAR_COMMON}`;

/**
 * EBNF grammar (WebLLM `response_format: {type: 'grammar'}`) of a step reply: the keys in
 * order, reasoning first, a reward that is a number in [0, 1], and bounded whitespace and lengths.
 */
export const STEP_GRAMMAR = String.raw`root ::= "{" ws "\"reasoning\"" ws ":" ws reasoning ws "," ws outcome
${REASONING_RULE}
${STEP_GRAMMAR_OUTCOME}`;

/** EBNF grammar of a step reply without reasoning: the outcome's keys first. */
export const STEP_GRAMMAR_NO_REASONING = String.raw`root ::= "{" ws outcome
${STEP_GRAMMAR_OUTCOME}`;

/** EBNF grammar of a reset reply. */
export const RESET_GRAMMAR = String.raw`root ::= "{" ws "\"reasoning\"" ws ":" ws reasoning ws "," ws "\"state\"" ws ":" ws state ws "}"
${REASONING_RULE}
${GRAMMAR_COMMON}`;

/** EBNF grammar of a reset reply without reasoning. */
export const RESET_GRAMMAR_NO_REASONING = String.raw`root ::= "{" ws "\"state\"" ws ":" ws state ws "}"
${GRAMMAR_COMMON}`;

/** How the reply is constrained. */
export type OutputConstraint = 'json-schema' | 'grammar' | 'none';

/** The `response_format` for a constraint and reply kind (undefined for 'none'); `reasoning: false` leaves the reasoning key out. */
export function responseFormat(
  constraint: OutputConstraint,
  kind: 'step' | 'reset',
  reasoning = true,
): { type: 'json_object'; schema: string } | { type: 'grammar'; grammar: string } | undefined {
  if (constraint === 'json-schema') {
    const schema = kind === 'step' ? (reasoning ? STEP_JSON_SCHEMA : STEP_JSON_SCHEMA_NO_REASONING) : reasoning ? RESET_JSON_SCHEMA : RESET_JSON_SCHEMA_NO_REASONING;
    return { type: 'json_object', schema };
  }
  if (constraint === 'grammar') {
    const grammar = kind === 'step' ? (reasoning ? STEP_GRAMMAR : STEP_GRAMMAR_NO_REASONING) : reasoning ? RESET_GRAMMAR : RESET_GRAMMAR_NO_REASONING;
    return { type: 'grammar', grammar };
  }
  return undefined;
}

/** How a reply is parsed. */
export interface ReplyParseOptions {
  /** Prose around the first complete JSON object is ignored (for unconstrained replies). */
  allowSurroundingText?: boolean;
  /** The reply must start with its reasoning (default true); false: none is asked for, and a reasoning key, if any, is ignored. */
  reasoning?: boolean;
}

/** The outcome of parsing: a whole value, or why there is none. */
export type Parsed<T> = { ok: true; value: T; corrections: string[] } | { ok: false; problem: string };

/** The index just past the JSON object that starts at `start` (string-aware), or -1. */
function objectEnd(textIn: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < textIn.length; i++) {
    const c = textIn[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/**
 * The JSON value of a reply. The reply must be one JSON object (optionally in a ```json fence);
 * with `allowSurroundingText`, prose around the first complete object is ignored.
 */
export function extractJson(reply: string, allowSurroundingText: boolean): Parsed<unknown> {
  if (typeof reply !== 'string') return { ok: false, problem: `the reply is ${reply === null ? 'null' : typeof reply}, not text` };
  let body = reply.trim();
  const fence = /^```(?:json)?\s*([\s\S]*?)\s*```$/i.exec(body);
  if (fence) body = (fence[1] ?? '').trim();
  if (body === '') return { ok: false, problem: 'the reply is empty' };
  const start = body.indexOf('{');
  if (start < 0) return { ok: false, problem: 'the reply contains no JSON object' };
  const end = objectEnd(body, start);
  if (end < 0) return { ok: false, problem: 'the JSON object in the reply is not closed (the reply may have been cut off)' };
  if (!allowSurroundingText && (start !== 0 || end !== body.length)) {
    return { ok: false, problem: 'the reply has text outside the JSON object' };
  }
  try {
    return { ok: true, value: JSON.parse(body.slice(start, end)) as unknown, corrections: [] };
  } catch (error) {
    return { ok: false, problem: `the reply is not valid JSON (${error instanceof Error ? error.message : String(error)})` };
  }
}

/** zod issues as one line: "next_state.actions.2: expected string, received number". */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : 'reply'}: ${i.message}`)
    .join('; ');
}

function dedupe(actions: readonly string[]): string[] {
  return [...new Set(actions.map((a) => a.trim()))];
}

/** A parsed reply's reasoning; '' for a schema without it (zod drops a key the schema does not name). */
const reasoningOf = (r: object): string => ('reasoning' in r && typeof r.reasoning === 'string' ? r.reasoning : '');

/**
 * Parses a step reply into an {@link ExperienceStep}, enforcing DreamGym's rules: an invalid
 * action earns reward 0; a reward comes only with the final step (`done`); a state that is not
 * final lists at least one admissible action. Rule fixes are reported in `corrections`.
 */
export function parseStepReply(reply: string, options: ReplyParseOptions = {}): Parsed<ExperienceStep> {
  const json = extractJson(reply, options.allowSurroundingText ?? false);
  if (!json.ok) return json;
  const reasoned = options.reasoning ?? true;
  const parsed = reasoned ? StepReplySchema.safeParse(json.value) : StepOutcomeSchema.safeParse(json.value);
  if (!parsed.success) return { ok: false, problem: `the JSON does not have the required fields and types (${describeIssues(parsed.error)})` };
  const r = parsed.data;
  const reasoning = reasoningOf(r);
  const actions = dedupe(r.next_state.actions);
  if (!r.done && actions.length === 0) return { ok: false, problem: 'next_state.actions is empty, but a state that is not final must list at least one admissible action' };
  const corrections: string[] = [];
  let reward = r.reward;
  if (!r.valid && reward !== 0) {
    corrections.push(`reward ${reward} of an invalid action set to 0`);
    reward = 0;
  }
  if (!r.done && reward !== 0) {
    corrections.push(`reward ${reward} before the final step set to 0`);
    reward = 0;
  }
  const observation: Observation = { text: r.next_state.text, actions };
  return { ok: true, value: { reasoning, observation, reward, done: r.done, valid: r.valid }, corrections };
}

/** Parses a reset reply into the episode's initial observation. */
export function parseResetReply(reply: string, options: ReplyParseOptions = {}): Parsed<{ reasoning: string; observation: Observation }> {
  const json = extractJson(reply, options.allowSurroundingText ?? false);
  if (!json.ok) return json;
  const reasoned = options.reasoning ?? true;
  const parsed = reasoned ? ResetReplySchema.safeParse(json.value) : ResetStateSchema.safeParse(json.value);
  if (!parsed.success) return { ok: false, problem: `the JSON does not have the required fields and types (${describeIssues(parsed.error)})` };
  const r = parsed.data;
  const reasoning = reasoningOf(r);
  return { ok: true, value: { reasoning, observation: { text: r.state.text, actions: dedupe(r.state.actions) } }, corrections: [] };
}
