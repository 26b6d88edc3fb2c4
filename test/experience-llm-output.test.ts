import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import {
  RESET_GRAMMAR,
  RESET_JSON_SCHEMA,
  STEP_GRAMMAR,
  STEP_JSON_SCHEMA,
  RESET_GRAMMAR_NO_REASONING,
  RESET_JSON_SCHEMA_NO_REASONING,
  STEP_GRAMMAR_NO_REASONING,
  STEP_JSON_SCHEMA_NO_REASONING,
  StepReplySchema,
  extractJson,
  parseResetReply,
  parseStepReply,
  responseFormat,
} from '../src/experience/llm-output.ts';
import { Ebnf } from './fixtures/llm-ebnf.ts';
import { stepReply } from './fixtures/scripted-engine.ts';

const valid = stepReply({ text: 'Page: item B01', actions: ['click[buy now]', 'click[< prev]'] });

/** A parsed step must be whole: every field present and of the right type, the rules holding. */
function expectWhole(result: ReturnType<typeof parseStepReply>, reply: string, allowSurroundingText: boolean): void {
  if (!result.ok) {
    expect(typeof result.problem).toBe('string');
    expect(result.problem.length).toBeGreaterThan(0);
    return;
  }
  const s = result.value;
  expect(typeof s.reasoning).toBe('string');
  expect(s.reasoning.trim().length).toBeGreaterThan(0);
  expect(typeof s.observation.text).toBe('string');
  expect(Array.isArray(s.observation.actions)).toBe(true);
  for (const a of s.observation.actions) expect(typeof a).toBe('string');
  expect(typeof s.done).toBe('boolean');
  expect(typeof s.valid).toBe('boolean');
  // The reward is the reply's own on a valid final step, 0 on any other.
  const raw = extractJson(reply, allowSurroundingText);
  expect(raw.ok).toBe(true);
  const sent = (raw.ok ? raw.value : {}) as { reward?: unknown };
  expect(s.reward).toBe(s.valid && s.done ? sent.reward : 0);
  if (!s.done) expect(s.observation.actions.length).toBeGreaterThan(0);
}

