/**
 * The task generator's prompt (DreamGym section 4.2 style): a high-variance seed task with its
 * environment context, and the request for variations that are harder but feasible, meaningfully
 * different, and realistic. Pure, so it is snapshot-tested.
 *
 * Declared domain knowledge (DESIGN.md section 4). This prompt is for the task generator, the
 * LLM that writes new tasks, not for an experience model: it shows the seed task's whole goal
 * (hidden fields included) and reads `src/envs` for what a goal may contain (the registry's
 * descriptions, the shop's categories, the household's task types and a home's layout), because
 * a new task needs a goal that the real environment can evaluate. No experience model, reward
 * model or policy prompt is built here, and nothing of this prompt or its reply reaches a
 * synthetic rollout: the generated task's goal is checked and kept for the real environment
 * (see `validation.ts`), and a rollout gets `agentView(task)`. The prompt also asks the generator
 * to keep hidden fields out of the instruction; `TaskValidator` enforces it.
 */
import type { Task } from '../core/types.ts';
import { generateLayout, HouseholdGoalSchema, TASK_TYPES } from '../envs/household/index.ts';
import { ENVIRONMENTS } from '../envs/registry.ts';
import { CATEGORIES, ShopGoalSchema } from '../envs/shop/index.ts';
import type { ChatCompletionMessageParam } from '../llm/engine.ts';
import { HIDDEN_GOAL_FIELDS } from './validation.ts';

/** The context of a seed task's environment: what a goal may contain. */
export function environmentContext(task: Task): string {
  const spec = (ENVIRONMENTS as Record<string, { description: string } | undefined>)[task.env];
  const lines = [`Environment: ${task.env}${spec ? ` (${spec.description})` : ''}.`];
  if (task.env === 'shop') {
    const goal = ShopGoalSchema.safeParse(task.goal);
    const category = goal.success ? CATEGORIES.find((c) => c.name === goal.data.category) : undefined;
    lines.push(
      'A shop goal has: catalogueSeed (keep it), category, productType (a type of that category), attributes (1 to 8 of the',
      "category's attributes the product must have), options ({size?, color?} values the product must come in), maxPrice",
      '(dollars; the product must cost at most this), and targetId (any product id; it is recomputed).',
    );
    if (category) {
      lines.push(`Category ${category.name}: product types ${category.types.map((t) => t.name).join(', ')}.`);
      lines.push(`Attributes: ${category.attributes.join(', ')}.`);
      const type = category.types.find((t) => goal.success && t.name === goal.data.productType);
      const sizes = type?.sizes === undefined ? category.sizes : type.sizes;
      const colors = type?.colors === undefined ? category.colors : type.colors;
      if (sizes) lines.push(`Sizes of ${type?.name ?? 'this category'}: ${sizes.join(', ')}.`);
      if (colors) lines.push(`Colors of ${type?.name ?? 'this category'}: ${colors.join(', ')}.`);
    }
  } else if (task.env === 'household') {
    const goal = HouseholdGoalSchema.safeParse(task.goal);
    lines.push(
      `A household goal has: layoutSeed (keep it: it is the home), type (one of ${TASK_TYPES.join(', ')}), object (an object`,
      'type in the home), and receptacle (a receptacle type in the home; none for look_at_obj_in_light).',
    );
    if (goal.success) {
      const layout = generateLayout(goal.data.layoutSeed);
      lines.push(`Object types in this home: ${[...new Set(layout.objects.map((o) => o.type))].join(', ')}.`);
      lines.push(`Receptacle types in this home: ${[...new Set(layout.receptacles.map((r) => r.type))].join(', ')}.`);
    }
  }
  return lines.join('\n');
}

/** The reply format of the generator. */
const GENERATOR_REPLY_FORMAT = '{"tasks": [{"instruction": "<what the user asks for>", "goal": {<the goal, same fields as the original>}}, ...]}';

/** The request to keep the goal's hidden fields out of the instruction (none for an environment without any). */
function hiddenFieldsLine(env: string): string[] {
  const fields = HIDDEN_GOAL_FIELDS[env] ?? [];
  if (fields.length === 0) return [];
  return [`The agent reads only the instruction: never put ${fields.join(' or ')} (or their values) in it.`];
}

/** The messages asking for `count` variations of `seed`. */
export function generatorMessages(seed: Task, count: number): ChatCompletionMessageParam[] {
  if (!(Number.isInteger(count) && count >= 1)) throw new RangeError(`generatorMessages: count must be an integer >= 1, got ${count}`);
  return [
    {
      role: 'system',
      content: 'You design training tasks for an agent that acts in a text environment. You write new tasks as JSON, using only values that exist in the environment.',
    },
    {
      role: 'user',
      content: [
        environmentContext(seed),
        '',
        'This task is challenging for the agent right now (its success varies between attempts):',
        `Instruction: ${seed.instruction}`,
        `Goal: ${JSON.stringify(seed.goal)}`,
        '',
        `Write ${count} new task${count === 1 ? '' : 's'} that vary it. Each new task must be:`,
        '- harder than the original, but still feasible in this environment;',
        '- meaningfully different from the original and from each other (change what is asked, not just the wording);',
        '- realistic: something a real user would ask for.',
        'Keep the goal in exactly the same JSON format as the original.',
        ...hiddenFieldsLine(seed.env),
        `Reply with one JSON object only: ${GENERATOR_REPLY_FORMAT}`,
      ].join('\n'),
    },
  ];
}
