import { describe, expect, it } from 'vitest';
import type { Embedder } from '../src/core/embedding.ts';
import type { Decision } from '../src/policy/input.ts';
import { actionsTakenHere, candidateText, candidateTexts, Featurizer, MATCH_FEATURES, situationText, stateText, type StateContext } from '../src/policy/features.ts';
import { HashedEmbedder } from '../src/policy/hashed-embedder.ts';
import { parseTrainingConfig } from '../src/train/config.ts';
import { evaluate, type EvalActor } from '../src/train/evaluate.ts';
import { runTraining } from '../src/train/loop.ts';
import { prepareRun } from '../src/train/setup.ts';
import { actionSlots, actionTemplate, amountsIn, contentWords, instructionProfile, isOpaqueId, matchFeatures, neutralizeIds, numericBounds } from '../src/policy/matching.ts';

const results = [
  'Page: results for "cat litter" (page 1 of 5, 50 products)',
  '[B04CY8QBR3] Yopiyo Essential Cat Litter - Orthopedic, Reflective | $28.50',
  '[B0VJGJOTW1] Luhelfi Ultra Cat Litter - Durable | $25.33',
].join('\n');
const item = ['Page: item B04CY8QBR3', 'size: [10 lb] [20 lb] [40 lb] (selected: none)', 'color: [red] [blue] (selected: red)'].join('\n');

describe('state and candidate texts', () => {
  it('state text: instruction, the latest actions, then the observation', () => {
    const text = stateText(
      { instruction: 'buy cat litter', history: [{ action: 'a1' }, { action: 'a2' }, { action: 'a3' }, { action: 'a4' }], observation: { text: 'OBS', actions: [] } },
      { maxHistory: 2 },
    );
    expect(text).toBe('Instruction: buy cat litter\nPrevious actions: a3 | a4\nOBS');
    expect(stateText({ instruction: 'x', observation: { text: 'OBS', actions: [] } })).toBe('Instruction: x\nOBS');
    expect(stateText({ instruction: 'x', history: [{ action: 'a' }], observation: { text: 'O', actions: [] } }, { maxHistory: 0 })).toBe('Instruction: x\nO');
  });

  it('candidate text: the element line an action acts on, without its siblings', () => {
    expect(candidateText(results, 'click[B0VJGJOTW1]')).toBe('click[B0VJGJOTW1]\n[B0VJGJOTW1] Luhelfi Ultra Cat Litter - Durable | $25.33');
    expect(candidateText(item, 'click[20 lb]')).toBe('click[20 lb]\nsize: [20 lb] (selected: none)');
    expect(candidateText(item, 'click[blue]')).toBe('click[blue]\ncolor: [blue] (selected: red)');
    expect(candidateText(item, 'click[buy now]')).toBe('click[buy now]');
    expect(candidateText(results, 'search[]')).toBe('search[]');
  });
});

class CountingEmbedder implements Embedder {
  readonly id = 'counting';
  readonly dim = 8;
  calls: string[][] = [];
  private readonly inner = new HashedEmbedder({ dim: 8 });
  embed(texts: readonly string[]): Promise<Float32Array[]> {
    this.calls.push([...texts]);
    return this.inner.embed(texts);
  }
}

describe('Featurizer, text mode (the earlier layout)', () => {
  it('builds one decision per context with candidates in order, through a cache', async () => {
    const embedder = new CountingEmbedder();
    const f = new Featurizer(embedder, { mode: 'text' });
    expect([f.dim, f.stateDim, f.actionDim, f.matchDim]).toEqual([8, 8, 8, 0]);
    const ctx = { instruction: 'buy cat litter', observation: { text: results, actions: ['click[B04CY8QBR3]', 'click[B0VJGJOTW1]'] } };
    const [d] = await f.decisions([ctx], [Float32Array.from([0.5, -0.5])]);
    expect(d?.state).toHaveLength(8);
    expect(d?.candidates).toHaveLength(2);
    expect(Array.from(d?.prior ?? [])).toEqual([0.5, -0.5]);
    const [again] = await f.decisions([ctx, ctx]);
    expect(embedder.calls).toHaveLength(1);
    expect(embedder.calls[0]).toHaveLength(3);
    expect(Array.from(again?.candidates[1] as Float32Array)).toEqual(Array.from(d?.candidates[1] as Float32Array));
    expect(Array.from(d?.candidates[0] as Float32Array)).not.toEqual(Array.from(d?.candidates[1] as Float32Array));
  });

  it('refuses a state without admissible actions, and bad options', async () => {
    const f = new Featurizer(new HashedEmbedder({ dim: 8 }));
    await expect(f.decisions([{ instruction: 'x', observation: { text: 'dead end', actions: [] } }])).rejects.toThrow(/without admissible actions/);
    expect(() => new Featurizer(new HashedEmbedder({ dim: 8 }), { cacheSize: -1 })).toThrow(/got -1/);
    expect(() => new Featurizer(new HashedEmbedder({ dim: 8 }), { conjunctionDim: 1.5 })).toThrow(/conjunctionDim/);
    expect(() => new Featurizer(new HashedEmbedder({ dim: 8 }), { disable: ['nonsense' as 'ids'] })).toThrow(/unknown/);
  });
});

