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
 *    "task_id": ..., "trajectory_id": ..., "env": <the domain's name>}
 *
 * `messages` is the conversational format that TRL's SFT trainer reads as it is (and that chat
 * templates apply to); `reward` and `success` let a script keep the successful episodes for SFT
 * or weight them for RL. A conversation always ends with an assistant turn (the last action):
 * the observation after it is not part of a trajectory. Only what the agent saw goes in (the
 * instruction, never the task's goal), and not the experience model's `reasoning` either, which
 * is the simulator's text, not the agent's.
 *
 * The system message introduces the environment with the one line it declares of itself
 * (`EnvSpec.description`, a module's `description` export), which the caller passes in; without
 * one it names the domain only.
 */
import { z } from 'zod';
import { DomainNameSchema, TrajectorySourceSchema, type DomainName, type Observation, type Task, type Trajectory } from '../core/types.ts';

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

/** The last sentence of every system message: how the assistant replies. */
export const CHAT_REPLY_FORMAT = 'After each observation, reply with exactly one of the admissible actions listed, and nothing else.';

/** What a conversation may say of its environment beyond the domain name. */
export interface ChatOptions {
  /**
   * The environment's declared one-line description (`getEnvSpec(name).description`, or a loaded
   * module's spec); absent or blank, the system message names the domain only.
   */
  description?: string | undefined;
}

/**
 * The system message of an environment's conversations: the domain `env` introduced by its
 * declared `description` (trimmed, without a final period) where one is given, then
 * {@link CHAT_REPLY_FORMAT}.
 */
export function chatSystemPrompt(env: DomainName, description?: string): string {
  const described = description?.trim().replace(/\.$/, '') ?? '';
  const intro =
    described === ''
      ? `You are acting in the text environment "${env}" to complete the task the instruction describes.`
      : `You are acting in the text environment "${env}": ${described}. Complete the task the instruction describes.`;
  return `${intro} ${CHAT_REPLY_FORMAT}`;
}

function observationContent(observation: Observation): string {
  const actions = observation.actions.length > 0 ? observation.actions.map((a) => `- ${a}`).join('\n') : '(none)';
  return `Observation:\n${observation.text}\n\nAdmissible actions:\n${actions}`;
}

/**
 * The conversation of one trajectory (`task` must be the trajectory's task); `options.description`
 * is the trajectory's environment's declared description, for the system message.
 */
export function trajectoryToChat(task: Pick<Task, 'id' | 'instruction' | 'env'>, trajectory: Trajectory, options: ChatOptions = {}): ChatRecord {
  if (task.id !== trajectory.taskId) throw new RangeError(`trajectory ${trajectory.id} belongs to task ${trajectory.taskId}, not ${task.id}`);
  if (trajectory.steps.length === 0) throw new RangeError(`trajectory ${trajectory.id} has no steps: a conversation needs at least one action`);
  const messages: ChatMessage[] = [{ role: 'system', content: chatSystemPrompt(trajectory.env, options.description) }];
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
