import { describe, expect, it } from 'vitest';
import { type Task, agentView } from '../src/core/types.ts';
import { LLMTaskGenerator, RecombinationTaskGenerator, parseGeneratorReply, recombineGoals } from '../src/curriculum/generator.ts';
import { environmentContext, generatorMessages } from '../src/curriculum/prompt.ts';
import {
  HIDDEN_GOAL_FIELDS,
  TaskValidator,
  WORLD_GOAL_FIELDS,
  canonicalInstruction,
  canonicalJson,
  hiddenFieldLeak,
  hiddenGoalFields,
  instructionTokens,
  jaccard,
  repairGoal,
  rewriteFromParent,
  taskGeneration,
} from '../src/curriculum/validation.ts';
import { loadEnvModule } from '../src/cli/module-host.ts';
import { registerEnvSpec, unregisterEnvSpec } from '../src/envs/registry.ts';
import { Rng } from '../src/core/rng.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import type { HouseholdGoal } from '../src/envs/household/index.ts';
import { type ShopGoal, shopInstruction } from '../src/envs/shop/index.ts';
import { LLMConfigError, LLMRequestError } from '../src/llm/errors.ts';
import { ScriptedEngine } from './fixtures/scripted-engine.ts';

const shopSeeds = getEnvSpec('shop').tasks({ split: 'train', count: 20, seed: 3 });
const householdSeeds = getEnvSpec('household').tasks({ split: 'train', count: 20, seed: 3 });

function expectValidChildren(tasks: readonly Task[], seeds: readonly Task[]): void {
  const ids = new Set(seeds.map((t) => t.id));
  for (const t of tasks) {
    expect(t.origin).toBe('generated');
    expect(ids.has(t.parentId as string)).toBe(true);
    expect(taskGeneration(t)).toBe(1);
    expect(getEnvSpec(t.env).validateTask(t)).toEqual({ ok: true });
    expect(t.instruction).toBe(canonicalInstruction(t.env, t.goal));
    // The instruction (what the agent reads) carries no hidden goal field; the agent's view has no goal.
    expect(hiddenFieldLeak(t.env, t.instruction, t.goal)).toBeNull();
    expect(agentView(t)).not.toHaveProperty('goal');
    for (const s of seeds) expect(jaccard(instructionTokens(t.instruction), instructionTokens(s.instruction))).toBeLessThan(0.9);
  }
  expect(new Set(tasks.map((t) => canonicalJson(t.goal))).size).toBe(tasks.length);
  expect(new Set(tasks.map((t) => t.id)).size).toBe(tasks.length);
}

describe('validation helpers', () => {
  it('jaccard, tokens, canonical JSON, generation', () => {
    expect(jaccard(new Set(['a', 'b']), new Set(['b', 'c']))).toBeCloseTo(1 / 3);
    expect(jaccard(new Set(), new Set())).toBe(1);
    expect([...instructionTokens('Price lower than 45.00 dollars!')]).toEqual(['price', 'lower', 'than', '~17', 'dollars']);
    expect(instructionTokens('44.50')).toEqual(instructionTokens('45'));
    expect(instructionTokens('30')).not.toEqual(instructionTokens('45'));
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: 3 }] })).toBe('{"a":[{"c":3,"d":2}],"b":1}');
    expect(taskGeneration(shopSeeds[0] as Task)).toBe(0);
    expect(taskGeneration({ ...(shopSeeds[0] as Task), origin: 'generated', generation: 3 })).toBe(3);
    expect(taskGeneration({ ...(shopSeeds[0] as Task), origin: 'generated' })).toBe(1);
  });

  it('repairs the shop target and the household look-at receptacle', () => {
    const seed = shopSeeds[0] as Task;
    const goal = { ...(seed.goal as ShopGoal), targetId: 'B0NOTREAL00' };
    expect((repairGoal('shop', goal) as ShopGoal).targetId).toBe((seed.goal as ShopGoal).targetId);
    expect(repairGoal('household', { layoutSeed: 2, type: 'look_at_obj_in_light', object: 'mug', receptacle: 'desk' })).toEqual({ layoutSeed: 2, type: 'look_at_obj_in_light', object: 'mug' });
  });

  it('TaskValidator: rejects malformed, duplicate, near-duplicate and infeasible candidates with reasons', () => {
    const seed = shopSeeds[0] as Task;
    const g = seed.goal as ShopGoal;
    const v = new TaskValidator(shopSeeds);
    expect(v.check({ goal: 'x' }, seed)).toMatchObject({ ok: false, kind: 'malformed' });
    expect(v.check(null as unknown as { goal: unknown }, seed)).toMatchObject({ ok: false, kind: 'malformed' });
    expect(v.check({ goal: g }, seed)).toMatchObject({ ok: false, kind: 'duplicate' });
    expect(v.check({ goal: { ...g, maxPrice: g.maxPrice - 0.5 } }, seed)).toMatchObject({ ok: false, kind: 'near-duplicate' });
    const impossible = v.check({ goal: { ...g, maxPrice: 0.01 } }, seed);
    expect(impossible).toMatchObject({ ok: false, kind: 'invalid' });
    expect(!impossible.ok && impossible.reason).toMatch(/costs 0.01 dollars or less/);
    expect(v.check({ goal: { ...g, productType: 'spaceship' } }, seed)).toMatchObject({ ok: false, kind: 'invalid' });
    const cheaper = v.check({ goal: { ...g, maxPrice: Math.round(g.maxPrice * 0.8) } }, seed);
    expect(cheaper).toMatchObject({ ok: true, task: { env: 'shop', split: 'train', origin: 'generated', parentId: seed.id } });
    if (cheaper.ok) expect(v.check({ goal: cheaper.task.goal }, seed)).toMatchObject({ ok: false, kind: 'duplicate' });
  });
});