describe('lexical matching helpers', () => {
  it('opaque identifiers: long tokens that switch between letters and digits', () => {
    for (const id of ['B0WE9QSUDS', 'B04CY8QBR3', '3f9a2c1d', 'a1b2c3']) expect(isOpaqueId(id), id).toBe(true);
    for (const word of ['rtx4090', 'mp3', 'covid19', 'shirt', '123456', 'B0WE', 'drawer']) expect(isOpaqueId(word), word).toBe(false);
    expect(neutralizeIds('click[B0WE9QSUDS] then B04CY8QBR3 | $28.50 size 10')).toBe('click[opaqueid] then opaqueid | $28.50 size 10');
  });

  it('match features: one profile per instruction, word features kept per candidate, history recomputed every call', () => {
    const instruction = 'put a clean mug in the coffeemachine';
    const profile = instructionProfile(instruction);
    expect(instructionProfile(instruction)).toBe(profile);
    const candidates = [{ action: 'take mug 1 from countertop 1', text: 'take mug 1 from countertop 1' }, { action: 'go to sinkbasin 1', text: 'go to sinkbasin 1' }];
    const vectors = [Float32Array.of(1, 0), Float32Array.of(0, 1)];
    const at = (name: string): number => MATCH_FEATURES.indexOf(name as (typeof MATCH_FEATURES)[number]);
    const first = matchFeatures(profile, candidates, [], vectors, Float32Array.of(1, 0));
    const again = matchFeatures(profile, candidates, ['take mug 1 from countertop 1'], vectors, Float32Array.of(0, 1));
    // Word features are the same on the second (cached) call; history and similarity follow the new arguments.
    expect(again[0]![at('overlap.coverage')]).toBe(first[0]![at('overlap.coverage')]);
    expect(first[0]![at('overlap.coverage')]).toBeGreaterThan(0);
    expect([first[0]![at('history.taken')], again[0]![at('history.taken')]]).toEqual([0, 1]);
    expect([first[0]![at('similarity.cosine')], again[0]![at('similarity.cosine')]]).toEqual([1, 0]);
    // A fresh profile object (no cache) gives the same word features.
    const fresh = matchFeatures({ ...profile }, candidates, ['take mug 1 from countertop 1'], vectors, Float32Array.of(0, 1));
    expect(Array.from(fresh[0]!)).toEqual(Array.from(again[0]!));
  });

  it('content words, numbers, bounds, templates and slots', () => {
    expect(contentWords('I need a pair of red Shoes that are breathable')).toEqual(['pair', 'red', 'shoe', 'breathable']);
    expect(amountsIn('[B04CY8QBR3] Cat Litter 20 lb | $28.50')).toEqual([28.5]);
    expect(numericBounds('price lower than 40.00 dollars')).toEqual({ upper: 40, lower: null });
    expect(numericBounds('at least 3 and under $12')).toEqual({ upper: 12, lower: 3 });
    expect(numericBounds('look at a pencil under the desklamp')).toEqual({ upper: null, lower: null });
    expect(actionTemplate('click[B0WE9QSUDS]')).toBe('click[<id>]');
    expect(actionTemplate('click[buy now]')).toBe('click[<arg>]');
    expect(actionTemplate('go to drawer 12')).toBe(actionTemplate('go to fridge 1'));
    expect(actionTemplate('take potato 1 from countertop 1')).toBe('take <w> from <w>');
    expect(actionSlots('put potato 1 in/on fridge 1')).toEqual(['potato 1', 'fridge 1']);
    expect(actionSlots('search[red shoes]')).toEqual(['red shoes']);
  });

  it('the situation text leaves out the lines that repeat the instruction', () => {
    const ctx: StateContext = {
      instruction: 'put a clean potato in fridge.',
      history: [{ action: 'go to fridge 1' }],
      observation: { text: 'Your task is to: put a clean potato in fridge.\nYou arrive at fridge 1.', actions: ['look'] },
    };
    expect(situationText(ctx)).toBe('Previous actions: go to fridge 1\nYou arrive at fridge 1.');
  });
});