describe('parseStepReply', () => {
  it('parses a valid reply into a whole step', () => {
    const r = parseStepReply(valid);
    expect(r).toEqual({
      ok: true,
      corrections: [],
      value: { reasoning: 'The action is admissible, so the page changes.', observation: { text: 'Page: item B01', actions: ['click[buy now]', 'click[< prev]'] }, reward: 0, done: false, valid: true },
    });
  });

  it('accepts a ```json fence and surrounding whitespace', () => {
    expect(parseStepReply(`\n\`\`\`json\n${valid}\n\`\`\`\n`).ok).toBe(true);
  });

  const bad: [string, string, RegExp][] = [
    ['empty', '', /empty/],
    ['prose only', 'I think the page changes.', /no JSON object/],
    ['malformed JSON', '{"reasoning": "x", "next_state": {"text": "y", "actions": []}, "reward": 0, "done": true, "valid": true', /not closed/],
    ['trailing comma', '{"reasoning": "x", "next_state": {"text": "y", "actions": ["a",]}, "reward": 0, "done": false, "valid": true}', /not valid JSON/],
    ['missing field', JSON.stringify({ reasoning: 'x', next_state: { text: 'y', actions: ['a'] }, reward: 0, done: false }), /valid/],
    ['missing nested field', JSON.stringify({ reasoning: 'x', next_state: { text: 'y' }, reward: 0, done: false, valid: true }), /next_state\.actions/],
    ['reward as string', JSON.stringify({ reasoning: 'x', next_state: { text: 'y', actions: ['a'] }, reward: '1', done: true, valid: true }), /reward/],
    ['done as string', JSON.stringify({ reasoning: 'x', next_state: { text: 'y', actions: ['a'] }, reward: 0, done: 'no', valid: true }), /done/],
    ['action not a string', JSON.stringify({ reasoning: 'x', next_state: { text: 'y', actions: ['a', 3] }, reward: 0, done: false, valid: true }), /next_state\.actions\.1/],
    ['reward out of range', JSON.stringify({ reasoning: 'x', next_state: { text: 'y', actions: ['a'] }, reward: 2, done: true, valid: true }), /reward/],
    ['empty reasoning', JSON.stringify({ reasoning: ' ', next_state: { text: 'y', actions: ['a'] }, reward: 0, done: false, valid: true }), /reasoning/],
    ['not an object', '[1, 2]', /no JSON object/],
    ['extra prose (strict)', `Sure! Here it is: ${valid} Hope this helps.`, /text outside the JSON object/],
    ['no actions before the end', JSON.stringify({ reasoning: 'x', next_state: { text: 'y', actions: [] }, reward: 0, done: false, valid: true }), /at least one admissible action/],
  ];
  for (const [name, reply, problem] of bad) {
    it(`rejects ${name} with a plain-words problem`, () => {
      const r = parseStepReply(reply);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.problem).toMatch(problem);
    });
  }

  it('with allowSurroundingText, takes the object out of prose', () => {
    const r = parseStepReply(`Sure! Here it is: ${valid} Hope this helps {really}.`, { allowSurroundingText: true });
    expect(r.ok).toBe(true);
  });

  it('enforces the DreamGym rules after parsing', () => {
    const invalid = parseStepReply(stepReply({ valid: false, reward: 1, done: true }));
    expect(invalid.ok && invalid.value.reward).toBe(0);
    expect(invalid.ok && invalid.corrections[0]).toMatch(/invalid action set to 0/);
    const early = parseStepReply(stepReply({ reward: 0.5, done: false }));
    expect(early.ok && early.value.reward).toBe(0);
    expect(early.ok && early.corrections[0]).toMatch(/before the final step/);
    const final = parseStepReply(stepReply({ reward: 0.75, done: true, actions: [] }));
    expect(final.ok && final.value).toMatchObject({ reward: 0.75, done: true, observation: { actions: [] } });
    const dup = parseStepReply(stepReply({ actions: [' a ', 'a', 'b'] }));
    expect(dup.ok && dup.value.observation.actions).toEqual(['a', 'b']);
  });

  it('never throws and never returns a partial step (fuzz: 3000 mutated replies)', () => {
    const rng = new Rng(42);
    const seeds = [valid, stepReply({ done: true, reward: 1, actions: [] }), stepReply({ valid: false }), `\`\`\`json\n${valid}\n\`\`\``];
    const junk = ['{', '}', '"', ',', ':', '[', ']', 'null', 'true', '1e9', '-1', '\\', 'NaN', ' ', '\n', 'reward', '"done"'];
    let accepted = 0;
    for (let i = 0; i < 3000; i++) {
      let s = rng.pick(seeds);
      const edits = rng.int(1, 4);
      for (let e = 0; e < edits; e++) {
        const at = rng.int(0, s.length);
        const op = rng.int(0, 3);
        if (op === 0) s = s.slice(0, at); // truncation
        else if (op === 1) s = s.slice(0, at) + s.slice(at + rng.int(1, 8)); // deletion
        else if (op === 2) s = s.slice(0, at) + rng.pick(junk) + s.slice(at); // insertion
        else s = s.replace(rng.pick(['false', 'true', '0', '"valid"', '"reasoning"', '"text"']), rng.pick(['"x"', '2', 'null', '[]', '{}'])); // type swap
      }
      for (const allow of [false, true]) {
        let r: ReturnType<typeof parseStepReply> | undefined;
        expect(() => (r = parseStepReply(s, { allowSurroundingText: allow }))).not.toThrow();
        expectWhole(r as ReturnType<typeof parseStepReply>, s, allow);
        if (r?.ok) accepted++;
      }
    }
    // Some mutations are harmless (whitespace), most are not.
    expect(accepted).toBeGreaterThan(0);
    expect(accepted).toBeLessThan(6000);
  });

  it('handles non-string input without throwing', () => {
    expect(parseStepReply(null as unknown as string).ok).toBe(false);
    expect(extractJson(undefined as unknown as string, true).ok).toBe(false);
  });
});

describe('parseResetReply', () => {
  it('parses an initial state and rejects one without actions', () => {
    const ok = parseResetReply(JSON.stringify({ reasoning: 'start', state: { text: 'Page: search', actions: ['search[x]'] } }));
    expect(ok).toEqual({ ok: true, corrections: [], value: { reasoning: 'start', observation: { text: 'Page: search', actions: ['search[x]'] } } });
    const none = parseResetReply(JSON.stringify({ reasoning: 'start', state: { text: 'Page', actions: [] } }));
    expect(none.ok).toBe(false);
  });
});

