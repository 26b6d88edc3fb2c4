/**
 * Trajectories as chat conversations, for training an LLM agent on a server (e.g. with TRL).
 *
 * One JSON object per line, one conversation per trajectory:
 *
 *   {"messages": [
 *      {"role": "system",    "content": <the environment and the reply format>},
 *      {"role": "user",      "content": <instruction + first observation + admissible actions>},
 *      {"role": "assistant", "content": <the action taken>},
 *      {"role": "user",      "content": <next observation + admissible actions>},
 *      {"role": "assistant", "content": <the next action>},
 *      ...],
 *    "reward": R, "success": bool, "source": "offline"|"synthetic"|"real",
 *    "task_id": ..., "trajectory_id": ..., "env": "shop"|"household"}
 *
 * `messages` is the conversational format that TRL's SFT trainer reads as it is (and that chat
 * templates apply to); `reward` and `success` let a script keep the successful episodes for SFT
 * or weight them for RL. A conversation always ends with an assistant turn (the last action):
 * the observation after it is not part of a trajectory. Only what the agent saw goes in (the
 * instruction, never the task's goal), and not the experience model's `reasoning` either, which
 * is the simulator's text, not the agent's.
 */
import { z } from 'zod';
import { DomainNameSchema, TrajectorySourceSchema, type DomainName, type EnvName, type Observation, type Task, type Trajectory } from '../core/types.ts';

const CHAT_ROLES = ['system', 'user', 'assistant'] as const;
export type ChatRole = (typeof CHAT_ROLES)[number];

const ChatMessageSchema = z.object({ role: z.enum(CHAT_ROLES), content: z.string() }).strict();
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

/** One line of a chat export. */
const ChatRecordSchema = z
  .object({
    messages: z.array(ChatMessageSchema).min(1),
    reward: z.number().finite(),
    success: z.boolean(),
    source: TrajectorySourceSchema,
    task_id: z.string().min(1),
    trajectory_id: z.string().min(1),
    env: DomainNameSchema,
  })
  .strict();
export type ChatRecord = z.infer<typeof ChatRecordSchema>;

const ENV_DESCRIPTIONS: Record<EnvName, string> = {
  shop:
    'You are shopping in a web store to buy the product the instruction asks for. Each page is shown as text. ' +
    'Actions are search[query] and click[label]: search for the product, open a result, choose the options the ' +
    'instruction names, and click[buy now].',
  household:
    'You are in a house with receptacles (countertop, drawer, cabinet, fridge, microwave, sinkbasin, shelf, desk, ...) ' +
    'and objects in them. Complete the household task the instruction describes by moving around and acting on ' +
    'objects and receptacles.',
};

/** The system message of an environment's conversations. */
export function chatSystemPrompt(env: DomainName): string {
  // Another domain (an environment module, seed data) has no description here: a generic one.
  const described = Object.hasOwn(ENV_DESCRIPTIONS, env) ? ENV_DESCRIPTIONS[env as EnvName] : `You are acting in the text environment "${env}" to complete the task the instruction describes.`;
  return `${described} After each observation, reply with exactly one of the admissible actions listed, and nothing else.`;
}

function observationContent(observation: Observation): string {
  const actions = observation.actions.length > 0 ? observation.actions.map((a) => `- ${a}`).join('\n') : '(none)';
  return `Observation:\n${observation.text}\n\nAdmissible actions:\n${actions}`;
}

/** The conversation of one trajectory (`task` must be the trajectory's task). */
export function trajectoryToChat(task: Pick<Task, 'id' | 'instruction' | 'env'>, trajectory: Trajectory): ChatRecord {
  if (task.id !== trajectory.taskId) throw new RangeError(`trajectory ${trajectory.id} belongs to task ${trajectory.taskId}, not ${task.id}`);
  if (trajectory.steps.length === 0) throw new RangeError(`trajectory ${trajectory.id} has no steps: a conversation needs at least one action`);
  const messages: ChatMessage[] = [{ role: 'system', content: chatSystemPrompt(trajectory.env) }];
  trajectory.steps.forEach((step, i) => {
    const observation = observationContent(step.observation);
    messages.push({ role: 'user', content: i === 0 ? `Instruction: ${task.instruction}\n\n${observation}` : observation });
    messages.push({ role: 'assistant', content: step.action });
  });
  return {
    messages,
    reward: trajectory.reward,
    success: trajectory.success,
    source: trajectory.source,
    task_id: trajectory.taskId,
    trajectory_id: trajectory.id,
    env: trajectory.env,
  };
}

/** The JSONL line (without its newline) of a chat record. */
export function chatLine(record: ChatRecord): string {
  return JSON.stringify(record);
}

/** Thrown for a line that is not a valid chat record; the message names the line and the field. */
export class ChatFormatError extends Error {
  override name = 'ChatFormatError';
}

/** Parses and validates one chat line (1-based `line` for messages). */
export function parseChatLine(text: string, line = 1): ChatRecord {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new ChatFormatError(`line ${line}: not valid JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  const parsed = ChatRecordSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue && issue.path.length > 0 ? `, field ${issue.path.map(String).join('.')}` : '';
    throw new ChatFormatError(`line ${line}${field}: ${issue?.message ?? 'invalid chat record'}`);
  }
  const record = parsed.data;
  const roles = record.messages.map((m) => m.role);
  if (roles[0] !== 'system') throw new ChatFormatError(`line ${line}: the first message must be the system message, got ${roles[0]}`);
  for (let i = 1; i < roles.length; i++) {
    const expected: ChatRole = i % 2 === 1 ? 'user' : 'assistant';
    if (roles[i] !== expected) throw new ChatFormatError(`line ${line}, field messages.${i}.role: expected ${expected}, got ${roles[i]}`);
  }
  if (roles.length < 3 || roles[roles.length - 1] !== 'assistant') throw new ChatFormatError(`line ${line}: a conversation must end with an assistant turn`);
  return record;
}

/** Parses a whole chat JSONL text (blank lines ignored). */
export function parseChatJsonl(text: string): ChatRecord[] {
  const records: ChatRecord[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim() !== '') records.push(parseChatLine(line, i + 1));
  });
  return records;
}
