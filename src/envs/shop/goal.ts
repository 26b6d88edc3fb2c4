/**
 * Shop goals: the schema, WebShop-style instructions (writing and reading them back),
 * the search queries suggested from an instruction, and task validation.
 */
import { z } from 'zod';
import { TaskSchema, type Task, type TaskValidation } from '../../core/types.ts';
import { generateCatalogue, joinWords, type Catalogue, type Product } from './catalogue.ts';
import { CATEGORIES, OPTION_KINDS } from './vocabulary.ts';

const optionValue = z.string().trim().min(1);

/** A shop goal: what to buy. JSON-serialisable; lives in `Task.goal`. */
export const ShopGoalSchema = z
  .object({
    /** Which catalogue the task is about (see `generateCatalogue`). */
    catalogueSeed: z.number().int().min(0).max(0xffffffff),
    productType: z.string().trim().min(1),
    category: z.string().trim().min(1),
    /** Attributes the product must have. */
    attributes: z.array(z.string().trim().min(1)).max(8),
    /** The option value to select for each option kind that matters. */
    options: z.object({ size: optionValue.optional(), color: optionValue.optional() }).strict(),
    /** Budget in dollars; the product's price must be <= this. */
    maxPrice: z.number().positive().finite(),
    /** The product the task was generated from (one of possibly several that satisfy it). */
    targetId: z.string().min(1),
  })
  .strict();
export type ShopGoal = z.infer<typeof ShopGoalSchema>;

/** The option values currently chosen on an item page. */
export type SelectedOptions = { size?: string; color?: string };

/** Whether `product` fully satisfies `goal`: type, every attribute, every required option value, price. */
export function satisfiesGoal(product: Product, goal: ShopGoal): boolean {
  if (product.productType !== goal.productType || product.category !== goal.category) return false;
  if (product.price > goal.maxPrice) return false;
  for (const attribute of goal.attributes) if (!product.attributes.includes(attribute)) return false;
  for (const kind of OPTION_KINDS) {
    const wanted = goal.options[kind];
    if (wanted !== undefined && !(product.options[kind] ?? []).includes(wanted)) return false;
  }
  return true;
}

/** "i need running shoes that are lightweight and non slip, in black, size 9, price lower than 60.00 dollars". */
export function shopInstruction(goal: ShopGoal): string {
  const type = goal.productType;
  const plural = isPlural(type);
  const mass = CATEGORIES.some((c) => c.types.some((t) => t.name === type && t.mass === true));
  const article = plural ? '' : mass ? 'some ' : /^[aeiou]/.test(type) ? 'an ' : 'a ';
  let text = `i need ${article}${type}`;
  if (goal.attributes.length > 0) text += ` that ${plural ? 'are' : 'is'} ${joinWords(goal.attributes)}`;
  if (goal.options.color !== undefined) text += `, in ${goal.options.color}`;
  if (goal.options.size !== undefined) text += `, size ${goal.options.size}`;
  text += `, price lower than ${goal.maxPrice.toFixed(2)} dollars`;
  return text.toLowerCase();
}

function isPlural(type: string): boolean {
  return type.endsWith('s') && !type.endsWith('ss');
}

/** What can be read back from an instruction's text (no hidden goal fields). */
export interface ParsedInstruction {
  productType: string;
  attributes: string[];
  color?: string;
  size?: string;
  maxPrice?: number;
}

const INSTRUCTION_RE =
  /^i need (?:an? |some )?(.+?)(?: that (?:is|are) (.+?))?(?:, in (.+?))?(?:, size (.+?))?(?:,? (?:and )?price lower than (\d+(?:\.\d+)?) dollars)?$/;

/** Parses an instruction written by `shopInstruction`; null for any other wording. */
export function parseInstruction(instruction: string): ParsedInstruction | null {
  const m = INSTRUCTION_RE.exec(instruction.trim().toLowerCase());
  if (!m || !m[1]) return null;
  const parsed: ParsedInstruction = {
    productType: m[1],
    attributes: m[2] ? m[2].split(/, | and /).map((a) => a.trim()).filter((a) => a !== '') : [],
  };
  if (m[3]) parsed.color = m[3];
  if (m[4]) parsed.size = m[4];
  if (m[5]) parsed.maxPrice = Number(m[5]);
  return parsed;
}

