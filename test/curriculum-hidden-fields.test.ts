/**
 * The task validator rejects a task whose instruction carries a hidden goal field. Built-in
 * environments write instructions from the goal and never do that, so the shop's instruction
 * builder is replaced here by one that leaks the target product (or names a hidden field).
 */
import { describe, expect, it, vi } from 'vitest';
import type { Task } from '../src/core/types.ts';
import { RecombinationTaskGenerator } from '../src/curriculum/generator.ts';
import { TaskValidator } from '../src/curriculum/validation.ts';
import type { ShopGoal } from '../src/envs/shop/index.ts';

const leak = vi.hoisted(() => ({ mode: 'none' as 'none' | 'value' | 'name' }));

vi.mock('../src/envs/shop/index.ts', async (importOriginal) => {
  const original = await importOriginal<typeof import('../src/envs/shop/index.ts')>();
  return {
    ...original,
    shopInstruction: (goal: ShopGoal) => {
      const text = original.shopInstruction(goal);
      if (leak.mode === 'value') return `${text} (it is ${goal.targetId.toLowerCase()})`;
      if (leak.mode === 'name') return `${text}, catalogue seed ${goal.catalogueSeed}`;
      return text;
    },
  };
});

const { getEnvSpec } = await import('../src/envs/registry.ts');
const seeds = getEnvSpec('shop').tasks({ split: 'train', count: 12, seed: 3 });

describe('TaskValidator: an instruction carrying a hidden goal field is rejected', () => {
  it('rejects the leaking instruction with kind hidden-field, and accepts it once the builder is honest', () => {
    const seed = seeds[0] as Task;
    const g = seed.goal as ShopGoal;
    const goal = { ...g, attributes: g.attributes.slice(0, 1), maxPrice: Math.round(g.maxPrice * 0.8) };
    for (const mode of ['value', 'name'] as const) {
      leak.mode = mode;
      const verdict = new TaskValidator(seeds).check({ goal }, seed);
      expect(verdict).toMatchObject({ ok: false, kind: 'hidden-field' });
      expect(!verdict.ok && verdict.reason).toMatch(mode === 'value' ? /value of the goal's hidden field targetId/ : /names the goal's hidden field catalogueSeed/);
    }
    leak.mode = 'none';
    expect(new TaskValidator(seeds).check({ goal }, seed)).toMatchObject({ ok: true });
  });

  it('a generator returns no task whose instruction leaks; the rejections say why', async () => {
    leak.mode = 'value';
    const report = await new RecombinationTaskGenerator({ seed: 1 }).generateWithReport(seeds, 4);
    expect(report.tasks).toEqual([]);
    expect(report.rejected.some((r) => r.kind === 'hidden-field')).toBe(true);
    leak.mode = 'none';
    expect((await new RecombinationTaskGenerator({ seed: 1 }).generate(seeds, 4)).length).toBeGreaterThan(0);
  });
});
