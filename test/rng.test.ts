import { describe, expect, it } from 'vitest';
import { Rng, hashString, hashUnit } from '../src/core/rng.ts';

describe('Rng', () => {
  it('is deterministic for a seed and differs across seeds', () => {
    const a = new Rng(42);
    const b = new Rng(42);
    const c = new Rng(43);
    const xs = Array.from({ length: 20 }, () => a.nextUint32());
    expect(Array.from({ length: 20 }, () => b.nextUint32())).toEqual(xs);
    expect(Array.from({ length: 20 }, () => c.nextUint32())).not.toEqual(xs);
  });

  it('next() is uniform-ish in [0, 1)', () => {
    const rng = new Rng(7);
    const n = 20_000;
    let sum = 0;
    let min = 1;
    let max = 0;
    const bins = new Array<number>(10).fill(0);
    for (let i = 0; i < n; i++) {
      const x = rng.next();
      min = Math.min(min, x);
      max = Math.max(max, x);
      sum += x;
      bins[Math.floor(x * 10)]!++;
    }
    expect(min).toBeGreaterThanOrEqual(0);
    expect(max).toBeLessThan(1);
    expect(sum / n).toBeCloseTo(0.5, 1);
    for (const count of bins) expect(Math.abs(count - n / 10)).toBeLessThan(n / 10 * 0.1);
  });

  it('int covers the inclusive range and checks its arguments', () => {
    const rng = new Rng(1);
    const seen = new Set<number>();
    for (let i = 0; i < 500; i++) seen.add(rng.int(3, 6));
    expect([...seen].sort()).toEqual([3, 4, 5, 6]);
    expect(() => rng.int(5, 2)).toThrow(/min <= max, got 5, 2/);
    expect(() => new Rng(Number.NaN)).toThrow(/finite/);
  });

  it('shuffle and sample are permutations / subsets', () => {
    const rng = new Rng(3);
    const items = Array.from({ length: 30 }, (_, i) => i);
    const shuffled = rng.shuffle(items);
    expect(shuffled).not.toEqual(items);
    expect([...shuffled].sort((x, y) => x - y)).toEqual(items);
    const sample = rng.sample(items, 5);
    expect(new Set(sample).size).toBe(5);
    expect(() => rng.sample(items, 31)).toThrow(/exceeds/);
    expect(() => rng.pick([])).toThrow(/non-empty/);
  });

  it('fork gives independent, reproducible streams', () => {
    const a = new Rng(9).fork('x');
    const b = new Rng(9).fork('x');
    const c = new Rng(9).fork('y');
    const va = a.nextUint32();
    expect(b.nextUint32()).toBe(va);
    expect(c.nextUint32()).not.toBe(va);
  });

  it('state and setState carry a stream over, and reject a bad state', () => {
    const a = new Rng(11);
    for (let i = 0; i < 5; i++) a.next();
    const b = new Rng(0);
    b.setState(a.state());
    expect(Array.from({ length: 8 }, () => b.nextUint32())).toEqual(Array.from({ length: 8 }, () => a.nextUint32()));
    expect(a.state().every((w) => w >= 0 && w <= 0xffffffff)).toBe(true);
    expect(() => b.setState([1, 2, 3])).toThrow(/four 32-bit/);
    expect(() => b.setState([1, 2, 3, -1])).toThrow(/four 32-bit/);
  });

  it('hashString is stable FNV-1a', () => {
    expect(hashString('')).toBe(0x811c9dc5);
    expect(hashString('a')).toBe(0xe40c292c);
  });

  it('hashUnit is a draw in (0, 1) fixed by its key and spread over the interval', () => {
    expect(hashUnit('')).toBe((0x811c9dc5 + 0.5) / 4294967296);
    const draws = Array.from({ length: 2000 }, (_, i) => hashUnit(`task-${i}`));
    expect(draws.every((u) => u > 0 && u < 1)).toBe(true);
    expect(draws.filter((u) => u < 0.5).length / draws.length).toBeCloseTo(0.5, 1);
  });
});