describe('output constraints', () => {
  it('the JSON schemas are valid JSON listing the zod schema keys, reasoning first', () => {
    const step = JSON.parse(STEP_JSON_SCHEMA) as { properties: Record<string, unknown>; required: string[] };
    expect(Object.keys(step.properties)).toEqual(Object.keys(StepReplySchema.shape));
    expect(step.required).toEqual(Object.keys(StepReplySchema.shape));
    expect(Object.keys(step.properties)[0]).toBe('reasoning');
    expect(Object.keys((JSON.parse(RESET_JSON_SCHEMA) as { properties: object }).properties)).toEqual(['reasoning', 'state']);
    expect(responseFormat('json-schema', 'step')).toEqual({ type: 'json_object', schema: STEP_JSON_SCHEMA });
    expect(responseFormat('grammar', 'reset')).toEqual({ type: 'grammar', grammar: RESET_GRAMMAR });
    expect(responseFormat('none', 'step')).toBeUndefined();
  });

  it('the step grammar accepts well-formed replies and rejects bad ones', () => {
    const g = new Ebnf(STEP_GRAMMAR);
    expect(g.accepts(valid)).toBe(true);
    expect(g.accepts(JSON.stringify(JSON.parse(valid), null, 2))).toBe(true);
    expect(g.accepts(stepReply({ reward: 1, done: true, actions: [] }))).toBe(true);
    expect(g.accepts(stepReply({ reward: 0.25, text: 'quote " and \\ and \n newline and \u00e9' }))).toBe(true);
    expect(g.accepts(stepReply({ reward: 1.5 }))).toBe(false);
    expect(g.accepts(valid.replace('"valid":true', '"valid":"yes"'))).toBe(false);
    expect(g.accepts(`${valid} extra`)).toBe(false);
    const reordered = JSON.stringify({ next_state: { text: 'a', actions: [] }, reasoning: 'r', reward: 0, done: false, valid: true });
    expect(g.accepts(reordered)).toBe(false);
    expect(g.accepts(valid.slice(0, -1))).toBe(false);
  });

  it('the reset grammar accepts an initial state', () => {
    const g = new Ebnf(RESET_GRAMMAR);
    expect(g.accepts(JSON.stringify({ reasoning: 'r', state: { text: 't', actions: ['a'] } }))).toBe(true);
    expect(g.accepts(JSON.stringify({ reasoning: 'r' }))).toBe(false);
  });
});

describe('replies without reasoning (the --no-reasoning ablation)', () => {
  const outcome = JSON.stringify({ next_state: { text: 'Page: item B01', actions: ['click[buy now]'] }, reward: 0, done: false, valid: true });

  it('parse the outcome alone with reasoning off, with an empty reasoning; the default still needs it', () => {
    const ok = parseStepReply(outcome, { reasoning: false });
    expect(ok).toEqual({ ok: true, corrections: [], value: { reasoning: '', observation: { text: 'Page: item B01', actions: ['click[buy now]'] }, reward: 0, done: false, valid: true } });
    expect(parseStepReply(outcome).ok).toBe(false);
    // A reasoning the model wrote anyway is not kept: the ablation's steps carry none.
    expect(parseStepReply(valid, { reasoning: false })).toMatchObject({ ok: true, value: { reasoning: '' } });
    const reset = parseResetReply(JSON.stringify({ state: { text: 'Page: search', actions: ['search[x]'] } }), { reasoning: false });
    expect(reset).toMatchObject({ ok: true, value: { reasoning: '', observation: { text: 'Page: search' } } });
    expect(parseResetReply(JSON.stringify({ state: { text: 'Page: search', actions: ['search[x]'] } })).ok).toBe(false);
  });

  it('their schemas and grammars leave the reasoning key out', () => {
    expect((JSON.parse(STEP_JSON_SCHEMA_NO_REASONING) as { required: string[] }).required).toEqual(['next_state', 'reward', 'done', 'valid']);
    expect((JSON.parse(RESET_JSON_SCHEMA_NO_REASONING) as { required: string[] }).required).toEqual(['state']);
    expect(responseFormat('json-schema', 'step', false)).toEqual({ type: 'json_object', schema: STEP_JSON_SCHEMA_NO_REASONING });
    expect(responseFormat('grammar', 'reset', false)).toEqual({ type: 'grammar', grammar: RESET_GRAMMAR_NO_REASONING });
    const step = new Ebnf(STEP_GRAMMAR_NO_REASONING);
    expect(step.accepts(outcome)).toBe(true);
    expect(step.accepts(valid)).toBe(false);
    expect(step.accepts(outcome.replace('"reward":0', '"reward":2'))).toBe(false);
    // The grammar with reasoning is unchanged by the split into rules.
    expect(new Ebnf(STEP_GRAMMAR).accepts(outcome)).toBe(false);
    const reset = new Ebnf(RESET_GRAMMAR_NO_REASONING);
    expect(reset.accepts(JSON.stringify({ state: { text: 't', actions: ['a'] } }))).toBe(true);
    expect(reset.accepts(JSON.stringify({ reasoning: 'r', state: { text: 't', actions: ['a'] } }))).toBe(false);
  });
});
