/**
 * The household vocabulary: receptacle types and object types with their properties,
 * modelled on ALFWorld's kitchens, living rooms and bedrooms merged into one apartment
 * (so that every task type is possible in every layout).
 */

/** Receptacle (furniture) types. */
export const RECEPTACLE_TYPES = [
  'armchair',
  'bed',
  'cabinet',
  'coffeetable',
  'countertop',
  'desk',
  'diningtable',
  'drawer',
  'dresser',
  'fridge',
  'garbagecan',
  'microwave',
  'shelf',
  'sidetable',
  'sinkbasin',
  'sofa',
  'stoveburner',
] as const;
export type ReceptacleType = (typeof RECEPTACLE_TYPES)[number];

/** What one receptacle type is like and how many of it a layout has. */
export interface ReceptacleKind {
  /** Has a door or lid; starts closed and hides its contents until opened. */
  readonly openable: boolean;
  /** Inclusive range of instances in a layout. */
  readonly min: number;
  readonly max: number;
}

/**
 * Receptacle kinds. Fridge, microwave, sinkbasin and countertop are always present:
 * the appliances make every task type possible, and a countertop is a place to put things down.
 */
export const RECEPTACLES: Readonly<Record<ReceptacleType, ReceptacleKind>> = {
  armchair: { openable: false, min: 0, max: 1 },
  bed: { openable: false, min: 0, max: 1 },
  cabinet: { openable: true, min: 1, max: 6 },
  coffeetable: { openable: false, min: 0, max: 1 },
  countertop: { openable: false, min: 1, max: 3 },
  desk: { openable: false, min: 0, max: 2 },
  diningtable: { openable: false, min: 0, max: 1 },
  drawer: { openable: true, min: 1, max: 6 },
  dresser: { openable: false, min: 0, max: 1 },
  fridge: { openable: true, min: 1, max: 1 },
  garbagecan: { openable: false, min: 0, max: 1 },
  microwave: { openable: true, min: 1, max: 1 },
  shelf: { openable: false, min: 0, max: 3 },
  sidetable: { openable: false, min: 0, max: 2 },
  sinkbasin: { openable: false, min: 1, max: 2 },
  sofa: { openable: false, min: 0, max: 1 },
  stoveburner: { openable: false, min: 0, max: 4 },
};

/** Receptacle types a desklamp can stand on. */
export const LAMP_HOSTS: readonly ReceptacleType[] = ['desk', 'sidetable'];

/** The fixed lamp's type name (it is a fixture, not a receptacle one can put things in). */
export const DESKLAMP = 'desklamp';

/** Properties of one object type. */
export interface ObjectKind {
  /** Can be taken (every task needs its object to be pickable). */
  readonly pickable: boolean;
  /** Can be cleaned at a sinkbasin. */
  readonly cleanable: boolean;
  /** Can be heated with a microwave. */
  readonly heatable: boolean;
  /** Can be cooled with a fridge. */
  readonly coolable: boolean;
  /** Can be the object of a look-under-the-desklamp task. */
  readonly examinable: boolean;
  /** Plausible receptacle types: where it starts, and where place tasks put it. */
  readonly places: readonly ReceptacleType[];
}

function kind(flags: string, places: readonly ReceptacleType[]): ObjectKind {
  // Flags as letters keep the table below readable: p=pick c=clean h=heat o=cool x=examine.
  return {
    pickable: flags.includes('p'),
    cleanable: flags.includes('c'),
    heatable: flags.includes('h'),
    coolable: flags.includes('o'),
    examinable: flags.includes('x'),
    places,
  };
}

const KITCHEN_TABLES: readonly ReceptacleType[] = ['countertop', 'diningtable'];

