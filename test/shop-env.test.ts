import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import { EnvironmentStateError, InvalidTaskError, type Task } from '../src/core/types.ts';
import {
  generateCatalogue,
  generateShopTasks,
  satisfiesGoal,
  SHOP_MAX_STEPS,
  ShopEnv,
  ShopGoalSchema,
  type ShopGoal,
} from '../src/envs/shop/index.ts';

const tasks = generateShopTasks({ split: 'train', count: 40, seed: 11 });
// A task whose target has both a size and a colour, to exercise option groups.
const task = tasks.find((t) => {
  const g = ShopGoalSchema.parse(t.goal);
  return g.options.size !== undefined && g.options.color !== undefined;
});
if (!task) throw new Error('no task with two option kinds');
const goal: ShopGoal = ShopGoalSchema.parse(task.goal);
const catalogue = generateCatalogue(0);
const target = catalogue.byId.get(goal.targetId);
if (!target) throw new Error('target missing');

function firstLine(text: string): string {
  return text.split('\n')[0] ?? '';
}

/** Resets and lets the expert search and open a goal-satisfying product; returns its id. */
function openItem(env: ShopEnv): string {
  let obs = env.reset(task as Task);
  for (let i = 0; i < 8 && !obs.text.includes('Page: item'); i++) obs = env.step(env.expertAction()).observation;
  const id = /Page: item (B0[0-9A-Z]{8})/.exec(obs.text)?.[1];
  if (!id) throw new Error(`the expert did not open an item: ${obs.text}`);
  return id;
}