describe('plain-text actions read the clause that names their arguments', () => {
  const queue = ['Ticket queue (2 open)', '#4796 from lena fox: Help needed [new]', '#4805 from ivo brandt: Question [new]', 'Guide: billing -> finance, bug -> engineering; any ticket on the enterprise plan -> priority desk.'].join('\n');

  it("attaches the coarsest clause with the argument, none of its siblings' and words or numbers of its own; a template whose siblings are not all described keeps bare actions", () => {
    expect(candidateTexts(queue, ['open #4796', 'open #4805', 'route to engineering', 'route to finance'])).toEqual([
      'open #4796\n#4796 from lena fox: Help needed [new]',
      'open #4805\n#4805 from ivo brandt: Question [new]',
      'route to engineering\nbug -> engineering',
      'route to finance\nGuide: billing -> finance',
    ]);
    expect(candidateText(queue, 'open #4805')).toBe('open #4805\n#4805 from ivo brandt: Question [new]');
    // Numbers count as what a clause adds: the fare's times and price.
    const fares = 'Fares from lisbon to dublin: nordair 06:15 to 11:15, $177; skyjet 13:00 to 15:00, $227.';
    expect(candidateTexts(fares, ['open nordair 06:15', 'open skyjet 13:00'])).toEqual(['open nordair 06:15\nFares from lisbon to dublin: nordair 06:15 to 11:15, $177', 'open skyjet 13:00\nskyjet 13:00 to 15:00, $227.']);
    const room = 'You are in the middle of a room. Looking quickly around you, you see a cabinet 1, a countertop 1, a drawer 2.';
    expect(candidateTexts(room, ['go to cabinet 1', 'go to drawer 2'])).toEqual(['go to cabinet 1', 'go to drawer 2']);
    // Bracketed actions read their element line as before.
    expect(candidateTexts(results, ['click[B0VJGJOTW1]'])).toEqual(['click[B0VJGJOTW1]\n[B0VJGJOTW1] Luhelfi Ultra Cat Litter - Durable | $25.33']);
  });

  it("lets the match features tell the instruction's item from its siblings by the line that describes it", async () => {
    const f = new Featurizer(new HashedEmbedder({ dim: 64 }));
    const [d] = await f.decisions([{ instruction: 'triage the ticket from ivo brandt', observation: { text: queue, actions: ['open #4796', 'open #4805'] } }]);
    expect(feature(f, d, 1, 'overlap.coverage')).toBeGreaterThan(feature(f, d, 0, 'overlap.coverage'));
    expect(feature(f, d, 1, 'overlap.isBest')).toBe(1);
    expect(feature(f, d, 0, 'overlap.isBest')).toBe(0);
  });
});