/** Object types and their properties. */
export const OBJECTS = {
  apple: kind('pcho', [...KITCHEN_TABLES, 'fridge', 'garbagecan']),
  potato: kind('pcho', [...KITCHEN_TABLES, 'fridge']),
  tomato: kind('pcho', [...KITCHEN_TABLES, 'fridge']),
  egg: kind('pcho', [...KITCHEN_TABLES, 'fridge']),
  bread: kind('pho', [...KITCHEN_TABLES, 'fridge']),
  lettuce: kind('pco', [...KITCHEN_TABLES, 'fridge']),
  mug: kind('pchox', [...KITCHEN_TABLES, 'cabinet', 'shelf', 'desk', 'sinkbasin']),
  cup: kind('pchox', [...KITCHEN_TABLES, 'cabinet', 'fridge', 'sinkbasin']),
  plate: kind('pchox', [...KITCHEN_TABLES, 'cabinet', 'fridge', 'sinkbasin']),
  bowl: kind('pchox', [...KITCHEN_TABLES, 'cabinet', 'fridge', 'shelf']),
  pan: kind('pco', ['stoveburner', 'countertop', 'cabinet', 'sinkbasin']),
  pot: kind('pco', ['stoveburner', 'countertop', 'cabinet']),
  winebottle: kind('po', [...KITCHEN_TABLES, 'fridge', 'cabinet']),
  knife: kind('pc', [...KITCHEN_TABLES, 'drawer']),
  spoon: kind('pc', [...KITCHEN_TABLES, 'drawer', 'sinkbasin']),
  fork: kind('pc', [...KITCHEN_TABLES, 'drawer']),
  spatula: kind('pc', ['countertop', 'drawer']),
  dishsponge: kind('pc', ['sinkbasin', 'countertop', 'cabinet']),
  soapbar: kind('pc', ['sinkbasin', 'countertop', 'cabinet']),
  cloth: kind('pc', ['countertop', 'drawer', 'cabinet']),
  saltshaker: kind('p', [...KITCHEN_TABLES, 'cabinet', 'shelf']),
  peppershaker: kind('p', [...KITCHEN_TABLES, 'cabinet', 'shelf']),
  book: kind('px', ['shelf', 'desk', 'sidetable', 'sofa', 'bed', 'coffeetable']),
  cellphone: kind('px', ['desk', 'sidetable', 'sofa', 'bed', 'drawer', 'dresser']),
  laptop: kind('px', ['desk', 'bed', 'sofa', 'coffeetable']),
  pen: kind('px', ['desk', 'drawer', 'sidetable', 'shelf']),
  pencil: kind('px', ['desk', 'drawer', 'sidetable', 'shelf']),
  keychain: kind('px', ['drawer', 'sidetable', 'shelf', 'coffeetable', 'dresser']),
  creditcard: kind('px', ['desk', 'drawer', 'sidetable', 'countertop', 'coffeetable']),
  cd: kind('px', ['desk', 'drawer', 'shelf', 'sidetable']),
  watch: kind('px', ['desk', 'drawer', 'sidetable', 'dresser']),
  alarmclock: kind('px', ['desk', 'sidetable', 'shelf', 'dresser']),
  remotecontrol: kind('px', ['sofa', 'coffeetable', 'sidetable', 'armchair', 'dresser']),
  vase: kind('px', ['shelf', 'diningtable', 'coffeetable', 'sidetable', 'cabinet']),
  statue: kind('px', ['shelf', 'coffeetable', 'sidetable', 'desk', 'dresser']),
  candle: kind('p', ['shelf', 'cabinet', 'countertop', 'diningtable', 'sidetable']),
  pillow: kind('p', ['sofa', 'bed', 'armchair']),
  tissuebox: kind('p', ['shelf', 'coffeetable', 'sidetable', 'dresser']),
  houseplant: kind('', ['shelf', 'diningtable', 'sidetable', 'coffeetable']),
  television: kind('', ['dresser', 'sidetable']),
} as const satisfies Record<string, ObjectKind>;
export type ObjectType = keyof typeof OBJECTS;

/** All object type names, in a fixed order. */
export const OBJECT_TYPES = Object.keys(OBJECTS) as ObjectType[];

/** Whether `name` is a known object type. */
export function isObjectType(name: string): name is ObjectType {
  return Object.hasOwn(OBJECTS, name);
}

/** Whether `name` is a known receptacle type. */
export function isReceptacleType(name: string): name is ReceptacleType {
  return (RECEPTACLE_TYPES as readonly string[]).includes(name);
}

/** The type part of an instance id: "countertop 1" -> "countertop". */
export function typeOfInstance(id: string): string {
  return id.replace(/ \d+$/, '');
}