describe('ShopEnv pages', () => {
  it('starts on the search page with three instruction-derived queries', () => {
    const env = new ShopEnv();
    const obs = env.reset(task);
    expect(env.name).toBe('shop');
    expect(env.maxSteps).toBe(15);
    expect(SHOP_MAX_STEPS).toBe(15);
    expect(firstLine(obs.text)).toBe(`Instruction: ${task.instruction}`);
    expect(obs.text).toContain('Page: search');
    expect(obs.actions).toHaveLength(3);
    for (const a of obs.actions) expect(a).toMatch(/^search\[.+\]$/);
    expect(obs.actions[2]).toBe(`search[${goal.productType}]`);
  });

  it('lists ten results per page with paging and item links', () => {
    const env = new ShopEnv();
    env.reset(task);
    const r = env.step('search[dog]');
    expect(r.info.valid).toBe(true);
    expect(r.reward).toBe(0);
    expect(r.done).toBe(false);
    const lines = r.observation.text.split('\n');
    expect(lines[0]).toBe(`Instruction: ${task.instruction}`);
    expect(lines[1]).toMatch(/^Page: results for "dog" \(page 1 of 5, 50 products\)$/);
    const items = lines.filter((l) => /^\[B0[0-9A-Z]{8}\] .+ \| \$\d+\.\d\d$/.test(l));
    expect(items).toHaveLength(10);
    const clicks = r.observation.actions.filter((a) => /^click\[B0/.test(a));
    expect(clicks).toHaveLength(10);
    expect(r.observation.actions).toContain('click[next >]');
    expect(r.observation.actions).not.toContain('click[< prev]');
    expect(r.observation.actions).toContain('click[back to search]');

    const page2 = env.step('click[next >]');
    expect(page2.observation.text).toContain('(page 2 of 5, 50 products)');
    expect(page2.observation.actions).toContain('click[< prev]');
    const page2Ids = page2.observation.actions.filter((a) => /^click\[B0/.test(a));
    expect(page2Ids.some((a) => clicks.includes(a))).toBe(false);
    for (let i = 0; i < 3; i++) env.step('click[next >]');
    const last = env.step('click[< prev]');
    expect(last.observation.text).toContain('(page 4 of 5');
    const back = env.step('click[back to search]');
    expect(back.observation.text).toContain('Page: search');
  });

  it('shows an item with option groups, selection, description, features and navigation', () => {
    const env = new ShopEnv();
    const id = openItem(env);
    const product = catalogue.byId.get(id);
    if (!product) throw new Error('product missing');
    let obs = env.observation();
    expect(firstLine(obs.text)).toBe(`Instruction: ${task.instruction}`);
    expect(obs.text).toContain(`Page: item ${id}`);
    expect(obs.text).toContain(product.title);
    expect(obs.text).toContain(`Price: $${product.price.toFixed(2)}`);
    expect(obs.text).toContain(`size: ${(product.options.size ?? []).map((v) => `[${v}]`).join(' ')} (selected: none)`);
    expect(obs.actions.slice(-5)).toEqual(['click[description]', 'click[features]', 'click[< prev]', 'click[back to search]', 'click[buy now]']);
    for (const v of [...(product.options.size ?? []), ...(product.options.color ?? [])]) expect(obs.actions).toContain(`click[${v}]`);

    const sizes = product.options.size ?? [];
    const [s1, s2] = [sizes[0], sizes[1]];
    if (s1 === undefined || s2 === undefined) throw new Error('need two sizes');
    env.step(`click[${s1}]`);
    obs = env.step(`click[${s2}]`).observation; // replaces the selection in that group
    expect(obs.text).toContain(`(selected: ${s2})`);
    expect(obs.text).not.toContain(`(selected: ${s1})`);

    const desc = env.step('click[description]');
    expect(desc.observation.text).toContain(`Page: description of ${id}`);
    expect(desc.observation.text).toContain(product.description);
    expect(desc.observation.actions).toEqual(['click[< prev]']);
    const item = env.step('click[< prev]');
    expect(item.observation.text).toContain(`(selected: ${s2})`); // selection kept
    const feat = env.step('click[features]');
    for (const f of product.features) expect(feat.observation.text).toContain(`- ${f}`);
    env.step('click[< prev]');
    const results = env.step('click[< prev]');
    expect(results.observation.text).toContain('Page: results for "');
    expect(results.observation.actions).toContain(`click[${id}]`);
  });

  it('pays the WebShop reward on buy now and ends the episode', () => {
    const env = new ShopEnv();
    openItem(env);
    env.step(`click[${goal.options.size}]`);
    env.step(`click[${goal.options.color}]`);
    const bought = env.step('click[buy now]');
    expect(bought.done).toBe(true);
    expect(bought.reward).toBe(1);
    expect(bought.info).toMatchObject({ valid: true, success: true });
    expect(bought.observation.actions).toEqual([]);
    expect(bought.observation.text).toContain('Page: purchase complete');
    expect(() => env.step('click[buy now]')).toThrow(EnvironmentStateError);
    expect(() => env.expertAction()).toThrow(EnvironmentStateError);

    // Without selecting options: 2 of n criteria missed.
    openItem(env);
    const partial = env.step('click[buy now]');
    const n = goal.attributes.length + 2 + 1;
    expect(partial.reward).toBeCloseTo((n - 2) / n, 12);
    expect(partial.info.success).toBe(false);
  });
});

describe('ShopEnv invalid actions', () => {
  it('never throws: valid false, reward 0, same page, explanation, and the episode continues', () => {
    const env = new ShopEnv();
    const start = env.reset(task);
    const cases: [string, RegExp][] = [
      ['click[buy now]', /no "buy now" to click on the search page/],
      ['clik[x]', /not of the form search\[query\] or click\[label\]/],
      ['search[   ]', /query is empty/],
      ['', /not of the form/],
    ];
    for (const [action, why] of cases) {
      const r = env.step(action);
      expect(r.info.valid, action).toBe(false);
      expect(r.reward).toBe(0);
      expect(r.done).toBe(false);
      expect(r.info.message).toMatch(why);
      expect(r.observation.text).toMatch(why);
      expect(r.observation.text).toContain('Invalid action:');
      expect(r.observation.text).toContain('Admissible actions are listed below.');
      expect(firstLine(r.observation.text)).toBe(`Instruction: ${task.instruction}`);
      expect(r.observation.actions).toEqual(start.actions);
    }
    // Still works after invalid steps.
    const results = env.step(start.actions[0] ?? '');
    expect(results.info.valid).toBe(true);
    expect(results.observation.text).toContain('Page: results');
    const wrongPage = env.step('search[shoes]');
    expect(wrongPage.info.valid).toBe(false);
    expect(wrongPage.info.message).toMatch(/only possible on the search page/);
    expect(wrongPage.observation.actions).toEqual(results.observation.actions);
    const unknown = env.step('click[B0NOTREAL00]');
    expect(unknown.info.valid).toBe(false);
    expect(unknown.observation.actions).toEqual(results.observation.actions);
    const prevOnFirst = env.step('click[< prev]');
    expect(prevOnFirst.info.valid).toBe(false);
    const ok = env.step('click[back to search]');
    expect(ok.info.valid).toBe(true);
    expect(ok.observation.text).toContain('Page: search');
  });

  it('ends at the 15-step limit with reward 0, counting invalid steps', () => {
    const env = new ShopEnv();
    env.reset(task);
    for (let t = 1; t < 15; t++) {
      const r = env.step(t % 2 === 0 ? 'nonsense' : 'click[nothing]');
      expect(r.done, `step ${t}`).toBe(false);
    }
    const last = env.step('search[yoga mat]');
    expect(last.done).toBe(true);
    expect(last.reward).toBe(0);
    expect(last.info.success).toBe(false);
    expect(last.info.valid).toBe(true);
    expect(last.info.message).toMatch(/step limit of 15/);
    expect(last.observation.actions).toEqual([]);
    expect(last.observation.text).toContain('Episode over');
    expect(() => env.step('click[back to search]')).toThrow(EnvironmentStateError);
  });

  it('throws EnvironmentStateError before reset and InvalidTaskError for invalid tasks', () => {
    const env = new ShopEnv();
    expect(() => env.step('search[x]')).toThrow(EnvironmentStateError);
    expect(() => env.expertAction()).toThrow(EnvironmentStateError);
    const bad: Task = { ...task, id: 'bad-1', goal: { ...goal, attributes: ['glow in the dark'] } };
    expect(() => env.reset(bad)).toThrow(InvalidTaskError);
    expect(() => env.reset(bad)).toThrow(/bad-1.*glow in the dark/);
    expect(() => env.reset({ ...task, env: 'household' })).toThrow(InvalidTaskError);
    expect(() => env.reset(null as unknown as Task)).toThrow(InvalidTaskError);
  });
});

describe('ShopEnv expert', () => {
  it('always returns an admissible action and recovers from random actions', () => {
    const env = new ShopEnv();
    const rng = new Rng(5);
    let successes = 0;
    for (const t of tasks.slice(0, 20)) {
      let obs = env.reset(t);
      // A burst of random admissible actions (and an odd custom search), then the expert alone.
      for (let i = 0; i < 4; i++) {
        const action = i === 0 ? 'search[zzz no such thing]' : rng.pick(obs.actions);
        const r = env.step(action);
        obs = r.observation;
        if (r.done) break;
      }
      for (let i = 0; i < 12; i++) {
        if (obs.actions.length === 0) break;
        const a = env.expertAction();
        expect(obs.actions).toContain(a);
        const r = env.step(a);
        obs = r.observation;
        if (r.done) {
          if (r.info.success) successes++;
          break;
        }
      }
    }
    // Random bursts can buy the wrong thing or run out the clock, but mostly the expert recovers.
    expect(successes).toBeGreaterThanOrEqual(12);
  });

  it('goes back from a wrong item and from a description page', () => {
    const env = new ShopEnv();
    env.reset(task);
    const results = env.step(`search[${goal.productType}]`).observation;
    const wrong = results.actions.find((a) => {
      const id = /^click\[(B0[0-9A-Z]{8})\]$/.exec(a)?.[1];
      const p = id ? catalogue.byId.get(id) : undefined;
      return p !== undefined && !satisfiesGoal(p, goal);
    });
    if (!wrong) throw new Error('every listed product satisfies the goal');
    env.step(wrong);
    expect(env.expertAction()).toBe('click[< prev]');
    env.step('click[description]');
    expect(env.expertAction()).toBe('click[< prev]');
    env.step('click[< prev]');
    env.step('click[< prev]');
    expect(env.expertAction()).toMatch(/^click\[(B0[0-9A-Z]{8}|next >)\]$/);
  });
});