describe('actions taken before in the same state', () => {
  const hall = { text: 'You are in the hall. Exits: north, east.', actions: ['go north', 'go east'] };
  const cellar = { text: 'You are in the cellar. Exits: south.', actions: ['go south'] };
  const yard = { text: 'You are in the yard. Exits: north, east.', actions: ['go north', 'go east', 'take key'] };

  it('are the actions of earlier steps whose state offered the same actions', () => {
    const history = [
      { action: 'go north', observation: hall },
      { action: 'go south', observation: cellar },
      { action: 'go east', observation: yard },
      { action: 'go east' },
    ];
    expect(actionsTakenHere(history, hall)).toEqual(['go north']);
    expect(actionsTakenHere(history, cellar)).toEqual(['go south']);
    expect(actionsTakenHere(history, { text: 'elsewhere', actions: ['go west'] })).toEqual([]);
  });

  it('set the candidate apart from the same action taken in another state (the hashed conjunction block)', async () => {
    const f = new Featurizer(new HashedEmbedder({ dim: 16 }));
    const block = (d: Decision | undefined): number[] => [...(d?.candidates[0] as Float32Array).subarray(f.dim + MATCH_FEATURES.length)];
    // The same earlier action, the same current state text; only where it was taken differs.
    const [here, elsewhere] = await f.decisions([
      { instruction: 'find the key', history: [{ action: 'go north', observation: hall }, { action: 'go south', observation: cellar }], observation: hall },
      { instruction: 'find the key', history: [{ action: 'go north', observation: yard }, { action: 'go south', observation: cellar }], observation: hall },
    ]);
    expect(block(here)).not.toEqual(block(elsewhere));
    expect(feature(f, here, 0, 'history.taken')).toBe(feature(f, elsewhere, 0, 'history.taken'));
  });
});

/** The match feature `name` of candidate `j` of a decision. */
function feature(f: Featurizer, d: Decision | undefined, j: number, name: (typeof MATCH_FEATURES)[number]): number {
  if (!d) throw new Error('no decision');
  return (d.candidates[j] as Float32Array)[f.featureIndex(name)] as number;
}

const shopContext = (ids: [string, string]): StateContext => ({
  instruction: 'i need cat litter that is durable, price lower than 30.00 dollars',
  observation: {
    text: ['Page: results', `[${ids[0]}] Luhelfi Ultra Cat Litter - Durable | $25.33`, `[${ids[1]}] Yopiyo Dog Bed - Orthopedic | $45.00`].join('\n'),
    actions: [`click[${ids[0]}]`, `click[${ids[1]}]`, 'click[next >]'],
  },
});

