import { describe, expect, it } from 'vitest';
import {
  LAMP_HOSTS,
  OBJECTS,
  RECEPTACLES,
  generateLayout,
  initialState,
  isAccessible,
} from '../src/envs/household/index.ts';

describe('household layouts', () => {
  it('are a deterministic function of the seed', () => {
    for (const seed of [0, 1, 42, 123456, 4294967295]) {
      // Compare structure, not identity: the cache would make identity trivially true.
      expect(JSON.parse(JSON.stringify(generateLayout(seed)))).toEqual(JSON.parse(JSON.stringify(generateLayout(seed))));
    }
  });

  it('differ between seeds', () => {
    const seen = new Set<string>();
    for (let seed = 0; seed < 40; seed++) {
      const l = generateLayout(seed);
      seen.add(JSON.stringify({ r: l.receptacles, o: l.objects, lamp: l.lamp }));
    }
    expect(seen.size).toBe(40);
  });

  it('always have the receptacles every task type needs, numbered like ALFWorld', () => {
    for (let seed = 0; seed < 200; seed++) {
      const l = generateLayout(seed);
      const types = new Set(l.receptacles.map((r) => r.type));
      for (const t of ['sinkbasin', 'microwave', 'fridge', 'countertop'] as const) expect(types.has(t), `layout ${seed} lacks ${t}`).toBe(true);
      const host = l.receptacles.find((r) => r.id === l.lamp.host);
      expect(host && LAMP_HOSTS.includes(host.type), `lamp host ${l.lamp.host}`).toBe(true);
      expect(l.lamp.id).toBe('desklamp 1');
      for (const r of l.receptacles) {
        expect(r.id).toMatch(/^[a-z]+ [1-9]\d*$/);
        expect(r.id.startsWith(`${r.type} `)).toBe(true);
        expect(r.openable).toBe(RECEPTACLES[r.type].openable);
      }
      expect(new Set(l.receptacles.map((r) => r.id)).size).toBe(l.receptacles.length);
    }
  });

  it('place objects only in plausible receptacles of the layout', () => {
    for (let seed = 0; seed < 100; seed++) {
      const l = generateLayout(seed);
      expect(l.objects.length).toBeGreaterThan(10);
      expect(new Set(l.objects.map((o) => o.id)).size).toBe(l.objects.length);
      for (const o of l.objects) {
        const r = l.receptacles.find((x) => x.id === o.location);
        expect(r, `${o.id} in unknown ${o.location}`).toBeDefined();
        expect(OBJECTS[o.type].places, `${o.id} in ${o.location}`).toContain(r?.type);
        expect(o.id).toMatch(new RegExp(`^${o.type} [1-3]$`));
      }
    }
  });

  it('start with doors closed, the agent in the middle of the room and hands empty', () => {
    const l = generateLayout(7);
    const s = initialState(l);
    expect(s.location).toBeNull();
    expect(s.held).toBeNull();
    expect(s.lampOn).toBe(false);
    for (const r of l.receptacles) expect(isAccessible(s, r.id)).toBe(!r.openable);
    expect(l.receptacles.some((r) => r.openable)).toBe(true);
    for (const o of s.objects) expect([o.clean, o.hot, o.cool]).toEqual([false, false, false]);
  });

  it('reject bad seeds loudly', () => {
    for (const bad of [-1, 1.5, Number.NaN, 2 ** 32]) expect(() => generateLayout(bad)).toThrow(String(bad));
  });
});