describe('generated tasks keep their parent\'s world', () => {
  it('rejects a child in another world, and carries the root task through generations', async () => {
    expect(WORLD_GOAL_FIELDS).toEqual({ shop: ['catalogueSeed'], household: ['layoutSeed'] });
    const home = householdSeeds[0] as Task;
    const hg = home.goal as HouseholdGoal;
    const other = householdSeeds.find((t) => (t.goal as HouseholdGoal).layoutSeed !== hg.layoutSeed && (t.goal as HouseholdGoal).type !== hg.type) as Task;
    const v = new TaskValidator(householdSeeds);
    const moved = v.check({ goal: { ...(other.goal as HouseholdGoal) } }, home);
    expect(moved).toMatchObject({ ok: false, kind: 'invalid' });
    expect(!moved.ok && moved.reason).toMatch(/keeps its parent's world: layoutSeed is \d+, the parent's \d+/);
    // Recombined children stay in their parent's room and name their root task.
    const first = await new RecombinationTaskGenerator({ seed: 5 }).generate(householdSeeds, 6);
    expect(first.length).toBeGreaterThan(0);
    for (const c of first) {
      expect(c.rootId).toBe(c.parentId);
      const parent = householdSeeds.find((s) => s.id === c.parentId) as Task;
      expect((c.goal as HouseholdGoal).layoutSeed).toBe((parent.goal as HouseholdGoal).layoutSeed);
      expect(agentView(c).rootId).toBe(c.parentId);
    }
    const second = await new RecombinationTaskGenerator({ seed: 6 }).generate(first, 4);
    expect(second.length).toBeGreaterThan(0);
    for (const c of second) {
      const parent = first.find((s) => s.id === c.parentId) as Task;
      expect(c.generation).toBe(2);
      expect(c.rootId).toBe(parent.rootId);
    }
    // Seed tasks have no root of their own.
    expect(agentView(home)).not.toHaveProperty('rootId');
    const shop = shopSeeds[0] as Task;
    const sv = new TaskValidator(shopSeeds);
    const elsewhere = sv.check({ goal: { ...(shop.goal as ShopGoal), catalogueSeed: (shop.goal as ShopGoal).catalogueSeed + 1, maxPrice: Math.round((shop.goal as ShopGoal).maxPrice * 0.8) } }, shop);
    expect(elsewhere).toMatchObject({ ok: false, kind: 'invalid' });
    expect(!elsewhere.ok && elsewhere.reason).toMatch(/keeps its parent's world: catalogueSeed/);
  });
});

describe('hidden goal fields stay out of instructions', () => {
  it('hiddenGoalFields: the declared fields, and any key ending in id or seed as a word', () => {
    const shop = (shopSeeds[0] as Task).goal as ShopGoal;
    expect(hiddenGoalFields('shop', shop).map((f) => f.name).sort()).toEqual(['catalogueSeed', 'targetId']);
    const home = (householdSeeds[0] as Task).goal as HouseholdGoal;
    expect(hiddenGoalFields('household', home)).toEqual([{ name: 'layoutSeed', value: home.layoutSeed }]);
    expect(hiddenGoalFields('other', { id: 1, roomSeed: 2, item_id: 'x', liquid: 'water', humid: true, paid: 3 }).map((f) => f.name)).toEqual(['id', 'roomSeed', 'item_id']);
    expect(hiddenGoalFields('shop', 'not an object')).toEqual([]);
    expect(HIDDEN_GOAL_FIELDS).toEqual({ shop: ['targetId', 'catalogueSeed'], household: ['layoutSeed'] });
  });

  it('hiddenFieldLeak: a field named in any spelling, or its value, in the instruction', () => {
    const shop = { ...((shopSeeds[0] as Task).goal as ShopGoal), targetId: 'B0WE9QSUDS', catalogueSeed: 0 };
    const ok = shopInstruction(shop);
    expect(hiddenFieldLeak('shop', ok, shop)).toBeNull();
    expect(hiddenFieldLeak('shop', `${ok} (product b0we9qsuds)`, shop)).toMatch(/value of the goal's hidden field targetId/);
    expect(hiddenFieldLeak('shop', `${ok}, targetId B0XXXXXXXX`, shop)).toMatch(/names the goal's hidden field targetId/);
    expect(hiddenFieldLeak('shop', `${ok}, target id: anything`, shop)).toMatch(/hidden field targetId/);
    expect(hiddenFieldLeak('shop', `${ok}, from catalogue_seed 0`, shop)).toMatch(/hidden field catalogueSeed/);
    // A small seed value is not a leak by itself ("size 0"); a word merely containing the value is not either.
    expect(hiddenFieldLeak('shop', 'i need a hat, size 0, price lower than 10.00 dollars', shop)).toBeNull();
    expect(hiddenFieldLeak('shop', 'i need xb0we9qsuds', shop)).toBeNull();
    const home = { layoutSeed: 1505148700, type: 'pick_and_place', object: 'mug', receptacle: 'desk' };
    expect(hiddenFieldLeak('household', 'put a mug in desk.', home)).toBeNull();
    expect(hiddenFieldLeak('household', 'put a mug in desk of home 1505148700.', home)).toMatch(/value of the goal's hidden field layoutSeed/);
    expect(hiddenFieldLeak('household', 'put a mug in desk (layout seed 3).', home)).toMatch(/names the goal's hidden field layoutSeed/);
    expect(hiddenFieldLeak('household', 'put a mug in desk, LayoutSeed=3.', home)).toMatch(/layoutSeed/);
    // A price is not a seed: 1505148700.50 is not the whole number 1505148700.
    expect(hiddenFieldLeak('household', 'pay 1505148700.50 dollars', home)).toBeNull();
  });

  it('an instruction the generator wrote with hidden fields is dropped: the task gets the environment\'s own', async () => {
    const seed = shopSeeds[0] as Task;
    const g = seed.goal as ShopGoal;
    const home = householdSeeds[0] as Task;
    const hg = home.goal as HouseholdGoal;
    const shopGoal = { ...g, attributes: g.attributes.slice(0, 1), maxPrice: Math.round(g.maxPrice * 0.8) };
    const v = new TaskValidator([...shopSeeds, ...householdSeeds]);
    const shopVerdict = v.check({ instruction: `buy product ${g.targetId} (targetId ${g.targetId}, catalogueSeed ${g.catalogueSeed})`, goal: shopGoal }, seed);
    expect(shopVerdict.ok).toBe(true);
    if (shopVerdict.ok) {
      expect(shopVerdict.task.instruction).toBe(canonicalInstruction('shop', shopVerdict.task.goal));
      expect(shopVerdict.task.instruction).not.toMatch(/target|catalogue|seed/i);
      expect(shopVerdict.task.instruction.toLowerCase()).not.toContain((shopVerdict.task.goal as ShopGoal).targetId.toLowerCase());
      expect(JSON.stringify(agentView(shopVerdict.task))).not.toContain((shopVerdict.task.goal as ShopGoal).targetId);
    }
    const other = hg.type === 'look_at_obj_in_light' ? { layoutSeed: hg.layoutSeed, type: 'look_at_obj_in_light', object: hg.object } : { ...hg };
    const candidates = [
      { ...other, type: 'pick_and_place', receptacle: 'countertop' },
      { ...other, type: 'clean_and_place', receptacle: 'countertop' },
      { ...other, type: 'look_at_obj_in_light', receptacle: undefined },
    ];
    let accepted = 0;
    for (const goal of candidates) {
      const verdict = v.check({ instruction: `in layout ${hg.layoutSeed} (layoutSeed ${hg.layoutSeed}) do it`, goal }, home);
      if (!verdict.ok) continue;
      accepted++;
      expect(verdict.task.instruction).toBe(canonicalInstruction('household', verdict.task.goal));
      expect(verdict.task.instruction).not.toContain(String(hg.layoutSeed));
      expect(verdict.task.instruction).not.toMatch(/layout|seed/i);
    }
    expect(accepted).toBeGreaterThan(0);
  });
});

describe('RecombinationTaskGenerator (no LLM)', () => {
  it('recombines shop goal attributes into new valid tasks', async () => {
    const gen = new RecombinationTaskGenerator({ seed: 1 });
    const report = await gen.generateWithReport(shopSeeds, 10);
    expect(report.tasks).toHaveLength(10);
    expectValidChildren(report.tasks, shopSeeds);
    expect(report.candidates).toBeGreaterThanOrEqual(10);
    expect(report.rejected.every((r) => r.reason.length > 0)).toBe(true);
  });

  it('recombines household goals within the parent home', async () => {
    const tasks = await new RecombinationTaskGenerator({ seed: 2 }).generate(householdSeeds, 8);
    expect(tasks).toHaveLength(8);
    expectValidChildren(tasks, householdSeeds);
    for (const t of tasks) {
      const parent = householdSeeds.find((s) => s.id === t.parentId) as Task;
      expect((t.goal as { layoutSeed: number }).layoutSeed).toBe((parent.goal as { layoutSeed: number }).layoutSeed);
    }
  });

  it('is deterministic for a seed, and returns fewer when little can be recombined', async () => {
    const a = await new RecombinationTaskGenerator({ seed: 5 }).generate(shopSeeds, 4);
    const b = await new RecombinationTaskGenerator({ seed: 5 }).generate(shopSeeds, 4);
    expect(a).toEqual(b);
    expect(await new RecombinationTaskGenerator().generate(shopSeeds.slice(0, 1), 3)).toEqual([]);
    expect(await new RecombinationTaskGenerator().generate(shopSeeds, 0)).toEqual([]);
  });

  it('its saved state carries the stream over: a restored generator continues as the original does', async () => {
    const original = new RecombinationTaskGenerator({ seed: 5 });
    await original.generate(shopSeeds, 3);
    const state = JSON.parse(JSON.stringify(original.saveState()));
    const restored = new RecombinationTaskGenerator({ seed: 5 });
    restored.restoreState(state);
    const next = await original.generate(shopSeeds, 4);
    expect(await restored.generate(shopSeeds, 4)).toEqual(next);
    // Without the state, a fresh generator starts over: its tasks differ from the continuation.
    expect(await new RecombinationTaskGenerator({ seed: 5 }).generate(shopSeeds, 4)).not.toEqual(next);
    expect(() => restored.restoreState({ rng: [1, 2] })).toThrow(/four 32-bit/);
    expect(() => restored.restoreState('x')).toThrow(/not a recombination generator state/);
  });

  it('recombineGoals keeps pinned fields and adds partner attributes', () => {
    const rng = new Rng(1);
    const parent = { catalogueSeed: 0, productType: 'x', category: 'c', targetId: 't', attributes: ['a'], options: { size: 's' }, maxPrice: 30 };
    const partner = { catalogueSeed: 9, productType: 'y', category: 'd', targetId: 'u', attributes: ['b'], options: { size: 'm' }, maxPrice: 20 };
    for (let i = 0; i < 20; i++) {
      const g = recombineGoals('shop', parent, partner, rng);
      expect(g).toMatchObject({ catalogueSeed: 0, productType: 'x', category: 'c', targetId: 't' });
      expect((g.attributes as string[])[0]).toBe('a');
      expect([20, 30]).toContain(g.maxPrice);
    }
  });

  it('checks its arguments', async () => {
    const gen = new RecombinationTaskGenerator();
    await expect(gen.generate(shopSeeds, -1)).rejects.toThrow(/n must be an integer >= 0, got -1/);
    await expect(gen.generate([], 2)).rejects.toThrow(/at least one seed task/);
    expect(() => new RecombinationTaskGenerator({ attemptsPerTask: 0 })).toThrow(/got 0/);
  });
});

describe("a user's module: generated tasks get the parent's instruction with the new values", () => {
  const parent = (goal: Record<string, unknown>, instruction: string): Task => ({ id: 'p', env: 'library', instruction, goal: goal as Task['goal'], split: 'train', origin: 'seed' });

  it('rewriteFromParent: quoted values replaced (swaps too); unquoted fields keep the parent\'s; what cannot be written is refused', () => {
    const p = parent({ genre: 'fantasy', author: 'ada lane', layout: 12345 }, 'borrow the fantasy book by ada lane');
    expect(rewriteFromParent(p, { genre: 'poetry', author: 'ada lane', layout: 999 })).toEqual({ instruction: 'borrow the poetry book by ada lane', goal: { genre: 'poetry', author: 'ada lane', layout: 12345 } });
    const swap = parent({ from: 'red', to: 'blue', n: 3 }, 'paint 3 walls from red to blue');
    expect(rewriteFromParent(swap, { from: 'blue', to: 'red', n: 4 })).toEqual({ instruction: 'paint 4 walls from blue to red', goal: { from: 'blue', to: 'red', n: 4 } });
    expect(rewriteFromParent(parent({ items: ['salt', 'rice'] }, 'buy salt and rice'), { items: ['salt', 'beans'] })).toEqual({ reason: expect.stringMatching(/cannot write the instruction for the new items/) });
    expect(rewriteFromParent(parent({ genre: 'fantasy' }, 'a fantasy book'), {})).toEqual({ reason: 'the goal drops genre, which the instruction states' });
  });

  it('the recombination generator makes tasks for the example module, each accepted by its validateTask, instruction matching goal', async () => {
    const m = loadEnvModule('src/envs/example/library.ts');
    registerEnvSpec(m.spec);
    try {
      const seeds = m.spec.tasks({ split: 'train', count: 20, seed: 3 });
      const report = await new RecombinationTaskGenerator({ seed: 1 }).generateWithReport(seeds, 6);
      expect(report.tasks.length).toBeGreaterThan(0);
      const layouts = new Map(seeds.map((t) => [t.id, (t.goal as { layout: number }).layout]));
      for (const t of report.tasks) {
        const goal = t.goal as { genre: string; author: string; layout: number };
        expect(t.instruction).toBe(`borrow the ${goal.genre} book by ${goal.author}`);
        expect(m.spec.validateTask(t)).toEqual({ ok: true });
        // The layout is never said, so it stays the parent's: the child lives in its parent's library.
        expect(goal.layout).toBe(layouts.get(t.parentId as string));
      }
    } finally {
      unregisterEnvSpec(m.spec);
      await m.dispose();
    }
  });
});

describe('generator prompt', () => {
  it('states the task, its environment context and the three requirements (snapshot)', () => {
    const messages = generatorMessages(shopSeeds[0] as Task, 3);
    expect(messages[1]?.content).toMatchSnapshot();
    expect(messages[1]?.content).toMatch(/harder than the original, but still feasible/);
    expect(messages[1]?.content).toMatch(/meaningfully different/);
    expect(messages[1]?.content).toMatch(/realistic/);
    expect(messages[1]?.content).toContain('The agent reads only the instruction: never put targetId or catalogueSeed (or their values) in it.');
    expect(generatorMessages(householdSeeds[0] as Task, 1)[1]?.content).toContain('never put layoutSeed (or their values) in it.');
    expect(environmentContext(householdSeeds[0] as Task)).toMatch(/Object types in this home: .*\nReceptacle types in this home: /);
    expect(() => generatorMessages(shopSeeds[0] as Task, 0)).toThrow(/got 0/);
  });

  it('parses replies leniently but never throws', () => {
    expect(parseGeneratorReply('{"tasks": [{"instruction": "x", "goal": {}}]}')).toEqual([{ instruction: 'x', goal: {} }]);
    expect(parseGeneratorReply('[{"goal": 1}]')).toEqual([{ goal: 1 }]);
    expect(parseGeneratorReply('Here: {"tasks": []} done')).toEqual([]);
    expect(parseGeneratorReply('nothing')).toBeNull();
    expect(parseGeneratorReply('{"tasks": 3}')).toBeNull();
    expect(parseGeneratorReply('{"tasks": [3]}')).toEqual([{ goal: 3 }]);
  });
});

describe('LLMTaskGenerator (scripted engine)', () => {
  const seed = shopSeeds[0] as Task;
  const g = seed.goal as ShopGoal;
  /** What a model might write: a good variation, a near-copy, an infeasible one, a malformed one. */
  const reply = JSON.stringify({
    tasks: [
      { instruction: 'i need cheaper cat litter', goal: { ...g, attributes: g.attributes.slice(0, 1), maxPrice: Math.round(g.maxPrice * 0.9) } },
      { instruction: seed.instruction, goal: g },
      { instruction: 'a spaceship', goal: { ...g, productType: 'spaceship' } },
      { instruction: 'no goal' },
    ],
  });

  it('validates each candidate and keeps only the good ones, with parent and generation', async () => {
    const engine = new ScriptedEngine({ chat: ['not json at all', reply] });
    const gen = new LLMTaskGenerator(engine, { perSeed: 4, model: 'chat' });
    const report = await gen.generateWithReport([seed], 2);
    // WebLLM compiles the schema of every json_object request (and fails without one).
    const format = engine.requests[0]?.response_format as { type: string; schema?: string };
    expect(format.type).toBe('json_object');
    const schema = JSON.parse(format.schema ?? 'null') as { required: string[]; properties: { tasks: { maxItems: number; items: { required: string[] } } } };
    expect(schema.required).toEqual(['tasks']);
    expect(schema.properties.tasks.maxItems).toBe(2);
    expect(schema.properties.tasks.items.required).toEqual(['instruction', 'goal']);
    expect(engine.requests[0]?.messages[1]?.content).toContain(seed.instruction);
    expect(report.rejected.map((r) => r.kind)).toEqual(expect.arrayContaining(['unparsable-reply', 'duplicate', 'invalid', 'malformed']));
    expect(report.tasks.length).toBeGreaterThanOrEqual(1);
    for (const t of report.tasks) {
      expect(t.parentId).toBe(seed.id);
      expect(taskGeneration(t)).toBe(1);
      expect(getEnvSpec('shop').validateTask(t)).toEqual({ ok: true });
      // The instruction is rewritten from the goal, so it matches what is rewarded.
      expect(t.instruction).toBe(canonicalInstruction('shop', t.goal));
    }
    expect(gen.stats.requests).toBeLessThanOrEqual(3);
    expect(gen.stats.unparsableReplies).toBe(1);
    expect(gen.stats.promptTokens).toBeGreaterThan(0);
  });

  it('stops after its request budget when nothing usable comes back', async () => {
    const engine = new ScriptedEngine({ chat: ['{"tasks": []}'] });
    const gen = new LLMTaskGenerator(engine, { perSeed: 2, maxRequestsFactor: 2 });
    expect(await gen.generate(shopSeeds.slice(0, 3), 4)).toEqual([]);
    expect(engine.requests).toHaveLength(4);
    expect(engine.requests.map((r) => r.messages[1]?.content).filter((c) => String(c).includes((shopSeeds[1] as Task).instruction))).toHaveLength(1);
  });

  it('wraps engine failures and checks its settings', async () => {
    const engine = new ScriptedEngine({
      chat: () => {
        throw new Error('boom');
      },
    });
    await expect(new LLMTaskGenerator(engine).generate([seed], 1)).rejects.toThrow(LLMRequestError);
    expect(() => new LLMTaskGenerator(engine, { perSeed: 0 })).toThrow(LLMConfigError);
    expect(() => new LLMTaskGenerator(engine, { temperature: -1 })).toThrow(/got -1/);
  });
});