describe('Featurizer, matching mode', () => {
  const embedder = new HashedEmbedder({ dim: 32 });

  it('dimensions are as documented', () => {
    const f = new Featurizer(embedder);
    expect(f.mode).toBe('matching');
    expect(f.dim).toBe(32);
    expect(f.conjunctionDim).toBe(64);
    expect(f.matchDim).toBe(MATCH_FEATURES.length + 64);
    expect(f.actionDim).toBe(32 + f.matchDim);
    expect(f.stateDim).toBe(2 * 32 + f.matchDim);
    const g = new Featurizer(embedder, { conjunctionDim: 0 });
    expect([g.matchDim, g.actionDim, g.stateDim]).toEqual([MATCH_FEATURES.length, 32 + MATCH_FEATURES.length, 64 + MATCH_FEATURES.length]);
  });

  it('decisions have those dimensions; the state is [instruction | ones | situation]', async () => {
    const f = new Featurizer(embedder);
    const ctx = shopContext(['B04CY8QBR3', 'B0VJGJOTW1']);
    const [d] = await f.decisions([ctx], [Float32Array.from([1, 2, 3])]);
    expect(d?.state).toHaveLength(f.stateDim);
    for (const c of d?.candidates ?? []) expect(c).toHaveLength(f.actionDim);
    expect(Array.from(d?.prior ?? [])).toEqual([1, 2, 3]);
    const [instruction] = await f.embed([ctx.instruction]);
    expect(Array.from((d?.state as Float32Array).subarray(0, 32))).toEqual(Array.from(instruction as Float32Array));
    expect(Array.from((d?.state as Float32Array).subarray(32, 32 + f.matchDim)).every((x) => x === 1)).toBe(true);
  });

  it('the same inputs give the same vectors, in a fresh featurizer too', async () => {
    const ctx = shopContext(['B04CY8QBR3', 'B0VJGJOTW1']);
    const a = (await new Featurizer(embedder).decisions([ctx]))[0];
    const f = new Featurizer(new HashedEmbedder({ dim: 32 }));
    await f.decisions([shopContext(['B0AAAA1111', 'B0BBBB2222'])]);
    const b = (await f.decisions([ctx]))[0];
    expect(Array.from(b?.state as Float32Array)).toEqual(Array.from(a?.state as Float32Array));
    a?.candidates.forEach((c, j) => expect(Array.from(b?.candidates[j] as Float32Array)).toEqual(Array.from(c)));
  });

  it('opaque ids are neutralised: candidates that differ only by their id get identical vectors', async () => {
    const f = new Featurizer(embedder);
    const [a, b] = await f.decisions([shopContext(['B04CY8QBR3', 'B0VJGJOTW1']), shopContext(['B0ZZ9QQ1XY', 'B07LQDASDI'])]);
    expect(Array.from(b?.state as Float32Array)).toEqual(Array.from(a?.state as Float32Array));
    a?.candidates.forEach((c, j) => expect(Array.from(b?.candidates[j] as Float32Array)).toEqual(Array.from(c)));
    // Without neutralisation the ids show.
    const raw = new Featurizer(embedder, { disable: ['ids'], candidateSlot: 'element' });
    const [c, d] = await raw.decisions([shopContext(['B04CY8QBR3', 'B0VJGJOTW1']), shopContext(['B0ZZ9QQ1XY', 'B07LQDASDI'])]);
    expect(Array.from(d?.candidates[0] as Float32Array)).not.toEqual(Array.from(c?.candidates[0] as Float32Array));
  });

  it('overlap features rise with overlap with the instruction', async () => {
    const f = new Featurizer(embedder);
    const ctx: StateContext = {
      instruction: 'put a clean potato in the fridge',
      observation: { text: 'You are in the kitchen.', actions: ['take potato 1 from fridge 1', 'take potato 1 from shelf 1', 'take knife 1 from shelf 1'] },
    };
    const [d] = await f.decisions([ctx]);
    for (const name of ['overlap.action', 'overlap.coverage', 'overlap.count', 'slots.first'] as const) {
      const values = [0, 1, 2].map((j) => feature(f, d, j, name));
      expect(values[0], name).toBeGreaterThanOrEqual(values[1] as number);
      expect(values[1], name).toBeGreaterThanOrEqual(values[2] as number);
      expect(values[0], name).toBeGreaterThan(values[2] as number);
    }
    expect(feature(f, d, 0, 'overlap.isBest')).toBe(1);
    expect(feature(f, d, 2, 'overlap.isBest')).toBe(0);
    expect(feature(f, d, 2, 'slots.someUnmatched')).toBe(1);
  });

  it('numbers: a stated amount within the instruction\'s bound, or over it', async () => {
    const f = new Featurizer(embedder);
    const [d] = await f.decisions([shopContext(['B04CY8QBR3', 'B0VJGJOTW1'])]);
    const c = d;
    expect([feature(f, c, 0, 'numbers.withinBound'), feature(f, c, 0, 'numbers.violatesBound')]).toEqual([1, 0]);
    expect([feature(f, c, 1, 'numbers.withinBound'), feature(f, c, 1, 'numbers.violatesBound')]).toEqual([0, 1]);
    expect([feature(f, c, 2, 'numbers.withinBound'), feature(f, c, 2, 'numbers.violatesBound')]).toEqual([0, 0]);
    // The cat litter covers more of the instruction than the dog bed.
    expect(feature(f, c, 0, 'overlap.coverage')).toBeGreaterThan(feature(f, c, 1, 'overlap.coverage'));
  });

  it('position features differ by rank within the candidates of one template', async () => {
    const f = new Featurizer(embedder);
    const ctx: StateContext = { instruction: 'find a mug', observation: { text: 'A room.', actions: ['go to desk 1', 'look', 'go to shelf 1', 'go to shelf 2'] } };
    const [d] = await f.decisions([ctx]);
    const c = d;
    expect([0, 2, 3].map((j) => feature(f, c, j, 'position.rank'))).toEqual([0, 0.5, 1]);
    expect([0, 2, 3].map((j) => feature(f, c, j, 'position.isFirst'))).toEqual([1, 0, 0]);
    expect([0, 2, 3].map((j) => feature(f, c, j, 'position.isLast'))).toEqual([0, 0, 1]);
    expect(feature(f, c, 1, 'position.isFirst')).toBe(1); // `look` is alone in its template
    expect(feature(f, c, 0, 'position.inverseRank')).toBeGreaterThan(feature(f, c, 2, 'position.inverseRank'));
  });

  it('history features mark an action taken earlier in the episode, and how often', async () => {
    const f = new Featurizer(embedder);
    const base = { instruction: 'find a mug', observation: { text: 'A room.', actions: ['go to desk 1', 'go to shelf 1', 'look'] } };
    const [fresh, repeated] = await f.decisions([
      base,
      { ...base, history: [{ action: 'go to shelf 1' }, { action: 'look' }, { action: 'go to shelf 1' }] },
    ]);
    const a = fresh;
    const b = repeated;
    expect([0, 1, 2].map((j) => feature(f, a, j, 'history.taken'))).toEqual([0, 0, 0]);
    expect([0, 1, 2].map((j) => feature(f, b, j, 'history.taken'))).toEqual([0, 1, 1]);
    expect(feature(f, b, 1, 'history.count')).toBeGreaterThan(feature(f, b, 2, 'history.count'));
    expect([0, 1, 2].map((j) => feature(f, b, j, 'history.isLast'))).toEqual([0, 1, 0]);
    expect(feature(f, b, 1, 'history.recency')).toBe(1);
    expect(feature(f, b, 2, 'history.recency')).toBe(0.5);
  });

  it('disabled groups are zeros in place; the dimensions stay', async () => {
    const f = new Featurizer(embedder, { disable: ['position', 'instruction', 'conjunctions'] });
    const [d] = await f.decisions([shopContext(['B04CY8QBR3', 'B0VJGJOTW1'])]);
    expect(d?.state).toHaveLength(f.stateDim);
    expect(Array.from((d?.state as Float32Array).subarray(0, 32)).every((x) => x === 0)).toBe(true);
    expect(feature(f, d, 0, 'position.isFirst')).toBe(0);
    const conj = (d?.candidates[0] as Float32Array).subarray(32 + MATCH_FEATURES.length);
    expect(conj).toHaveLength(64);
    expect(Array.from(conj).every((x) => x === 0)).toBe(true);
  });

  it('any embedder fills the slots: its vectors are used as they are', async () => {
    const counting = new CountingEmbedder();
    const f = new Featurizer(counting);
    const [d] = await f.decisions([shopContext(['B04CY8QBR3', 'B0VJGJOTW1'])]);
    expect(d?.state).toHaveLength(2 * 8 + f.matchDim);
    const texts = counting.calls.flat();
    expect(texts.some((t) => /B04CY8QBR3/.test(t))).toBe(false);
    expect(texts).toContain('click[opaqueid]');
  });
});

