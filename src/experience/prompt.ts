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
 * The system message: DreamGym's domain rules for the environment of `env`, introduced by what the
 * environment declares of itself (`description`, else a generic line). With `reasoning:
 * false` (the ablation of the paper's "without reasoning") the model is asked for the outcome
 * straight away, with no reasoning before it.
 */
export function experienceSystemPrompt(env: string, options: { reasoning?: boolean; description?: string } = {}): string {
  const reasoning = options.reasoning ?? true;
  const described = options.description?.trim().replace(/\.$/, '') ?? '';
  const note = described === '' ? `The environment is a text environment called "${env}".` : `The environment is a text environment called "${env}": ${described}.`;
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
    '   step it is 1 when the task is completed, else 0 (where the environment grades it: its score).',
    '4. "done" is true only when the episode ends: the task is completed, or a final action was taken.',
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

/** How a state's task line reads: the instruction it shows, and the label before it ("Goal: "). */
export interface TaskLine {
  instruction: string;
  label: string;
}

/**
 * The task line of `state` for `instruction`: the label is the text before the instruction on the
 * first line that shows it ('' when that line is the instruction alone, or none shows it).
 */
export function taskLine(state: string, instruction: string): TaskLine {
  const line = instruction === '' ? undefined : state.split('\n').find((l) => l.includes(instruction));
  return { instruction, label: line === undefined ? '' : line.slice(0, line.indexOf(instruction)).trimStart() };
}

/**
 * The label the first lines of `states` share, up to their last ": " ("Goal: " of "Goal: a" and
 * "Goal: b"); '' for fewer than two states or none shared.
 */
export function sharedLabel(states: readonly string[]): string {
  if (states.length < 2) return '';
  const firsts = states.map((s) => s.split('\n', 1)[0] ?? '');
  let common = firsts[0] ?? '';
  for (const f of firsts) while (!f.startsWith(common)) common = common.slice(0, -1);
  const end = common.lastIndexOf(': ');
  return end < 0 ? '' : common.slice(0, end + 2);
}

/**
 * A retrieved or earlier state, compacted: without a first line that is a task line (it shows
 * `task.instruction`, or starts with the episode's task label: another episode's task), already
 * stated or not this episode's, and without an "Actions: ..." line (a transition lists its
 * actions separately). Both would eat the character budget of the clipped state.
 */
export function compactState(text: string, task: TaskLine = { instruction: '', label: '' }): string {
  const isTaskLine = (line: string): boolean => (task.instruction !== '' && line.includes(task.instruction)) || (task.label.trim() !== '' && line.trimStart().startsWith(task.label));
  return text
    .split('\n')
    .filter((line, i) => !(i === 0 && isTaskLine(line)) && !/^Actions: /.test(line))
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
export function demosBlock(demos: readonly Demonstration[], config: ExperiencePromptConfig, shown: ReadonlySet<string> = new Set(), task?: TaskLine): string {
  const chosen = selectDemos(demos, config.topK);
  const fresh = chosen.filter((d) => !shown.has(demoKey(d)));
  if (fresh.length === 0) return chosen.length > 0 ? 'The real transitions retrieved for this step were shown earlier.' : '';
  const parts = fresh.map((d, i) =>
    [
      `Transition ${i + 1}:`,
      `State: ${clip(compactState(d.state, task), config.maxDemoChars)}`,
      `Action: ${d.action}`,
      `Outcome: valid ${d.valid}, reward ${d.reward}, done ${d.done}`,
      `Next state: ${clip(compactState(d.nextState, task), config.maxDemoChars)}`,
      `Next admissible actions: ${listActions(d.nextActions, config.maxDemoActions)}`,
    ].join('\n'),
  );
  const head = fresh.length < chosen.length ? `Real transitions retrieved for similar states and actions (${chosen.length - fresh.length} more shown earlier):` : 'Real transitions retrieved for similar states and actions:';
  return [head, ...parts].join('\n\n');
}

/** The earlier steps, restated when a conversation starts mid-episode (empty string when none). */
export function historyBlock(history: readonly HistoryStep[], config: ExperiencePromptConfig, task?: TaskLine): string {
  if (history.length === 0 || config.historyWindow === 0) return '';
  const shown = history.slice(-config.historyWindow);
  const skipped = history.length - shown.length;
  const lines = ['Interaction so far:'];
  if (skipped > 0) lines.push(`(${skipped} earlier step${skipped === 1 ? '' : 's'} not shown)`);
  shown.forEach((h, i) => {
    const n = skipped + i + 1;
    lines.push(`Step ${n} state: ${clip(compactState(h.observation.text, task), config.historyStateChars)}`, `Step ${n} action: ${h.action}`);
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
  const task = taskLine(input.observation.text, input.task.instruction);
  const history = historyBlock(input.history, config, task);
  if (history) blocks.push(history);
  const demos = demosBlock(input.demos, config, new Set(), task);
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
  const demos = demosBlock(input.demos, config, input.shownDemos, taskLine(input.observation.text, input.task.instruction));
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
    const line = { instruction: task.instruction, label: sharedLabel(chosen.map((d) => d.state)) };
    blocks.push(['Initial states of similar real episodes:', ...chosen.map((d, i) => `Example ${i + 1}:\n${clip(compactState(d.state, line), config.maxDemoChars)}`)].join('\n\n'));
  }
  blocks.push(`A new episode starts on this task. Write its initial state. Reply with one JSON object only, in this form:\n${resetFormat(reasoning)}`);
  return blocks.join('\n\n');
}
