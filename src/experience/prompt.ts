/**
 * Prompts of the LLM experience model (DreamGym's M_exp), as pure functions so they can be
 * snapshot-tested. A trajectory is one growing conversation:
 *
 *   system:    domain rules (abstract state format, invalid action -> failure state with
 *              reward 0, reward only at the final step), the environment, the reply format
 *   user:      the task, (earlier steps when the conversation starts mid-episode), retrieved
 *              real transitions, the current state and the action
 *   assistant: {"reasoning": ..., "next_state": {...}, "reward": ..., "done": ..., "valid": ...}
 *   user:      the next retrieved transitions and the next action (the state is the one the
 *              assistant just predicted, so it is not repeated)
 *   ...
 *
 * so WebLLM reuses its KV cache and only prefills each new turn.
 *
 * A prompt shows only what the agent sees (DESIGN.md section 4): the task as an {@link AgentTask}
 * (its instruction; never its goal), the states and actions so far, and retrieved real
 * transitions. The functions take `AgentTask`, read nothing of it but the instruction, and the
 * model reduces whatever it is given to `agentView(task)` before calling them.
 */
import type { AgentTask, Observation } from '../core/types.ts';
import type { Demonstration, HistoryStep } from './types.ts';

/** Size limits of the prompt; defaults in {@link DEFAULT_PROMPT_CONFIG}. */
export interface ExperiencePromptConfig {
  /** How many retrieved transitions go into each turn (the top-k). */
  topK: number;
  /** Characters kept of each state text inside a retrieved transition. */
  maxDemoChars: number;
  /** Admissible actions listed per retrieved next state (the first and last halves; the rest counted). */
  maxDemoActions: number;
  /** Characters kept of the current state text. */
  maxStateChars: number;
  /** Earlier steps restated when a conversation starts mid-episode. */
  historyWindow: number;
  /** Characters kept of each earlier state restated that way. */
  historyStateChars: number;
}

/** Defaults of {@link ExperiencePromptConfig}. */
export const DEFAULT_PROMPT_CONFIG: ExperiencePromptConfig = {
  topK: 3,
  maxDemoChars: 400,
  maxDemoActions: 12,
  maxStateChars: 4000,
  historyWindow: 4,
  historyStateChars: 300,
};

/** What the environment is, per built-in environment (other names get a generic line). */
const ENV_NOTES: Record<string, string> = {
  shop: [
    'The environment is an online shop (like WebShop). A state shows the instruction, the current page',
    '(search page, search results, or a product page with its options), the page elements as',
    '"[ID] description" lines, and the admissible actions. Actions are search[query] on the search page',
    'and click[label] for an element of the page. click[buy now] on a product page ends the episode:',
    'its reward is the fraction of the instruction\'s requirements (product type, attributes, options,',
    'price) the bought product meets, 1 when it meets all of them.',
  ].join('\n'),
  household: [
    'The environment is a household (like ALFWorld). A state shows the task, what the agent sees, where',
    'it is and what it holds. Actions are commands such as "go to countertop 1", "open fridge 1",',
    '"take apple 1 from countertop 1", "put apple 1 in/on fridge 1", "clean apple 1 with sinkbasin 1",',
    '"heat ...", "cool ...", "use desklamp 1", "examine ...", "look", "inventory". The episode ends with',
    'reward 1 as soon as the task is completed.',
  ].join('\n'),
};

/** The reply format, shown to the model (the constraint enforces it too). */
export const REPLY_FORMAT =
  '{"reasoning": "<why the action leads to the next state>", "next_state": {"text": "<the next state>", "actions": ["<admissible action>", ...]}, "reward": <number from 0 to 1>, "done": <true|false>, "valid": <true|false>}';

/** The reply format without reasoning (the `--no-reasoning` ablation). */
export const REPLY_FORMAT_NO_REASONING =
  '{"next_state": {"text": "<the next state>", "actions": ["<admissible action>", ...]}, "reward": <number from 0 to 1>, "done": <true|false>, "valid": <true|false>}';

/** The step reply format, with or without reasoning. */
export function replyFormat(reasoning: boolean): string {
  return reasoning ? REPLY_FORMAT : REPLY_FORMAT_NO_REASONING;
}

/**
 * The system message: DreamGym's domain rules for the environment of `env`. With `reasoning:
 * false` (the ablation of the paper's "without reasoning") the model is asked for the outcome
 * straight away, with no reasoning before it.
 */