const PRICE_CLAUSE_RE = /,?\s*(?:and\s+)?price\s+(?:lower|less)\s+than\s+\$?\d+(?:\.\d+)?\s*(?:dollars)?/g;
const LEAD_RE = /^(?:i need|i want|i am looking for|i'm looking for|find me|looking for)\s+(?:(?:a|an|some)\s+)?/;

/**
 * Up to three search queries suggested on the search page, derived only from the instruction
 * text: the instruction without its price clause, the product type with its attributes, and
 * the product type alone.
 */
export function suggestQueries(instruction: string): string[] {
  const text = instruction.trim().toLowerCase().replace(/\s+/g, ' ');
  const queries: string[] = [];
  const add = (q: string): void => {
    const clean = q.trim().replace(/[,\s]+$/, '');
    if (clean !== '' && !queries.includes(clean)) queries.push(clean);
  };
  add(text.replace(PRICE_CLAUSE_RE, '').replace(LEAD_RE, ''));
  const parsed = parseInstruction(text);
  if (parsed) {
    add([parsed.productType, ...parsed.attributes].join(' '));
    add(parsed.productType);
  } else {
    // Free-form instruction (e.g. written by an LLM): fall back to its content words.
    const words = text.replace(PRICE_CLAUSE_RE, '').replace(LEAD_RE, '').split(/[^a-z0-9.]+/).filter((w) => w !== '' && !STOP_WORDS.has(w));
    add(words.join(' '));
    add(words.slice(0, 2).join(' '));
  }
  if (queries.length === 0) add('products');
  return queries;
}

const STOP_WORDS = new Set(['a', 'an', 'the', 'that', 'is', 'are', 'and', 'in', 'with', 'for', 'of', 'to', 'it', 'some', 'size', 'i', 'need', 'want']);

/** The catalogue a goal refers to. */
export function goalCatalogue(goal: ShopGoal): Catalogue {
  return generateCatalogue(goal.catalogueSeed);
}

/**
 * Checks that `task` is a shop task whose goal parses and is achievable: some product in its
 * catalogue fully satisfies it.
 */
export function validateShopTask(task: Task): TaskValidation {
  const shape = TaskSchema.safeParse(task);
  if (!shape.success) return { ok: false, reason: `the task is malformed: ${shape.error.issues.map((i) => `${i.path.join('.') || 'task'}: ${i.message}`).join('; ')}` };
  if (task.env !== 'shop') return { ok: false, reason: `the task is for the ${JSON.stringify(task.env)} environment, not "shop"` };
  const parsed = ShopGoalSchema.safeParse(task.goal);
  if (!parsed.success) {
    return { ok: false, reason: `the goal is not a shop goal: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'goal'}: ${i.message}`).join('; ')}` };
  }
  const goal = parsed.data;
  const catalogue = goalCatalogue(goal);
  const category = catalogue.typeCategory.get(goal.productType);
  if (category === undefined) return { ok: false, reason: `the shop sells no product type called ${JSON.stringify(goal.productType)}` };
  if (category !== goal.category) {
    return { ok: false, reason: `product type ${JSON.stringify(goal.productType)} is in category ${JSON.stringify(category)}, not ${JSON.stringify(goal.category)}` };
  }
  if (catalogue.products.some((p) => satisfiesGoal(p, goal))) return { ok: true };
  return { ok: false, reason: describeUnachievable(catalogue, goal) };
}

/** Says which requirement no product of the type meets, in plain words. */
function describeUnachievable(catalogue: Catalogue, goal: ShopGoal): string {
  const ofType = catalogue.products.filter((p) => p.productType === goal.productType);
  const missingAttr = goal.attributes.find((a) => !ofType.some((p) => p.attributes.includes(a)));
  if (missingAttr !== undefined) return `no ${goal.productType} in the catalogue has the attribute ${JSON.stringify(missingAttr)}`;
  for (const kind of OPTION_KINDS) {
    const wanted = goal.options[kind];
    if (wanted !== undefined && !ofType.some((p) => (p.options[kind] ?? []).includes(wanted))) {
      return `no ${goal.productType} in the catalogue comes in ${kind} ${JSON.stringify(wanted)}`;
    }
  }
  const cheapest = Math.min(...ofType.map((p) => p.price));
  if (goal.maxPrice < cheapest) return `no ${goal.productType} costs ${goal.maxPrice.toFixed(2)} dollars or less (the cheapest is ${cheapest.toFixed(2)})`;
  return `no single ${goal.productType} in the catalogue has all the requested attributes and options within ${goal.maxPrice.toFixed(2)} dollars`;
}