describe('generalization to unseen tasks (shop, behaviour cloning)', () => {
  /** SFT on 60 expert episodes, then greedy success on 30 held-out test tasks and 30 training tasks. */
  async function cloneAndEvaluate(layout: 'matching' | 'text'): Promise<{ heldOut: number; train: number }> {
    const config = parseTrainingConfig({
      env: 'shop',
      mode: 'sft',
      seed: 0,
      offline: { expertEpisodes: 60, noisyEpisodes: 0, extraTasks: 0 },
      sft: { epochs: 20 },
      evalEpisodes: 30,
      policy: { hiddenDim: 16, embeddingDim: 64 },
    });
    const run = await prepareRun(config);
    if (layout === 'text') run.deps.featurizer = new Featurizer(new HashedEmbedder({ dim: 64 }), { mode: 'text' });
    const result = await runTraining(config, run.deps);
    const actor: EvalActor = { choose: async (contexts) => (await result.agent.choose(contexts, { greedy: true })).map((c) => c.action) };
    const heldOut = await evaluate(actor, run.deps.spec, run.evalTasks);
    const train = await evaluate(actor, run.deps.spec, run.deps.offline.tasks.slice(0, 30));
    result.trainer.dispose();
    run.dispose();
    return { heldOut: heldOut.success.mean, train: train.success.mean };
  }

  // The text layout memorizes which product ids were right, and none recur on held-out tasks.
  it('the matching layout succeeds on held-out tasks where the text layout (the memorizing baseline) does not', async () => {
    const matching = await cloneAndEvaluate('matching');
    const text = await cloneAndEvaluate('text');
    expect(matching.heldOut).toBeGreaterThanOrEqual(0.2);
    expect(text.heldOut).toBeLessThanOrEqual(0.1);
    expect(matching.heldOut - text.heldOut).toBeGreaterThanOrEqual(0.15);
  }, 120_000);
});