export function experienceSystemPrompt(env: string, options: { reasoning?: boolean } = {}): string {
  const reasoning = options.reasoning ?? true;
  const note = ENV_NOTES[env] ?? `The environment is a text environment called "${env}".`;
  return [
    'You are the environment simulator of a reinforcement-learning agent. Given the task, the interaction so far,',
    'the current state and the agent\'s action, you predict what the environment does next.',
    '',
    note,
    '',
    'Rules:',
    '1. States are abstract text: a short description of what the agent observes, followed by the admissible',
    '   actions. Write the next state in the same format as the states you are shown.',
    '2. An action is valid when it is admissible in the current state. An invalid action changes nothing: the',
    '   next state is a failure state (the current state with a note that the action failed, and the same',
    '   admissible actions), "valid" is false and the reward is 0.',
    '3. The reward is outcome-based: it is 0 on every step except the final one ("done": true). On the final',
    '   step it is 1 when the task is completed (in the shop: the purchase\'s score), else 0.',
    '4. "done" is true only when the episode ends: the task is completed, or a final action (such as buying)',
    '   was taken.',
    '5. The retrieved transitions are real: follow them closely when they match the current state and action.',
    ...(reasoning
      ? ['6. Think first: "reasoning" explains briefly what the action does in the current state; then give the', '   next state, reward, done and valid.']
      : ['6. Give the next state, reward, done and valid directly, with no explanation.']),
    '',
    'Reply with one JSON object only, in this form:',
    replyFormat(reasoning),
  ].join('\n');
}

/** `text` cut to `max` characters, marking the cut. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}

/**
 * A retrieved or earlier state, compacted: without its task line ("Instruction: ..." in the
 * shop, "Your task is to: ..." in the household; that task is another episode's, or already
 * stated) and without an "Actions: ..." line (a transition lists its actions separately). Both
 * would eat the character budget of the clipped state.
 */
export function compactState(text: string): string {
  return text
    .split('\n')
    .filter((line, i) => !(i === 0 && /^(?:Instruction:|Your task is to:)/.test(line)) && !/^Actions: /.test(line))
    .join('\n');
}

/** The state as shown in a prompt: its text, then its admissible actions. */
export function stateBlock(observation: Observation, maxChars: number): string {
  const actions = observation.actions.length > 0 ? observation.actions.join(' | ') : '(none)';
  return `${clip(observation.text, maxChars)}\nAdmissible actions: ${actions}`;
}

/** The top-k demonstrations, best first (by score when given, else in the order received). */
export function selectDemos(demos: readonly Demonstration[], topK: number): Demonstration[] {
  const indexed = demos.map((d, i) => ({ d, i }));
  indexed.sort((a, b) => (b.d.score ?? -Infinity) - (a.d.score ?? -Infinity) || a.i - b.i);
  return indexed.slice(0, topK).map((x) => x.d);
}

/** `actions` joined with " | ", at most `max` of them: the first and last halves, the rest counted. */
export function listActions(actions: readonly string[], max: number): string {
  if (actions.length === 0) return '(none)';
  if (actions.length <= max) return actions.join(' | ');
  const head = Math.ceil(max / 2);
  const tail = Math.floor(max / 2);
  return `${actions.slice(0, head).join(' | ')} | … (${actions.length - head - tail} more) … | ${actions.slice(actions.length - tail).join(' | ')}`;
}

/** Identifies a demonstration, so a conversation shows each one once. */
export function demoKey(d: Demonstration): string {
  return `${d.state}\u0000${d.action}\u0000${d.nextState}`;
}

/**
 * The block of retrieved real transitions (empty string when there are none). Transitions whose
 * key is in `shown` (already in the conversation) are not repeated.
 */
export function demosBlock(demos: readonly Demonstration[], config: ExperiencePromptConfig, shown: ReadonlySet<string> = new Set()): string {
  const chosen = selectDemos(demos, config.topK);
  const fresh = chosen.filter((d) => !shown.has(demoKey(d)));
  if (fresh.length === 0) return chosen.length > 0 ? 'The real transitions retrieved for this step were shown earlier.' : '';
  const parts = fresh.map((d, i) =>
    [
      `Transition ${i + 1}:`,
      `State: ${clip(compactState(d.state), config.maxDemoChars)}`,
      `Action: ${d.action}`,
      `Outcome: valid ${d.valid}, reward ${d.reward}, done ${d.done}`,
      `Next state: ${clip(compactState(d.nextState), config.maxDemoChars)}`,
      `Next admissible actions: ${listActions(d.nextActions, config.maxDemoActions)}`,
    ].join('\n'),
  );
  const head = fresh.length < chosen.length ? `Real transitions retrieved for similar states and actions (${chosen.length - fresh.length} more shown earlier):` : 'Real transitions retrieved for similar states and actions:';
  return [head, ...parts].join('\n\n');
}

