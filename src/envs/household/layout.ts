/**
 * Deterministic household layouts: which receptacles a home has, where the desklamp stands
 * and where each object starts. A layout is a pure function of its integer seed.
 */
import { Rng } from '../../core/rng.ts';
import {
  DESKLAMP,
  LAMP_HOSTS,
  OBJECT_TYPES,
  OBJECTS,
  RECEPTACLE_TYPES,
  RECEPTACLES,
  type ObjectType,
  type ReceptacleType,
} from './vocab.ts';

/** One piece of furniture, e.g. `{ id: 'drawer 2', type: 'drawer', openable: true }`. */
export interface Receptacle {
  readonly id: string;
  readonly type: ReceptacleType;
  /** Starts closed and hides its contents until opened. */
  readonly openable: boolean;
}

/** An object instance and the receptacle it starts in, e.g. `{ id: 'apple 1', type: 'apple', location: 'fridge 1' }`. */
export interface PlacedObject {
  readonly id: string;
  readonly type: ObjectType;
  readonly location: string;
}

/** A home: receptacles (sorted by type, then number), the desklamp and the objects' start positions. */
export interface Layout {
  readonly seed: number;
  readonly receptacles: readonly Receptacle[];
  /** The desklamp fixture (`desklamp 1`) and the receptacle (a desk or sidetable) it stands on. */
  readonly lamp: { readonly id: string; readonly host: string };
  /** Objects sorted by type order of the vocabulary, then number. */
  readonly objects: readonly PlacedObject[];
}

/** Largest accepted layout seed (layout seeds are unsigned 32-bit integers). */
export const MAX_LAYOUT_SEED = 0xffffffff;

/** Range of how many object types a layout holds, and how many instances each. */
const MIN_OBJECT_TYPES = 14;
const MAX_OBJECT_TYPES = 20;
const INSTANCE_COUNTS = [1, 1, 2, 2, 3] as const;

// Layouts are rebuilt on every reset; a small cache keeps evaluation loops cheap.
const CACHE_LIMIT = 512;
const cache = new Map<number, Layout>();

/** Throws a RangeError unless `seed` is a valid layout seed. */
export function checkLayoutSeed(seed: number): void {
  if (!(Number.isInteger(seed) && seed >= 0 && seed <= MAX_LAYOUT_SEED)) {
    throw new RangeError(`layout seed must be an integer in [0, ${MAX_LAYOUT_SEED}], got ${seed}`);
  }
}

/**
 * The layout for `layoutSeed`: the same seed always gives the same layout. Every layout has a
 * countertop, a sinkbasin, a microwave, a fridge and a desklamp, so every task type is possible.
 */
export function generateLayout(layoutSeed: number): Layout {
  checkLayoutSeed(layoutSeed);
  const cached = cache.get(layoutSeed);
  if (cached) return cached;
  const layout = buildLayout(layoutSeed);
  if (cache.size >= CACHE_LIMIT) {
    const oldest = cache.keys().next().value;
    if (oldest !== undefined) cache.delete(oldest);
  }
  cache.set(layoutSeed, layout);
  return layout;
}

/** Forgets every cached layout, so that the next use builds it afresh (for cold-start measurements). */
export function clearLayoutCache(): void {
  cache.clear();
}

function buildLayout(seed: number): Layout {
  const rng = new Rng(seed).fork('household-layout');
  const counts = new Map<ReceptacleType, number>();
  for (const type of RECEPTACLE_TYPES) {
    const { min, max } = RECEPTACLES[type];
    counts.set(type, rng.int(min, max));
  }
  // The desklamp needs somewhere to stand.
  if (LAMP_HOSTS.every((t) => (counts.get(t) ?? 0) === 0)) counts.set(rng.pick(LAMP_HOSTS), 1);

  const receptacles: Receptacle[] = [];
  for (const type of RECEPTACLE_TYPES) {
    const n = counts.get(type) ?? 0;
    for (let i = 1; i <= n; i++) receptacles.push(Object.freeze({ id: `${type} ${i}`, type, openable: RECEPTACLES[type].openable }));
  }

  const hosts = receptacles.filter((r) => LAMP_HOSTS.includes(r.type));
  const lamp = Object.freeze({ id: `${DESKLAMP} 1`, host: rng.pick(hosts).id });

  const byType = new Map<ReceptacleType, Receptacle[]>();
  for (const r of receptacles) byType.set(r.type, [...(byType.get(r.type) ?? []), r]);
  const placesFor = (type: ObjectType): Receptacle[] => OBJECTS[type].places.flatMap((t) => byType.get(t) ?? []);

  const available = OBJECT_TYPES.filter((t) => placesFor(t).length > 0);
  const k = Math.min(available.length, rng.int(MIN_OBJECT_TYPES, MAX_OBJECT_TYPES));
  const chosen = new Set(rng.sample(available, k));
  const objects: PlacedObject[] = [];
  for (const type of OBJECT_TYPES) {
    if (!chosen.has(type)) continue;
    const places = placesFor(type);
    const n = rng.pick(INSTANCE_COUNTS);
    for (let i = 1; i <= n; i++) objects.push(Object.freeze({ id: `${type} ${i}`, type, location: rng.pick(places).id }));
  }
  return Object.freeze({ seed, receptacles: Object.freeze(receptacles), lamp, objects: Object.freeze(objects) });
}

/** The receptacle with id `id` in `layout`, or undefined. */
export function findReceptacle(layout: Layout, id: string): Receptacle | undefined {
  return layout.receptacles.find((r) => r.id === id);
}