/** The earlier steps, restated when a conversation starts mid-episode (empty string when none). */
export function historyBlock(history: readonly HistoryStep[], config: ExperiencePromptConfig): string {
  if (history.length === 0 || config.historyWindow === 0) return '';
  const shown = history.slice(-config.historyWindow);
  const skipped = history.length - shown.length;
  const lines = ['Interaction so far:'];
  if (skipped > 0) lines.push(`(${skipped} earlier step${skipped === 1 ? '' : 's'} not shown)`);
  shown.forEach((h, i) => {
    const n = skipped + i + 1;
    lines.push(`Step ${n} state: ${clip(compactState(h.observation.text), config.historyStateChars)}`, `Step ${n} action: ${h.action}`);
  });
  return lines.join('\n');
}

/** What a step turn needs. */
export interface StepTurnInput {
  /** What the agent sees of the task (only its instruction is shown). */
  task: AgentTask;
  history: readonly HistoryStep[];
  observation: Observation;
  action: string;
  demos: readonly Demonstration[];
  /** Transitions already shown in this conversation (not repeated). */
  shownDemos?: ReadonlySet<string>;
}

const ASK = 'Predict the outcome of this action. Reply with the JSON object only.';

/** The first user turn of a conversation: everything, stated in full. */
export function firstStepTurn(input: StepTurnInput, config: ExperiencePromptConfig): string {
  const blocks = [`Task: ${input.task.instruction}`];
  const history = historyBlock(input.history, config);
  if (history) blocks.push(history);
  const demos = demosBlock(input.demos, config);
  if (demos) blocks.push(demos);
  blocks.push(`Current state:\n${stateBlock(input.observation, config.maxStateChars)}`, `Action: ${input.action}`, ASK);
  return blocks.join('\n\n');
}

/**
 * A later user turn of the same conversation. When the state is the one the model just predicted
 * (`stateIsLastPrediction`), it is not repeated.
 */
export function followUpStepTurn(input: StepTurnInput, config: ExperiencePromptConfig, stateIsLastPrediction: boolean): string {
  const blocks: string[] = [];
  const demos = demosBlock(input.demos, config, input.shownDemos);
  if (demos) blocks.push(demos);
  blocks.push(stateIsLastPrediction ? 'Current state: the state in your previous reply.' : `Current state:\n${stateBlock(input.observation, config.maxStateChars)}`);
  blocks.push(`Action: ${input.action}`, ASK);
  return blocks.join('\n\n');
}

/** The user turn after an unusable reply; `format` is the form asked for (a step's by default, {@link RESET_FORMAT} for a reset). */
export function correctionTurn(problem: string, format: string = REPLY_FORMAT): string {
  return `Your reply could not be used: ${problem}\nReply again with one JSON object only, in this form:\n${format}`;
}

/** The reply format of a reset (the initial state of an episode). */
export const RESET_FORMAT = '{"reasoning": "<what the start of this task looks like>", "state": {"text": "<the initial state>", "actions": ["<admissible action>", ...]}}';

/** The reply format of a reset without reasoning. */
export const RESET_FORMAT_NO_REASONING = '{"state": {"text": "<the initial state>", "actions": ["<admissible action>", ...]}}';

/** The reset reply format, with or without reasoning. */
export function resetFormat(reasoning: boolean): string {
  return reasoning ? RESET_FORMAT : RESET_FORMAT_NO_REASONING;
}

/** The user turn asking for the initial state of an episode on `task` (only its instruction is shown); `reasoning: false` asks for no reasoning. */
export function resetTurn(task: AgentTask, demos: readonly Demonstration[], config: ExperiencePromptConfig, reasoning = true): string {
  const blocks = [`Task: ${task.instruction}`];
  const chosen = selectDemos(demos, config.topK);
  if (chosen.length > 0) {
    blocks.push(['Initial states of similar real episodes:', ...chosen.map((d, i) => `Example ${i + 1}:\n${clip(compactState(d.state), config.maxDemoChars)}`)].join('\n\n'));
  }
  blocks.push(`A new episode starts on this task. Write its initial state. Reply with one JSON object only, in this form:\n${resetFormat(reasoning)}`);
  return blocks.join('\n\n');
}
