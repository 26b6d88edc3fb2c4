/**
 * The retrieval experience model: no LLM, no download. It stands in for the environment using
 * only what the agent sees (the instruction, the states and actions so far) and stored real
 * transitions; it never reads a task's goal (every task is reduced to `agentView`) and never
 * imports or calls an environment's code (a test walks its import graph).
 *
 * One step, in order:
 * 1. validity: the action must be one of the state's admissible actions (or fill a free-text
 *    action the state lists, see `isAdmissible`);
 * 2. reward and done, from evidence (`judge`): only an action whose kind ended or completed real
 *    episodes can end this one (and not when nearly all of those endings were one other action);
 *    a learned reward model (`reward-model.ts`) reads whether the state, the action and the
 *    actions so far show what the instruction asks for; below its threshold the answer is
 *    "cannot tell": reward 0 and the episode goes on;
 * 3. the next state, from the first that applies:
 *    - episode memory: the same action taken earlier in this episode shows what it showed then;
 *    - returns: an action that in the data reliably goes back to an earlier state of its
 *      episode (a "back" button) goes back to that state of this one;
 *    - the same (state, action) stored in the data: its next state;
 *    - the nearest stored transition of the same verb (same task first, then the same action,
 *      then the same template; cosine similarity of the embedding of state + action), its
 *      entities rewritten for this task, action and state; when the neighbour's action changed
 *      little of its state's admissible actions, that edit is applied to this state's actions
 *      rather than copying the neighbour's list.
 * 4. grounding (./grounding.ts): this world's own recorded step is a fact; any other outcome is a
 *    prediction whose support (where it came from, how similar the evidence, how the candidates
 *    agree) is mapped to a probability of being right, calibrated on held-out recorded episodes.
 *    Below the calibrated threshold the step is doubtful and costs part of the halting penalty;
 *    far below it the step is unknown: the episode halts with the penalty and no success. Where
 *    the data does not cover a situation the simulator says so instead of guessing;
 *    `npx dreamgym fidelity` measures both against trivial simulators.
 */
import { carriedAfter, completeArrival, learnArrivalRules, moveOf, placeKind, placeState, type ArrivalRules } from './arrival.ts';
import { learnArrivalTexts, withArrivalText, type ArrivalTexts } from './arrival-texts.ts';
import { carryStepOf, learnEmptyListWord, learnPutDownPickUps, lineKey, remainingPickUps, replaceSentence, sentenceAt, sentenceKey, sentencesOf, withPlaceContents, withPutDownPickUps, type PutDownPickUps } from './carried-things.ts';
import { learnNamedThings, pickUpOf, showingKey, thingToShow, type NamedThingRules } from './named-things.ts';
import { transitionText, type Embedder } from '../../core/embedding.ts';
import { agentView, type AgentTask, type Observation, type Task, type Trajectory } from '../../core/types.ts';
import { RetrievalIndex } from '../../replay/retrieval.ts';
import { isAdmissible, learnFreeTextActions, type FreeTextActions } from '../admissible.ts';
import { abstractText, actionSignature, actionsOnPage, choiceLists, evidenceFeatures, EVIDENCE_DIM, instructionWords, namedChoices, openedRank, uncoveredWords, unofferedChoices, withoutInstruction } from './evidence.ts';
import { tokenize } from '../../policy/hashed-embedder.ts';
import { RewardModel, type RewardExample, type RewardModelConfig } from './reward-model.ts';
import { actionTemplate, actionVerb, alignEntities, applySubstitution, buildSubstitution, carriedAlignment, instructionAlignment, listingAlignment, requoteState, withSwaps, type Substitution } from './substitution.ts';
import type { Demonstration, ExperienceModel, ExperienceStep, ExperienceStepRequest, HistoryStep } from '../types.ts';
import { calibrateSuccessGate, calibrationFolds, groundedStep, HALT_SHARE, haltPenalty, type GroundedStep, SupportCalibrator, type EvidenceSource, type SuccessExample, type SuccessGate, type SupportExample, type SupportFeatures } from './grounding.ts';

/** One real transition the model learns from. `next` is null after an episode's last step. */
export interface RealTransition {
  /** What the agent saw of the task (the goal is never kept). */
  task: AgentTask;
  state: Observation;
  action: string;
  next: Observation | null;
  reward: number;
  done: boolean;
  valid: boolean;
  /** Actions taken earlier in the episode, oldest first. */
  history: readonly string[];
  /** The actions taken on this page (see `actionsOnPage`). */
  pageActions: readonly string[];
  /** Where the item last opened stood in its list (see `openedRank`). */
  rank: number;
  /** Whether this step completed its episode successfully. */
  success: boolean;
  /**
   * When the next state equals an earlier state of the episode (same text without the
   * instruction, same actions): that state's step index. Undefined otherwise.
   */
  returnsTo?: number;
  /** Whether that earlier state is the previous page: the latest state whose actions differ from this state's. */
  returnsToPreviousPage?: boolean;
  /**
   * Sentences of the next state (as line and sentence keys, see ./carried-things.ts) that the
   * episode's first state showed and this step's state did not: brought back from the start
   * (an action that repeats what the first state listed).
   */
  fromFirstState?: readonly { line: string; key: string }[];
}

/** Settings of the retrieval experience model. */
export interface RetrievalModelConfig {
  /** Neighbours examined per step. Default 16. */
  k: number;
  /** An action kind that ended at least this fraction of its occurrences in the data always ends episodes. Default 0.5. */
  terminalRate: number;
  /** An action that may complete a task does so when the reward model's score reaches this. Default 0.5. */
  successThreshold: number;
  /** A return pattern is followed when at least this share of the action kind's occurrences show it. Default 0.8. */
  returnRate: number;
  /**
   * 'nearest' (the model); 'farthest' ranks neighbours backwards and exists only so that tests
   * and the fidelity report can show that the measures notice a broken ranking.
   */
  neighbourOrder: 'nearest' | 'farthest';
  /**
   * False drops the reward model and the evidence ranges (reward and done from the action kind's
   * rates alone): an ablation that shows what judging from evidence is worth.
   */
  useRewardModel: boolean;
  /** Reward model training settings. */
  rewardModel: Partial<RewardModelConfig>;
  /**
   * Whether a thing the instruction names is shown at one place of a world the data never showed
   * (see ./named-things.ts). Default true; false is the ablation the tests and fidelity compare.
   */
  namedThings: boolean;
  /**
   * Whether the place rules learned from moves act (./arrival.ts): the actions a place offers for
   * what the agent holds, and what builds on them (named things, arrival texts, a place's
   * contents). Default true; false is the ablation the fidelity figures compare.
   */
  placeRules: boolean;
  /** Whether a return to a place the agent changed opens with what a move says on arrival (./arrival-texts.ts). Default true; false is the ablation. */
  arrivalTexts: boolean;
  /** Whether a place's contents follow the episode's pick-ups and put-downs (./carried-things.ts). Default true; false is the ablation. */
  placeContents: boolean;
  /**
   * Whether a success needs the kinds of action every recorded success of an instruction naming
   * the same word took (see `learnRequiredKinds`). Default true; false is the ablation.
   */
  requiredKinds: boolean;
  /**
   * Whether every step is grounded (see ./grounding.ts): its support by the data is calibrated on
   * held-out recorded episodes, an unknown step halts the episode with a penalty, and a success
   * needs recorded successes like it. Default true; false is the ablation.
   */
  grounding: boolean;
  /** Folds of the recorded episodes for that calibration (cross-fitting). Default 3. */
  calibrationFolds: number;
  /**
   * What a step whose support is below the threshold but not far below does (see `groundedStep`):
   * `penalize` goes on with a share of the halting penalty, `halt` halts like any unknown step.
   * Default `penalize`.
   */
  doubtfulSteps: 'penalize' | 'halt';
  /**
   * What the environment declares of its free-text actions (see `FreeTextActions`); the data adds
   * those it shows. Default none.
   */
  freeTextActions: readonly string[];
}

export const DEFAULT_RETRIEVAL_MODEL_CONFIG: RetrievalModelConfig = {
  k: 16,
  terminalRate: 0.5,
  successThreshold: 0.5,
  returnRate: 0.8,
  neighbourOrder: 'nearest',
  useRewardModel: true,
  rewardModel: {},
  namedThings: true,
  placeRules: true,
  arrivalTexts: true,
  placeContents: true,
  requiredKinds: true,
  grounding: true,
  calibrationFolds: 3,
  doubtfulSteps: 'penalize',
  freeTextActions: [],
};

/** Text of the observation after a step the data does not support (the episode halts there). */
export const UNKNOWN_STEP_TEXT = 'The simulator cannot tell what happens next: the recorded data does not cover this step.';

/** What the grounding was calibrated on and how well its parts do on held-out recorded episodes. */
export interface GroundingReport {
  /** Folds of the cross-fitting (0 when the data was too small to hold any episode out). */
  folds: number;
  /** Held-out recorded steps the support map was fitted on. */
  heldOutSteps: number;
  /** Share of them the simulator (built without their episode's fold) predicted right. */
  heldOutRight: number;
  /** Calibrated support under which a step is doubtful (see `doubtfulSteps`). */
  threshold: number;
  /** Calibrated support under which a step is unknown and halts its episode. */
  haltThreshold: number;
  /** Share of held-out recorded steps that would have been unknown (halted). */
  heldOutUnknown: number;
  /** Share of held-out recorded steps below the threshold that would have gone on with a penalty (see `doubtfulSteps`). */
  heldOutDoubtful: number;
  /** Reward of a halted episode. */
  haltPenalty: number;
  /** The evidence-bound reward: its similarity threshold and its precision and recall on held-out recorded episodes. */
  success: SuccessGate;
  /** Held-out steps by where their prediction came from: how many, the share right, the share unknown. Most steps first. */
  bySource: { source: EvidenceSource; steps: number; right: number; unknown: number }[];
}

/** A step's outcome before grounding, with what it was read from. */
interface RawOutcome {
  step: ExperienceStep;
  features: SupportFeatures;
  /** Whether the verdict called it a success (before the evidence-bound gate). */
  granted: boolean;
  /** Similarity to recorded successes of its kind (computed where granted). */
  successSimilarity: number;
}

/** Where a next state came from and how well the candidates agree. */
interface EvidenceUsed {
  source: EvidenceSource;
  similarity: number;
  agreement: number;
}

/** Text of the observation that follows an episode's last step (the data does not record it). */
export const EPISODE_OVER_TEXT = 'The episode is over.';

/** Thrown when the model is built from no usable data. */
export class RetrievalDataError extends Error {
  override name = 'RetrievalDataError';
}

/**
 * The steps of one verb whose episode went on: a step that ended its episode has no next state to
 * give. Where the nearest recorded steps of an unseen put had all completed tasks like this one,
 * the state once stayed as it was, so a thing put down unready stayed in hand ("You pick up ..."
 * again): a free step inside the simulator that costs the thing in the real environment.
 */
interface VerbIndex {
  index: RetrievalIndex;
  /** Row seq -> transition position. */
  rows: number[];
}

/** How an action kind behaved in the data. */
interface KindStats {
  count: number;
  /** Occurrences that ended their episode. */
  ends: number;
  /** Occurrences that completed their episode successfully. */
  successes: number;
  /** The actions (exactly as taken) that ended or completed an episode, with how often. */
  enders: Map<string, number>;
  /** Return patterns (`rel:D` steps back, `abs:J` the J-th state) and how often each occurred. */
  returns: Map<string, number>;
  /**
   * The range of evidence (`evidenceFeatures`, each coordinate) that successful occurrences
   * showed: from the 1st to the 99th percentile, so that one odd episode does not open the gate.
   */
  evidenceFloor: Float32Array | null;
  evidenceCeiling: Float32Array | null;
  /** The most choices named by the instruction and not offered (`unofferedChoices`) that a successful occurrence showed (99th percentile). */
  unofferedCeiling: number;
}

const sameActions = (a: Observation, b: Observation): boolean => a.actions.length === b.actions.length && a.actions.every((x, i) => x === b.actions[i]);

const sameScreen = (a: Observation, b: Observation, instruction: string): boolean =>
  sameActions(a, b) &&
  withoutInstruction(a.text, instruction) === withoutInstruction(b.text, instruction);

/**
 * Index of the page before the one at `at`, on the episode's stack of pages: a state with the
 * actions of the page on top replaces it (the same page, changed), one with the actions of a page
 * lower down goes back to it (the pages above it are left), any other opens a new page. Read as
 * the latest state with other actions instead, going back twice returned to the page just left.
 */
function previousPage(states: readonly Observation[], at: number): number | undefined {
  const stack: number[] = [];
  for (let i = 0; i <= at && i < states.length; i++) {
    const state = states[i] as Observation;
    let k = stack.length - 1;
    while (k >= 0 && !sameActions(states[stack[k] as number] as Observation, state)) k--;
    if (k < 0) {
      stack.push(i);
      continue;
    }
    stack.length = k + 1;
    stack[k] = i;
  }
  return stack.length >= 2 ? stack[stack.length - 2] : undefined;
}

/** Flattens trajectories into real transitions, pairing each with its task's visible part. Unknown tasks are an error. */
export function transitionsFromTrajectories(tasks: readonly (Task | AgentTask)[], trajectories: readonly Trajectory[]): RealTransition[] {
  const byId = new Map(tasks.map((t) => [t.id, agentView(t)]));
  const out: RealTransition[] = [];
  for (const traj of trajectories) {
    const task = byId.get(traj.taskId);
    if (!task) throw new RetrievalDataError(`trajectory ${JSON.stringify(traj.id)} refers to unknown task ${JSON.stringify(traj.taskId)}`);
    const history: string[] = [];
    const atFirst = traj.steps[0] ? sentencesByLine(traj.steps[0].observation, task.instruction) : new Map<string, Set<string>>();
    traj.steps.forEach((step, i) => {
      const pageActions = actionsOnPage(traj.steps.slice(0, i), step.observation);
      const next = traj.steps[i + 1]?.observation ?? null;
      let returnsTo: number | undefined;
      if (next) {
        for (let j = i; j >= 0; j--) {
          if (sameScreen(next, (traj.steps[j] as (typeof traj.steps)[number]).observation, task.instruction)) {
            returnsTo = j;
            break;
          }
        }
      }
      const t: RealTransition = {
        task,
        state: step.observation,
        action: step.action,
        next,
        reward: step.reward,
        done: step.done,
        valid: step.valid,
        history: history.slice(),
        pageActions,
        rank: openedRank(traj.steps.slice(0, i)),
        success: step.done && traj.success && i === traj.steps.length - 1,
      };
      const fromFirst = next && i > 0 ? sentencesFromFirstState(atFirst, step.observation, next, task.instruction) : [];
      if (fromFirst.length > 0) t.fromFirstState = fromFirst;
      if (returnsTo !== undefined) {
        t.returnsTo = returnsTo;
        const page = previousPage(traj.steps.slice(0, i + 1).map((s) => s.observation), i);
        if (page !== undefined && sameScreen(next as Observation, traj.steps[page]?.observation as Observation, task.instruction)) t.returnsToPreviousPage = true;
      }
      out.push(t);
      history.push(step.action);
    });
  }
  return out;
}

/** An action kind needs this many occurrences before its own statistics are trusted. */
const MIN_KIND_COUNT = 5;

const exactKey = (state: string, action: string): string => transitionText(state, action);

/**
 * The text a transition is retrieved by: the state without its instruction line, and the action.
 * Keying on the instruction would favour transitions of tasks that ask for the same thing, whose
 * next states (where the expert found it) make the object asked for appear far more often than
 * it does.
 */
const retrievalText = (state: string, action: string, instruction: string): string => transitionText(withoutInstruction(state, instruction), action);
const taskActionKey = (taskId: string, action: string): string => `${taskId}\u0000${action}`;
const recordedKey = (taskId: string, screen: string, action: string): string => `${taskId}\u0000${screen}\u0000${action}`;

/** The three kinds an action belongs to, most specific first. */
function kindKeys(action: string, instruction: string): [exact: string, signature: string, template: string] {
  return [`a:${action}`, `s:${actionSignature(action, instructionWords(instruction))}`, `t:${actionTemplate(action).template}`];
}

/** Whether an action changes little of the admissible actions (so its edit transfers across states). */
function editTransfers(state: Observation, next: Observation): boolean {
  const a = new Set(state.actions);
  const b = new Set(next.actions);
  let inter = 0;
  for (const x of a) if (b.has(x)) inter++;
  const union = a.size + b.size - inter;
  return union > 0 && inter / union >= 0.5;
}

/** The configuration with defaults filled in, its ranges checked. */
function checkedConfig(config: Partial<RetrievalModelConfig>): RetrievalModelConfig {
  const cfg = { ...DEFAULT_RETRIEVAL_MODEL_CONFIG, ...config };
  if (!(Number.isInteger(cfg.k) && cfg.k > 0)) throw new RangeError(`k must be a positive integer, got ${cfg.k}`);
  for (const key of ['terminalRate', 'successThreshold', 'returnRate'] as const) {
    if (!(cfg[key] >= 0 && cfg[key] <= 1)) throw new RangeError(`${key} must be in [0, 1], got ${cfg[key]}`);
  }
  if (!(Number.isInteger(cfg.calibrationFolds) && cfg.calibrationFolds >= 2)) throw new RangeError(`calibrationFolds must be an integer >= 2, got ${cfg.calibrationFolds}`);
  if (cfg.neighbourOrder !== 'nearest' && cfg.neighbourOrder !== 'farthest') {
    throw new RangeError(`neighbourOrder must be 'nearest' or 'farthest', got ${JSON.stringify(cfg.neighbourOrder)}`);
  }
  return cfg;
}

const pushTo = <K, V>(map: Map<K, V[]>, key: K, value: V): void => {
  (map.get(key) ?? map.set(key, []).get(key))?.push(value);
};

/** The transitions by exact (state, action), by (task, action), by action and by verb, and each action kind's statistics. */
function indexTransitions(usable: readonly RealTransition[]) {
  const exact = new Map<string, number>();
  const byVerb = new Map<string, number[]>();
  const kinds = new Map<string, KindStats>();
  const byTaskAction = new Map<string, number[]>();
  const byAction = new Map<string, number[]>();
  usable.forEach((t, i) => {
    const key = exactKey(t.state.text, t.action);
    if (t.next && !exact.has(key)) exact.set(key, i);
    if (t.next) {
      pushTo(byTaskAction, taskActionKey(t.task.id, t.action), i);
      pushTo(byAction, t.action, i);
      pushTo(byVerb, actionVerb(t.action), i);
    }
    const step = t.history.length;
    for (const k of kindKeys(t.action, t.task.instruction)) {
      const s = kinds.get(k) ?? { count: 0, ends: 0, successes: 0, enders: new Map<string, number>(), returns: new Map<string, number>(), evidenceFloor: null, evidenceCeiling: null, unofferedCeiling: 0 };
      s.count++;
      if (t.done && !t.next) s.ends++;
      if (t.success) s.successes++;
      if ((t.done && !t.next) || t.success) s.enders.set(t.action, (s.enders.get(t.action) ?? 0) + 1);
      if (t.returnsTo !== undefined) {
        const patterns = [`rel:${step - t.returnsTo}`, `abs:${t.returnsTo}`];
        if (t.returnsToPreviousPage) patterns.push('page:1');
        for (const pattern of patterns) s.returns.set(pattern, (s.returns.get(pattern) ?? 0) + 1);
      }
      kinds.set(k, s);
    }
  });
  return { exact, byVerb, kinds, byTaskAction, byAction };
}

/** Values option lists offer, those an instruction naming them reliably asks for, and instruction words successes always show. */
function learnListValues(usable: readonly RealTransition[]): { known: Set<string>; reliable: Set<string>; alwaysShown: Set<string> } {
  // Values that option lists offered anywhere in the data: an instruction naming one asks for a choice.
  const known = new Set<string>();
  for (const t of usable) for (const e of choiceLists(withoutInstruction(t.state.text, t.task.instruction), t.state.actions).keys()) known.add(tokenize(e).join(' '));
  // Only values that every real success whose instruction named them offered, at least twice:
  // "large" is a size in some lists but in "large capacity" it asks for no choice.
  const namedAt = new Map<string, { named: number; offered: number }>();
  for (const t of usable) {
    if (!t.success) continue;
    const here = new Set(t.state.actions.flatMap((a) => actionTemplate(a).entities).map((e) => tokenize(e).join(' ')));
    for (const v of namedChoices(t.task.instruction, known)) {
      const c = namedAt.get(v) ?? { named: 0, offered: 0 };
      c.named++;
      if (here.has(v)) c.offered++;
      namedAt.set(v, c);
    }
  }
  // Instruction words that every real success showed somewhere (on screen, in its action or in
  // the actions so far), in enough successes (fewer said too little and rejected real successes):
  // "red" in "bring a red box" is always on screen when it succeeds; "two" never is.
  const wordSeen = new Map<string, { named: number; shown: number }>();
  for (const t of usable) {
    if (!t.success) continue;
    for (const w of uncoveredWords(t.task.instruction, [withoutInstruction(t.state.text, t.task.instruction), t.action, ...t.history], true)) {
      const c = wordSeen.get(w.word) ?? { named: 0, shown: 0 };
      c.named++;
      if (w.shown) c.shown++;
      wordSeen.set(w.word, c);
    }
  }
  const alwaysShown = new Set([...wordSeen].filter(([, c]) => c.named >= 10 && c.shown === c.named).map(([w]) => w));
  return { known, reliable: new Set([...namedAt].filter(([, c]) => c.named >= 2 && c.offered === c.named).map(([v]) => v)), alwaysShown };
}

/** Fewest recorded successes naming a word before the kinds of action they all took are required of it. */
const MIN_REQUIRING_SUCCESSES = 2;
/** Most share of the successes not naming the word that took such a kind: more, and the word is not what asks for it. */
const MAX_ELSEWHERE_SHARE = 0.2;

/**
 * Kinds of action (templates: an action with its entities blanked) that every recorded success of
 * an instruction naming a word took, and few successes of other instructions took, by the word's
 * stem: "urgent" may ask for an escalation that no action spells "urgent". A contrast, so that it
 * holds on a few successes: a kind common to all successes requires nothing. Only templates with
 * an entity: an action that names no entity is a kind of its own, and a word's few successes
 * share one of those by chance too often.
 */
function learnRequiredKinds(usable: readonly RealTransition[]): Map<string, Set<string>> {
  const successes = usable.filter((t) => t.success);
  const kindsOf = successes.map((t) => new Set([...t.history, t.action].map((a) => actionTemplate(a).template).filter((k) => k.includes('{}'))));
  const wordsOf = successes.map((t) => instructionWords(t.task.instruction));
  const required = new Map<string, Set<string>>();
  for (const word of new Set(wordsOf.flatMap((w) => [...w]))) {
    const naming = successes.map((_, i) => i).filter((i) => (wordsOf[i] as Set<string>).has(word));
    const others = successes.length - naming.length;
    // Without successes of other instructions to contrast with, nothing tells what the word asks for.
    if (naming.length < MIN_REQUIRING_SUCCESSES || others === 0) continue;
    const shared = [...(kindsOf[naming[0] as number] as Set<string>)].filter((k) => naming.every((i) => (kindsOf[i] as Set<string>).has(k)));
    const kinds = shared.filter((k) => kindsOf.filter((ks, i) => ks.has(k) && !(wordsOf[i] as Set<string>).has(word)).length <= MAX_ELSEWHERE_SHARE * others);
    if (kinds.length > 0) required.set(word, new Set(kinds));
  }
  return required;
}

/** Sets each kind's evidence range and unoffered-choices ceiling from its successful steps. */
function addSuccessEvidence(usable: readonly RealTransition[], kinds: Map<string, KindStats>, listValues: { known: ReadonlySet<string>; reliable: ReadonlySet<string> }): void {
  const successEvidence = new Map<string, Float32Array[]>();
  const successUnoffered = new Map<string, number[]>();
  for (const t of usable) {
    if (!t.success) continue;
    const f = evidenceFeatures(t.task.instruction, t.state.text, t.action, t.history, t.pageActions, t.state.actions, t.rank);
    const unoffered = unofferedChoices(t.task.instruction, withoutInstruction(t.state.text, t.task.instruction), t.state.actions, listValues.known, listValues.reliable);
    for (const k of kindKeys(t.action, t.task.instruction)) {
      pushTo(successEvidence, k, f);
      pushTo(successUnoffered, k, unoffered);
    }
  }
  for (const [k, list] of successEvidence) {
    const s = kinds.get(k);
    if (!s) continue;
    const unoffered = (successUnoffered.get(k) ?? [0]).sort((a, b) => a - b);
    s.unofferedCeiling = unoffered[Math.ceil(0.99 * (unoffered.length - 1))] ?? 0;
    s.evidenceFloor = new Float32Array(EVIDENCE_DIM);
    s.evidenceCeiling = new Float32Array(EVIDENCE_DIM);
    for (let j = 0; j < EVIDENCE_DIM; j++) {
      const sorted = list.map((f) => f[j] as number).sort((a, b) => a - b);
      s.evidenceFloor[j] = sorted[Math.floor(0.01 * (sorted.length - 1))] as number;
      s.evidenceCeiling[j] = sorted[Math.ceil(0.99 * (sorted.length - 1))] as number;
    }
  }
}

/** A retrieval index per verb over its continuing transitions' vectors. */
function verbIndexes(byVerb: ReadonlyMap<string, number[]>, vectors: readonly Float32Array[], dim: number): Map<string, VerbIndex> {
  const verbs = new Map<string, VerbIndex>();
  for (const [verb, positions] of byVerb) {
    const index = new RetrievalIndex(dim, { initialRows: positions.length });
    positions.forEach((pos, seq) => index.add({ seq, source: 'real', taskId: '', vector: vectors[pos] as Float32Array }));
    verbs.set(verb, { index, rows: positions });
  }
  return verbs;
}

/** Initial states: the first step of each episode, keyed by the task instruction. */
async function initialStates(usable: readonly RealTransition[], embedder: Embedder): Promise<{ index: RetrievalIndex; states: RealTransition[]; templates: ReadonlySet<string> }> {
  const states = usable.filter((t) => t.history.length === 0);
  const instrVectors = await embedder.embed(states.map((t) => t.task.instruction));
  const index = new RetrievalIndex(embedder.dim, { initialRows: Math.max(1, states.length) });
  states.forEach((_, seq) => index.add({ seq, source: 'real', taskId: '', vector: instrVectors[seq] as Float32Array }));
  return { index, states, templates: new Set(states.flatMap((t) => t.state.actions.map((a) => actionTemplate(a).template))) };
}

/** The world's rules the data shows: arrivals, where named things lie, emptied lists, arrival texts, put-down pick-ups. */
function learnWorldRules(usable: readonly RealTransition[], cfg: RetrievalModelConfig) {
  const arrival = cfg.placeRules
    ? learnArrivalRules(
        usable.map((t) => t.state.actions),
        usable.flatMap((t) => (t.next && !t.done ? [{ before: t.state.actions, action: t.action, after: t.next.actions }] : [])),
      )
    : null;
  const named = cfg.namedThings
    ? learnNamedThings(arrival, usable.map((t) => ({ taskId: t.task.id, action: t.action, before: t.state.actions, ...(t.next && !t.done ? { after: t.next.actions } : {}) })))
    : null;
  const emptyListWord = arrival && cfg.placeContents ? learnEmptyListWord(arrival, usable.flatMap((t) => (t.next ? [{ action: t.action, before: t.state.text, after: t.next.text }] : []))) : undefined;
  const arrivalTexts = arrival && cfg.arrivalTexts ? learnArrivalTexts(arrival.move, usable.flatMap((t) => (t.next && !t.done ? [{ instruction: t.task.instruction, action: t.action, next: t.next }] : []))) : null;
  const putDownPickUps = arrival && cfg.placeContents ? learnPutDownPickUps(arrival, usable.map((t) => t.state.actions), usable.flatMap((t) => (t.next && !t.done ? [{ action: t.action, before: t.history, after: t.next }] : []))) : undefined;
  return { arrival, named, emptyListWord, arrivalTexts, putDownPickUps };
}

/** The DreamGym experience-model interface over nearest real transitions. */
export class RetrievalExperienceModel implements ExperienceModel {
  readonly kind = 'retrieval';
  /** {@link dealingsOf}, by transition index. */
  private readonly dealings = new Map<number, string>();
  /** {@link effectOf}, by transition index. */
  private readonly effects = new Map<number, string>();
  /** Each task's recorded steps, by task id, screen (the state without its instruction) and action. */
  private readonly recorded = new Map<string, number>();
  /** Embeddings of recorded successes ({@link successText}), by action signature. */
  private readonly successIndex = new Map<string, Float32Array[]>();
  /** The calibrated grounding; null when grounding is off (and inside the cross-fitting). */
  private ground: { calibrator: SupportCalibrator; gate: SuccessGate; report: GroundingReport } | null = null;
  /** The transitions it was built from, invalid ones included (see {@link withholding}). */
  private built: readonly RealTransition[] = [];
  /** Templates whose argument is free text: declared, or shown by the data (see `learnFreeTextActions`). */
  private freeText: FreeTextActions = new Set();

  private constructor(
    private readonly config: RetrievalModelConfig,
    private readonly embedder: Embedder,
    private readonly transitions: readonly RealTransition[],
    private readonly exact: ReadonlyMap<string, number>,
    private readonly verbs: ReadonlyMap<string, VerbIndex>,
    /** Retrieval vectors, one per transition. */
    private readonly vectors: readonly Float32Array[],
    /** The action templates each transition's state offered. */
    private readonly templates: readonly Set<string>[],
    /** Continuing transitions by (task id, action) and by action alone. */
    private readonly byTaskAction: ReadonlyMap<string, number[]>,
    private readonly byAction: ReadonlyMap<string, number[]>,
    /** Stored first states, by instruction; `templates`: the kinds of action they offer. */
    private readonly initial: { index: RetrievalIndex; states: RealTransition[]; templates: ReadonlySet<string> },
    private readonly kinds: ReadonlyMap<string, KindStats>,
    /** Values option lists offered in the data, those an instruction naming them always asked for (see `unofferedChoices`), words successes always showed, and the kinds of action a word asks for (see `learnRequiredKinds`). */
    private readonly listValues: { known: ReadonlySet<string>; reliable: ReadonlySet<string>; alwaysShown: ReadonlySet<string>; requiredKinds: ReadonlyMap<string, ReadonlySet<string>> },
    private readonly binaryRewards: boolean,
    /** What places offer for what the agent carries (see ./arrival.ts). */
    private readonly arrival: ArrivalRules | null,
    readonly rewardModel: RewardModel | null,
    /** Where things the instruction names lie in worlds the data never showed (see ./named-things.ts); its step indices are this model's transitions. */
    private readonly named: NamedThingRules | null = null,
    /** The word an emptied list shows ("nothing"; see ./carried-things.ts). */
    private readonly emptyListWord: string | undefined = undefined,
    /** What real arrivals say for what they reach (see ./arrival-texts.ts). */
    private readonly arrivalTexts: ArrivalTexts | null = null,
    /** What a place offers an empty hand right after a put-down there (see ./carried-things.ts), when the data shows the rule. */
    private readonly putDownPickUps: PutDownPickUps | undefined = undefined,
  ) {}

  /** Builds the model from real (offline) trajectories and their tasks (only their visible part is kept). */
  static async fromTrajectories(
    tasks: readonly (Task | AgentTask)[],
    trajectories: readonly Trajectory[],
    embedder: Embedder,
    config: Partial<RetrievalModelConfig> = {},
  ): Promise<RetrievalExperienceModel> {
    const real = trajectories.filter((t) => t.source !== 'synthetic');
    return RetrievalExperienceModel.fromTransitions(transitionsFromTrajectories(tasks, real), embedder, config);
  }

  /** Builds the model from real transitions. */
  static async fromTransitions(
    transitions: readonly RealTransition[],
    embedder: Embedder,
    config: Partial<RetrievalModelConfig> = {},
  ): Promise<RetrievalExperienceModel> {
    const cfg = checkedConfig(config);
    // Whatever the caller passed, keep only the agent-visible part of each task.
    const usable = transitions.filter((t) => t.valid).map((t) => ({ ...t, task: agentView(t.task) }));
    if (usable.length === 0) throw new RetrievalDataError('the retrieval experience model needs at least one valid real transition');

    const { exact, byVerb, kinds, byTaskAction, byAction } = indexTransitions(usable);
    const listValues = { ...learnListValues(usable), requiredKinds: cfg.requiredKinds ? learnRequiredKinds(usable) : new Map<string, Set<string>>() };
    addSuccessEvidence(usable, kinds, listValues);
    const vectors = await embedder.embed(usable.map((t) => retrievalText(t.state.text, t.action, t.task.instruction)));
    const verbs = verbIndexes(byVerb, vectors, embedder.dim);
    const templates = usable.map((t) => templateSet(t.state.actions));
    const initial = await initialStates(usable, embedder);
    const binaryRewards = usable.every((t) => t.reward === 0 || t.reward === 1);
    const { arrival, named, emptyListWord, arrivalTexts, putDownPickUps } = learnWorldRules(usable, cfg);
    const freeText = new Set([...cfg.freeTextActions, ...learnFreeTextActions(usable.map((t) => ({ observation: t.state, action: t.action, valid: t.valid })))]);
    const build = (rewardModel: RewardModel | null): RetrievalExperienceModel => {
      const m = new RetrievalExperienceModel(cfg, embedder, usable, exact, verbs, vectors, templates, byTaskAction, byAction, initial, kinds, listValues, binaryRewards, arrival, rewardModel, named, emptyListWord, arrivalTexts, putDownPickUps);
      m.freeText = freeText;
      return m;
    };
    let model = build(null);
    // The reward model learns only where reward can happen: actions of a kind that ended or completed episodes.
    const rewardExamples: RewardExample[] = usable
      .filter((t) => model.mayEnd(t.action, t.task.instruction))
      .map((t) => ({ instruction: t.task.instruction, state: t.state.text, action: t.action, history: t.history, pageActions: t.pageActions, offered: t.state.actions, rank: t.rank, reward: Math.min(1, Math.max(0, t.reward)), success: t.success }));
    if (cfg.useRewardModel && rewardExamples.length > 0) model = build(await RewardModel.train(rewardExamples, cfg.rewardModel));
    model.indexRecorded();
    await model.indexSuccesses();
    model.built = transitions;
    if (cfg.grounding) await model.calibrate(transitions, embedder, cfg);
    return model;
  }

  /** Each task's recorded steps, by task id, screen and action (the first occurrence). */
  private indexRecorded(): void {
    this.transitions.forEach((t, i) => {
      const key = recordedKey(t.task.id, withoutInstruction(t.state.text, t.task.instruction), t.action);
      if (!this.recorded.has(key)) this.recorded.set(key, i);
    });
  }

  /** Recorded successes by kind of action, embedded with the instruction's words abstracted: the evidence a synthetic success must be near. */
  private async indexSuccesses(): Promise<void> {
    const successes = this.transitions.filter((t) => t.success);
    const successVectors = await this.embedder.embed(successes.map((t) => successText(t.task.instruction, t.state.text, t.action)));
    successes.forEach((t, i) => pushTo(this.successIndex, actionSignature(t.action, instructionWords(t.task.instruction)), successVectors[i] as Float32Array));
  }

  /**
   * The same simulator without the recorded episodes of `taskIds` (and of tasks generated from
   * them), with this one's grounding: on those tasks it predicts as on tasks it never saw instead of
   * replaying their recordings as facts, so a validation there is not inflated by the replay.
   * The calibration was cross-fitted on held-out episodes, so it holds for them as for any other.
   */
  async withholding(taskIds: ReadonlySet<string>): Promise<RetrievalExperienceModel> {
    const rest = this.built.filter((t) => !taskIds.has(t.task.id) && !(t.task.rootId !== undefined && taskIds.has(t.task.rootId)));
    if (!rest.some((t) => t.valid)) throw new RetrievalDataError(`withholding ${taskIds.size} tasks leaves no valid recorded transition to build a simulator from`);
    const model = await RetrievalExperienceModel.fromTransitions(rest, this.embedder, { ...this.config, grounding: false });
    model.ground = this.ground;
    return model;
  }

  /**
   * Cross-fits the grounding: the recorded episodes are split into folds; a simulator built on the
   * other folds predicts each held-out recorded step (teacher-forced, from the real state and
   * history), and whether it was right trains the support map; its verdicts of success, against
   * what really happened, set the evidence-bound reward's threshold and measure its precision.
   */
  private async calibrate(transitions: readonly RealTransition[], embedder: Embedder, cfg: RetrievalModelConfig): Promise<void> {
    const episodes = episodesOf(transitions);
    const returns = episodes.map((e) => e[e.length - 1]?.reward ?? 0);
    const penalty = haltPenalty(returns);
    const { fold: foldOf, folds } = calibrationFolds(episodes.map((e) => (e[0] ? (e[0].task.rootId ?? e[0].task.id) : '')), cfg.calibrationFolds);
    const examples: SupportExample[] = [];
    const verdicts: SuccessExample[] = [];
    let successes = 0;
    if (folds >= 2) {
      for (let f = 0; f < folds; f++) {
        const train = episodes.filter((_, i) => foldOf[i] !== f).flat();
        if (!train.some((t) => t.valid)) continue;
        const sub = await RetrievalExperienceModel.fromTransitions(train, embedder, { ...cfg, grounding: false });
        try {
          for (const episode of episodes.filter((_, i) => foldOf[i] === f)) {
            const history: HistoryStep[] = [];
            for (const t of episode) {
              if (t.valid) {
                const raw = await sub.outcome({ task: t.task, history: history.slice(), observation: t.state, action: t.action, demos: [] });
                examples.push({ features: raw.features, right: matchesRecorded(raw.step, t) });
                if (t.success) successes++;
                if (raw.granted) verdicts.push({ similarity: raw.successSimilarity, real: t.success });
              }
              history.push({ observation: t.state, action: t.action });
            }
          }
        } finally {
          sub.dispose();
        }
      }
    }
    const calibrator = examples.length > 0 ? SupportCalibrator.fit(examples) : SupportCalibrator.uninformed();
    const gate = calibrateSuccessGate(verdicts, successes);
    const soft = cfg.doubtfulSteps === 'penalize';
    const kindOf = (e: SupportExample): GroundedStep['kind'] => groundedStep(calibrator.predict(e.features), calibrator.threshold, penalty, soft).kind;
    const unknown = examples.filter((e) => kindOf(e) === 'unknown').length;
    const doubtful = examples.filter((e) => kindOf(e) === 'doubtful').length;
    const bySource = new Map<EvidenceSource, { steps: number; right: number; unknown: number }>();
    for (const e of examples) {
      const c = bySource.get(e.features.source) ?? { steps: 0, right: 0, unknown: 0 };
      c.steps++;
      if (e.right) c.right++;
      if (kindOf(e) === 'unknown') c.unknown++;
      bySource.set(e.features.source, c);
    }
    this.ground = {
      calibrator,
      gate,
      report: {
        folds: examples.length > 0 ? folds : 0,
        heldOutSteps: examples.length,
        heldOutRight: examples.length === 0 ? Number.NaN : examples.filter((e) => e.right).length / examples.length,
        threshold: calibrator.threshold,
        haltThreshold: soft ? HALT_SHARE * calibrator.threshold : calibrator.threshold,
        heldOutUnknown: examples.length === 0 ? Number.NaN : unknown / examples.length,
        heldOutDoubtful: examples.length === 0 ? Number.NaN : doubtful / examples.length,
        haltPenalty: penalty,
        success: gate,
        bySource: [...bySource].map(([source, c]) => ({ source, steps: c.steps, right: c.right / c.steps, unknown: c.unknown / c.steps })).sort((x, y) => y.steps - x.steps),
      },
    };
  }

  /**
   * Answers every step from now on, as a model built without grounding does: what `auto`
   * grounding does with a calibration that found the simulator mostly right (see `src/train/setup.ts`).
   */
  dropGrounding(): void {
    this.ground = null;
  }

  /** What the grounding was calibrated on and how it does on held-out recorded episodes; null when grounding is off. */
  get grounding(): GroundingReport | null {
    return this.ground?.report ?? null;
  }

  /** Cosine similarity of (state, action) to the nearest recorded success of the same kind of action (instruction words abstracted); 0 when none. */
  private async successSimilarity(instruction: string, state: string, action: string): Promise<number> {
    const list = this.successIndex.get(actionSignature(action, instructionWords(instruction)));
    if (!list || list.length === 0) return 0;
    const [q] = await this.embedder.embed([successText(instruction, state, action)]);
    let best = 0;
    for (const v of list) best = Math.max(best, dot(v, q as Float32Array));
    return best;
  }

  /** Transitions the model was built from (valid ones). */
  get size(): number {
    return this.transitions.length;
  }

  /**
   * The first state of `task`: the recorded one of the task itself or of its root task (a
   * generated task keeps its root's world, see `Task.rootId`), else the stored first state whose
   * task instruction is nearest; rewritten for `task`'s instruction.
   */
  async reset(task: AgentTask, _demos: readonly Demonstration[] = []): Promise<Observation> {
    const visible = agentView(task);
    const recorded = this.recordedFirstState(visible.id) ?? (visible.rootId !== undefined ? this.recordedFirstState(visible.rootId) : undefined);
    if (recorded) {
      // The same world: only the instruction changes, and what the state quotes of it (aligning
      // the instructions' differing words renamed the world's own places). Without the quotes, a
      // generated task's first state offered what its root's instruction suggested.
      return requoteState(recorded.task.instruction, visible.instruction, recorded.state, buildSubstitution(recorded.task, visible));
    }
    const [query] = await this.embedder.embed([visible.instruction]);
    const hits = this.safeSearch(this.initial.index, query as Float32Array, 1);
    const source = this.initial.states[hits[0]?.seq ?? 0];
    if (!source) throw new RetrievalDataError('no stored initial state');
    // Another task's world: what the state quotes of the instruction quoted again, then the whole
    // instruction, then the stretches where the two instructions differ (so that what the
    // instruction names is there to find).
    const sub = [...buildSubstitution(source.task, visible), ...instructionAlignment(source.task.instruction, visible.instruction)];
    return requoteState(source.task.instruction, visible.instruction, source.state, sub);
  }

  private recordedFirstState(taskId: string): RealTransition | undefined {
    return this.initial.states.find((t) => t.task.id === taskId);
  }

  /**
   * Predicts the outcome of `request.action`, with its grounding. Deterministic for the same
   * inputs. A step whose calibrated support falls below the threshold is unknown: the episode
   * halts there with the halting penalty and no success.
   */
  async step(request: ExperienceStepRequest): Promise<ExperienceStep> {
    const raw = await this.outcome(request);
    const ground = this.ground;
    if (!ground) return raw.step;
    if (!raw.step.valid) return { ...raw.step, grounding: { support: 1, unknown: false } };
    // A recorded fact of this world is not a prediction: nothing to calibrate.
    const support = raw.features.source === 'recorded' ? 1 : ground.calibrator.predict(raw.features);
    const decided = groundedStep(support, ground.calibrator.threshold, ground.report.haltPenalty, this.config.doubtfulSteps === 'penalize');
    if (decided.kind === 'known') return { ...raw.step, grounding: { support, unknown: false } };
    if (decided.kind === 'doubtful') {
      return {
        ...raw.step,
        reasoning: `${raw.step.reasoning} The recorded data supports this outcome only weakly (support ${support.toFixed(3)}, below ${ground.calibrator.threshold.toFixed(3)}): the episode goes on, and the step costs ${(-decided.penalty).toFixed(3)}.`,
        reward: raw.step.reward + decided.penalty,
        grounding: { support, unknown: false, doubtful: true },
      };
    }
    return {
      reasoning: `${raw.step.reasoning} The recorded data supports this outcome too weakly (support ${support.toFixed(3)}, below ${ground.calibrator.threshold.toFixed(3)}): the step is unknown and the episode halts.`,
      observation: { text: UNKNOWN_STEP_TEXT, actions: [] },
      reward: ground.report.haltPenalty,
      done: true,
      valid: true,
      grounding: { support, unknown: true },
    };
  }

  /**
   * This world's own recorded response to this state and action: a recorded fact, not a
   * prediction. A step of the task's own episode (or, where the episode went on, of its root's:
   * the same world) taken from the same screen; an ending counts only for the task itself, whose
   * goal it was judged by.
   */
  private recordedFact(task: AgentTask, history: readonly HistoryStep[], observation: Observation, action: string): RawOutcome | undefined {
    const screen = withoutInstruction(observation.text, task.instruction);
    const own = this.recorded.get(recordedKey(task.id, screen, action));
    const root = task.rootId !== undefined ? this.recorded.get(recordedKey(task.rootId, screen, action)) : undefined;
    const t = own !== undefined ? this.transitions[own] : root !== undefined ? this.transitions[root] : undefined;
    if (!t || (t.next === null && own === undefined)) return undefined;
    // An ending's reward may hang on what the screen does not show (options chosen earlier): only
    // the same actions so far make it the recorded one.
    if (t.next === null && (t.history.length !== history.length || t.history.some((a, i) => a !== history[i]?.action.trim()))) return undefined;
    const features: SupportFeatures = { source: 'recorded', similarity: 1, agreement: 1, actionSeen: true, templateSeen: true };
    const why = 'This task\'s recorded episode took the same action in the same state and action';
    if (t.next === null) {
      return { step: { reasoning: `${why}; its recorded outcome ends the episode with reward ${t.reward}.`, observation: { text: EPISODE_OVER_TEXT, actions: [] }, reward: t.reward, done: t.done, valid: true }, features, granted: t.success, successSimilarity: 1 };
    }
    const next = own !== undefined ? clone(t.next) : requoteState(t.task.instruction, task.instruction, t.next, buildSubstitution(t.task, task));
    return { step: { reasoning: `${why}; its recorded next state is reused.`, observation: next, reward: t.reward, done: false, valid: true }, features, granted: false, successSimilarity: 0 };
  }

  /** The outcome before grounding, with the support features of what it was read from. */
  private async outcome(request: ExperienceStepRequest): Promise<RawOutcome> {
    const task = agentView(request.task);
    const { observation, history } = request;
    // Surrounding whitespace does not change an action (as in `isAdmissible` and the real envs).
    const action = request.action.trim();
    const template = actionTemplate(action).template;
    const seen = { actionSeen: this.kinds.has(`a:${action}`), templateSeen: this.kinds.has(`t:${template}`) };
    if (!isAdmissible(observation, action, this.freeText)) {
      return {
        step: {
          reasoning: `"${action}" is not among the admissible actions of the current state, so it has no effect.`,
          observation: { text: `Invalid action: ${action} is not admissible here.\n${observation.text}`, actions: observation.actions.slice() },
          reward: 0,
          done: false,
          valid: false,
        },
        features: { source: 'exact', similarity: 1, agreement: 1, ...seen },
        granted: false,
        successSimilarity: 0,
      };
    }

    const fact = this.recordedFact(task, history, observation, action);
    if (fact) return fact;
    const verdict = await this.judge(task, history, observation, action);
    if (verdict.done) {
      return {
        step: { reasoning: verdict.why, observation: { text: EPISODE_OVER_TEXT, actions: [] }, reward: verdict.reward, done: true, valid: true },
        features: { source: 'end', similarity: verdict.endRate, agreement: verdict.confidence, ...seen },
        granted: verdict.granted,
        successSimilarity: verdict.successSimilarity,
      };
    }
    const next = await this.nextState(task, history, observation, action);
    const taken = history.map((h) => h.action);
    const arrived = completeArrival(this.arrival, observation.actions, action, next.observation, taken);
    const placed = this.arrival && this.putDownPickUps ? withPutDownPickUps(this.arrival, this.putDownPickUps, action, taken, arrived) : arrived;
    return {
      step: { reasoning: `${verdict.why} ${sentenceCase(next.why)}`, observation: withoutStaleActions(placed), reward: 0, done: false, valid: true },
      features: { source: next.evidence.source, similarity: next.evidence.similarity, agreement: next.evidence.agreement, ...seen },
      granted: false,
      successSimilarity: 0,
    };
  }

  /** Statistics of the most specific kind of `action` seen often enough (exact action, signature, template). */
  private kindOf(action: string, instruction: string): { key: string; stats: KindStats } | undefined {
    const keys = kindKeys(action, instruction);
    for (const key of keys) {
      const stats = this.kinds.get(key);
      if (stats && stats.count >= MIN_KIND_COUNT) return { key, stats };
    }
    const key = keys[2];
    const stats = this.kinds.get(key);
    return stats ? { key, stats } : undefined;
  }

  /** Whether actions of this kind ended or completed episodes in the data. */
  private mayEnd(action: string, instruction: string): boolean {
    const kind = this.kindOf(action, instruction);
    return kind !== undefined && endsLike(kind.stats, action) && (kind.stats.ends / kind.stats.count >= this.config.terminalRate || kind.stats.successes > 0);
  }

  /** Reward and done from evidence; "cannot tell" keeps the episode going with reward 0. */
  private async judge(
    task: AgentTask,
    history: readonly HistoryStep[],
    observation: Observation,
    action: string,
  ): Promise<{ done: boolean; reward: number; why: string; granted: boolean; successSimilarity: number; endRate: number; confidence: number }> {
    const kind = this.kindOf(action, task.instruction);
    const name = kind ? kind.key.slice(2) : actionTemplate(action).template;
    const none = { granted: false, successSimilarity: 0, endRate: kind ? kind.stats.ends / kind.stats.count : 0, confidence: 1 };
    if (!kind) return { done: false, reward: 0, why: `"${name}" never occurs in the stored data, so nothing says it ends the episode.`, ...none };
    if (!endsLike(kind.stats, action)) {
      return { done: false, reward: 0, why: `nearly every "${name}" action that ended an episode in the stored data was another action.`, ...none };
    }
    // Ends even when the task is not met: most of its occurrences that did not complete the task
    // ended the episode (a final choice, right or wrong). An action that ended episodes only by
    // completing them ends nothing when the evidence is short: reading "ends" as "ends always"
    // there ended episodes at the first of two steps asked for, none real.
    const failures = kind.stats.count - kind.stats.successes;
    const endsAlways = failures > 0 && (kind.stats.ends - kind.stats.successes) / failures >= this.config.terminalRate;
    if (!endsAlways && kind.stats.successes === 0) {
      return { done: false, reward: 0, why: `"${name}" never completed an episode in the stored data.`, ...none };
    }
    // Evidence outside what every real success of this kind showed (fewer of the instruction's
    // words on screen, a price above the one asked, an option asked for left unchosen) means the
    // task is not met, whatever the reward model says.
    // The range comes from the most specific kind with enough successes to show one: an exact
    // action seen often but rarely completing would otherwise leave the gate open.
    const ranged = kindKeys(action, task.instruction)
      .map((k) => this.kinds.get(k))
      .find((s) => s !== undefined && s.successes >= MIN_KIND_COUNT && s.evidenceFloor !== null);
    const trusted = this.rewardModel !== null && ranged !== undefined;
    const floor = trusted ? (ranged?.evidenceFloor ?? null) : null;
    const ceiling = trusted ? (ranged?.evidenceCeiling ?? null) : null;
    const pageActions = actionsOnPage(history, observation);
    const rank = openedRank(history);
    const evidence = evidenceFeatures(task.instruction, observation.text, action, history.map((h) => h.action), pageActions, observation.actions, rank);
    const outside = floor && ceiling ? [...floor].findIndex((x, j) => (evidence[j] as number) < x - 1e-6 || (evidence[j] as number) > (ceiling[j] as number) + 1e-6) : -1;
    // A kind of action every recorded success of an instruction with one of these words took, never taken here.
    const taken = new Set([...history.map((h) => h.action), action].map((a) => actionTemplate(a).template));
    const skipped = [...instructionWords(task.instruction)].some((w) => [...(this.listValues.requiredKinds.get(w) ?? [])].some((k) => !taken.has(k)));
    // A choice the instruction names that the page does not offer (more of them than any real success showed).
    // A word of the instruction that every real success showed, nowhere to be seen here (a thing
    // asked for in some state, never brought to it).
    const unshown = trusted && uncoveredWords(task.instruction, [withoutInstruction(observation.text, task.instruction), action, ...history.map((h) => h.action)]).some((w) => this.listValues.alwaysShown.has(w.word));
    const short = outside < 0 && (skipped || (trusted && (unshown || unofferedChoices(task.instruction, withoutInstruction(observation.text, task.instruction), observation.actions, this.listValues.known, this.listValues.reliable) > (ranged?.unofferedCeiling ?? 0)))) ? EVIDENCE_DIM : outside;
    let success: number;
    let expected: number;
    if (this.rewardModel) {
      const [o] = await this.rewardModel.predictOutcomes([
        { instruction: task.instruction, state: observation.text, action, history: history.map((h) => h.action), pageActions, offered: observation.actions, rank },
      ]);
      // Evidence short of every real success: not a success, but the partial reward the reward
      // model expects of a step that does not complete the task stands (a near miss may earn part
      // of the reward for real). Scored 0 instead, a policy learning from scratch where rewards
      // are graded had nothing to climb until its first success.
      success = short >= 0 ? 0 : (o?.success ?? 0);
      expected = o?.partialReward ?? 0;
    } else if (short >= 0) {
      success = 0;
      expected = 0;
    } else {
      success = kind.stats.successes / kind.stats.count;
      expected = success;
    }
    const granted = success >= this.config.successThreshold;
    const score = success;
    // The evidence-bound reward: a success needs recorded successes of this kind of action from a
    // state like this one (the threshold is calibrated on held-out recorded episodes).
    const successSimilarity = granted ? await this.successSimilarity(task.instruction, observation.text, action) : 0;
    const gate = this.ground?.gate;
    const unsupported = granted && gate !== undefined && successSimilarity < gate.threshold;
    const completes = granted && !unsupported;
    const backing = unsupported ? ` No recorded success is near enough (similarity ${successSimilarity.toFixed(3)}, below ${gate?.threshold.toFixed(3)}), so it is no success.` : '';
    const meta = { granted, successSimilarity, endRate: kind.stats.ends / kind.stats.count, confidence: Math.abs(2 * success - 1) };
    if (endsAlways) {
      // A partial reward is never a success: below 1 whatever the reward model expects.
      const reward = this.binaryRewards || completes ? (completes ? 1 : 0) : Math.min(0.99, Math.round(expected * 1000) / 1000);
      return { done: true, reward, why: `"${name}" ends episodes in the stored data; the evidence that the task is met scores ${score.toFixed(3)}.${backing}`, ...meta };
    }
    if (completes) {
      return { done: true, reward: 1, why: `"${name}" completed episodes in the stored data, and the evidence that the task is met scores ${score.toFixed(3)}.`, ...meta };
    }
    return { done: false, reward: 0, why: `"${name}" can complete a task, but the evidence scores only ${score.toFixed(3)}: cannot tell, so the episode goes on.${backing}`, ...meta };
  }

  /** The next state of a step that does not end the episode. */
  private async nextState(
    task: AgentTask,
    history: readonly HistoryStep[],
    observation: Observation,
    action: string,
  ): Promise<{ observation: Observation; why: string; evidence: EvidenceUsed }> {
    const seen: Observation[] = [...history.map((h) => h.observation), observation];
    // Episode memory: the latest earlier valid occurrence of the same action. It shows what it
    // showed then, or, when the actions offered changed while the agent stayed (a door opened,
    // an object taken), the last state of that stay, so that a place looks as it was left. A
    // stay ends where most of the arrival's actions are gone (a list left for an item's page):
    // without that, repeating an action showed the page visited in between.
    for (let i = history.length - 1; i >= 0; i--) {
      const h = history[i] as HistoryStep;
      if (h.action.trim() !== action || !isAdmissible(h.observation, action, this.freeText)) continue;
      let last = i + 1;
      const arrival = seen[i + 1] as Observation;
      // An action still offered after it was taken (a choice on a page, not a move) acts on the
      // page as it is now: taken again from another state, replaying what it showed then undid
      // the choices made since (a second option chosen showed the first one unchosen), and real
      // successes failed inside the simulator.
      if (isAdmissible(arrival, action, this.freeText) && h.observation.text !== observation.text) continue;
      const arrivalActions = new Set(arrival.actions);
      if (!isAdmissible(arrival, action, this.freeText)) {
        const template = actionTemplate(action).template;
        // A move of the same kind that took itself off the list (`visit place 1`, there) left the
        // place, whatever the actions offered after it: with a move's actions slightly off,
        // returning to one place showed the place visited next.
        const moved = (k: number): boolean => {
          const a = (history[k] as HistoryStep).action;
          return actionTemplate(a).template === template && !isAdmissible(seen[k + 1] as Observation, a, this.freeText);
        };
        while (last + 1 < seen.length && !moved(last) && !isAdmissible(seen[last + 1] as Observation, action, this.freeText) && jaccardOf(arrivalActions, new Set((seen[last + 1] as Observation).actions)) >= STAY_OVERLAP) last++;
      }
      const left = seen[last] as Observation;
      const unchanged = left.actions.length === arrival.actions.length && left.actions.every((x, j) => x === arrival.actions[j]);
      const remembered = unchanged ? arrival : left;
      // The state right after the agent left the place: what did not change then went with it.
      const departed = seen[last + 1];
      const carried = departed ? carryOver(remembered, left, departed, observation, action) : clone(remembered);
      // A place the agent changed is remembered by the stay's last state, whose first line says
      // what the stay's last action did; an arrival says what is there.
      const back = unchanged ? carried : withArrivalText(this.arrivalTexts, task.instruction, action, carried);
      return { observation: this.withPickUpsForEmptyHand(seen, history, action, back), why: `"${action}" was taken earlier in this episode; it shows what was there when the agent left.`, evidence: { source: 'memory', similarity: 1, agreement: 1 } };
    }

    const kind = this.kindOf(action, task.instruction);
    if (kind && kind.stats.count >= MIN_KIND_COUNT) {
      let best: [string, number] | undefined;
      for (const entry of kind.stats.returns) if (!best || entry[1] > best[1]) best = entry;
      if (best && best[1] / kind.stats.count >= this.config.returnRate) {
        const [mode, n] = best[0].split(':') as [string, string];
        const at = mode === 'rel' ? history.length - Number(n) : mode === 'abs' ? Number(n) : previousPage(seen, history.length);
        const target = at === undefined ? undefined : seen[at];
        if (target) return { observation: clone(target), why: `in the stored data "${kind.key.slice(2)}" goes back to an earlier state of its episode (${best[0]}).`, evidence: { source: 'return', similarity: best[1] / kind.stats.count, agreement: 1 } };
      }
    }

    const exactPos = this.exact.get(exactKey(observation.text, action));
    if (exactPos !== undefined) {
      const t = this.transitions[exactPos] as RealTransition;
      return { observation: this.rewrite(t, seen, action), why: 'the same state and action occur in the stored data; its next state is reused.', evidence: { source: 'exact', similarity: 1, agreement: 1 } };
    }

    const found = await this.nearest(task, observation, action, history.map((h) => h.action.trim()));
    const neighbour = found?.t;
    if (!found || !neighbour?.next) {
      return { observation: clone(observation), why: `no stored transition with a "${actionVerb(action)}" action continues an episode; the state is kept.`, evidence: { source: 'none', similarity: 0, agreement: 0 } };
    }
    const evidence: EvidenceUsed = { source: found.source, similarity: found.similarity, agreement: found.agreement };
    const predicted = this.rewrite(neighbour, seen, action, task);
    const named = await this.withNamedThing(task, seen, action, predicted);
    return named ? { ...named, evidence } : { observation: predicted, why: `nearest stored transition "${neighbour.action}"; its next state is reused with entities rewritten.`, evidence };
  }

  /**
   * A place returned to (`back`, as remembered) with an empty hand offers the pick-ups of what the
   * episode saw there and has not taken since: left with the hand full, it was remembered without
   * them, and the second thing of "put two" seen beside the first was never offered again.
   */
  private withPickUpsForEmptyHand(seen: readonly Observation[], history: readonly HistoryStep[], action: string, back: Observation): Observation {
    const rules = this.arrival;
    const { template, entities } = actionTemplate(action);
    const place = entities[0];
    if (!rules || !this.config.placeContents || template !== rules.move || place === undefined) return back;
    const taken = history.map((h) => h.action.trim());
    if (carriedAfter(rules, [...taken, action])?.size !== 0) return back;
    const remaining = remainingPickUps(rules, seen, taken, place);
    const keep = new Set(remaining);
    // A pick-up here of a thing the episode has taken since goes.
    const actions = back.actions.filter((a) => {
      const step = carryStepOf(rules, a);
      return !step?.up || step.place !== place || keep.has(a);
    });
    for (const a of remaining) if (!actions.includes(a)) actions.push(a);
    return actions.length === back.actions.length && actions.every((a, i) => a === back.actions[i]) ? back : { text: back.text, actions };
  }

  /**
   * `predicted` shows a place's contents where the rule of ./named-things.ts puts a thing the
   * instruction names: the same prediction from the most similar stored step of this kind that
   * showed a thing of that kind at a place of this kind in the same place state. Undefined when
   * the rule does not apply or no stored step fits.
   */
  private async withNamedThing(task: AgentTask, seen: readonly Observation[], action: string, predicted: Observation): Promise<{ observation: Observation; why: string } | undefined> {
    if (!this.named || !this.arrival) return undefined;
    const { template, entities } = actionTemplate(action);
    const place = entities.length === 1 ? (entities[0] as string) : undefined;
    if (place === undefined) return undefined;
    const kind = thingToShow(this.named, this.arrival, task, seen, place, predicted);
    if (kind === undefined) return undefined;
    const positions = this.named.showingSteps.get(showingKey(template, placeState(place, predicted.actions), kind)) ?? [];
    if (positions.length === 0) return undefined;
    const observation = seen[seen.length - 1] as Observation;
    const [query] = await this.embedder.embed([retrievalText(observation.text, action, task.instruction)]);
    const q = query as Float32Array;
    const score = (pos: number): number => {
      const v = this.vectors[pos] as Float32Array;
      let dot = 0;
      for (let i = 0; i < v.length; i++) dot += (v[i] as number) * (q[i] as number);
      return dot;
    };
    // A thing of that kind the episode has not been offered yet (the second box is not the first).
    const before = new Set(seen.flatMap((o) => o.actions.flatMap((a) => actionTemplate(a).entities)));
    const arrival = this.arrival;
    const newThing = (o: Observation): boolean =>
      o.actions.some((a) => {
        const p = pickUpOf(arrival, a);
        return p !== undefined && placeKind(p.thing) === kind && !before.has(p.thing);
      });
    const ranked = positions.map((pos) => ({ pos, s: score(pos) })).sort((a, b) => b.s - a.s);
    for (const { pos } of ranked.slice(0, MAX_NAMED_TRIES)) {
      const t = this.transitions[pos] as RealTransition;
      const shown = this.rewrite(t, seen, action, task);
      if (newThing(shown)) return { observation: shown, why: `a ${kind} is named by the instruction and no place shown so far held enough of them; stored step "${t.action}" showed one at a ${placeKind(place)}.` };
    }
    return undefined;
  }

  /**
   * The neighbour's next state, rewritten for this task, action and state (the last of `seen`,
   * the episode's states so far).
   */
  private rewrite(t: RealTransition, seen: readonly Observation[], action: string, task: AgentTask = t.task): Observation {
    let predicted = this.rewriteEntities(t, seen, action, task);
    // What the neighbour's page quotes of its own instruction (suggestions made from it, reached
    // again by going back) quoted from this one, as a first state's are: only in the kinds of
    // action a first state offers (an item's option is not a quote, whatever the instruction asks).
    const quotable = (a: string): boolean => a.includes('[') && this.initial.templates.has(actionTemplate(a).template);
    if (t.task.instruction !== task.instruction && predicted.actions.some(quotable)) predicted = requoteState(t.task.instruction, task.instruction, predicted, [], quotable);
    predicted = withFirstStateSentences(t, seen[0] as Observation, predicted);
    if (!this.arrival || !t.next || !this.config.placeContents) return predicted;
    return withPlaceContents(this.arrival, this.emptyListWord, seen[seen.length - 1] as Observation, action, { action: t.action, before: t.state.text, after: t.next.text }, predicted);
  }

  /** {@link rewrite} before the place's contents are made this episode's. */
  private rewriteEntities(t: RealTransition, seen: readonly Observation[], action: string, task: AgentTask): Observation {
    const observation = seen[seen.length - 1] as Observation;
    const next = t.next as Observation;
    const pairs: Substitution = [...buildSubstitution(t.task, task, t.action, action), ...listingAlignment(t.state.text, t.action, observation.text, action)];
    const mapped = new Set(pairs.map(([a]) => a));
    const before = new Set(t.state.actions);
    const after = new Set(next.actions);
    const removed = t.state.actions.filter((x) => !after.has(x));
    const addedRaw = next.actions.filter((x) => !before.has(x));
    const involved = new Set<string>();
    for (const a of [...removed, ...addedRaw]) for (const e of actionTemplate(a).entities) involved.add(e);
    for (const pair of alignEntities(t.state, observation, involved)) {
      if (!mapped.has(pair[0])) {
        pairs.push(pair);
        mapped.add(pair[0]);
      }
    }
    // When the neighbour's action takes its own entity out of a slot and brings another one in
    // (`visit {}`: the place it went to leaves the list, the place it left comes back), the one
    // coming back here is the one entity that filled that slot earlier in this episode and no
    // longer does, other than this action's own.
    const ownEntities = actionTemplate(action).entities;
    const theirEntities = actionTemplate(t.action).entities;
    const own = new Set(ownEntities);
    const theirs = new Set(theirEntities);
    const swapped = new Set<string>();
    for (const a of removed) {
      const { template, entities } = actionTemplate(a);
      entities.forEach((e, slot) => {
        if (theirs.has(e)) swapped.add(`${template}#${slot}`);
      });
    }
    const comingBack = (template: string, slot: number): string | undefined => {
      const fill = (o: Observation): Set<string> =>
        new Set(o.actions.map((x) => actionTemplate(x)).filter((x) => x.template === template).map((x) => x.entities[slot] ?? ''));
      const now = fill(observation);
      const candidates = new Set<string>();
      for (const o of seen.slice(0, -1)) for (const f of fill(o)) if (f !== '' && !now.has(f) && !own.has(f)) candidates.add(f);
      return candidates.size === 1 ? ([...candidates][0] as string) : undefined;
    };
    const refilled = new Set<string>();
    for (const a of addedRaw) {
      const { template, entities } = actionTemplate(a);
      entities.forEach((e, slot) => {
        if (!swapped.has(`${template}#${slot}`)) return;
        refilled.add(`${template}#${slot}`);
        if (mapped.has(e)) return;
        const f = comingBack(template, slot);
        if (f !== undefined) {
          if (f !== e) pairs.push([e, f]);
          mapped.add(e);
        }
      });
    }
    const sub = withSwaps(pairs);
    // What the neighbour carried through its step (an entity in its actions before and after,
    // such as the object it held) but this state does not offer at all, this agent does not have:
    // actions naming it go. Without this, a move from the start offered to use a thing the
    // recorded move held, and a policy trained in the simulator put down things it never took.
    const here = new Set(observation.actions.flatMap((a) => actionTemplate(a).entities));
    const beforeEntities = new Set(t.state.actions.flatMap((a) => actionTemplate(a).entities));
    const carried = new Set<string>();
    for (const a of next.actions) for (const e of actionTemplate(a).entities) if (beforeEntities.has(e)) carried.add(applySubstitution(e, sub));
    const foreign = (a: string): boolean => actionTemplate(a).entities.some((e) => carried.has(e) && !here.has(e) && !own.has(e));
    if (!editTransfers(t.state, next)) {
      // A page of its own (not an edit of this one) quotes the neighbour's state where it
      // carries words over; those words are read from this state in the same places (the
      // instruction's lines are left to the instruction alignment).
      const whole = [...sub, ...carriedAlignment(withoutInstruction(t.state.text, t.task.instruction), t.action, withoutInstruction(observation.text, task.instruction), action, next.text).filter(([from]) => !mapped.has(from))];
      return { text: mergeText(observation.text, t.state.text, next.text, whole), actions: next.actions.map((a) => applySubstitution(a, whole)).filter((a) => !foreign(a)) };
    }
    // A move to a place (one that is no longer offered once there) changes the place, and a
    // sentence about the place changes with it as a whole: edited word by word, a move kept what
    // the place left showed ("you see nothing"), so the new place was never opened. (An option
    // still offered after it is chosen is no move: its edit is word by word.)
    const moved = this.arrival !== null && actionTemplate(t.action).template === this.arrival.move && !next.actions.includes(t.action);
    const chosen = theirEntities.length === 1 && ownEntities.length === 1 ? { theirs: theirEntities[0] as string, ours: ownEntities[0] as string } : undefined;
    const text = moved ? mergeText(observation.text, t.state.text, next.text, sub) : editText(observation.text, t.state.text, next.text, sub, chosen);
    // Apply the neighbour's edit of its admissible actions to this state's actions.
    const gone = new Set(removed.map((a) => applySubstitution(a, sub)));
    // A removed action that names an entity this state lacks (an object at the neighbour's place)
    // removes every action of ours of that form with the same other entities: leaving a place
    // takes away all "lift {} from" it, whatever lies there. Without this, a place's actions
    // stayed offered everywhere after the agent left it.
    const entitiesHere = new Set(observation.actions.flatMap((a) => actionTemplate(a).entities));
    const patterns = [...gone]
      .filter((a) => !observation.actions.includes(a))
      .map((a) => {
        const { template, entities } = actionTemplate(a);
        return { template, slots: entities.map((e) => (entitiesHere.has(e) ? e : null)) };
      })
      .filter((p) => p.slots.some((e) => e !== null) && p.slots.some((e) => e === null));
    const matches = (a: string): boolean => {
      const { template, entities } = actionTemplate(a);
      return patterns.some((p) => p.template === template && p.slots.length === entities.length && p.slots.every((e, i) => e === null || e === entities[i]));
    };
    const added = addedRaw.map((a) => applySubstitution(a, sub)).filter((a) => !foreign(a));
    let actions = observation.actions.filter((a) => !gone.has(a) && !matches(a));
    // The neighbour's own entity left a one-entity slot and nothing came back (it started where no
    // place was held, e.g. a start between places): here the entity that left that slot earlier in
    // this episode comes back to it and gives up its other actions (the place the agent leaves is
    // again one to move to, and its own actions go). Without this, the place left was missing
    // from the moves and its actions stayed offered.
    // Only the move's slot: an opened box leaves the `open {}` slot for `close {}`, and taking that
    // for a move brought back "open box 1" in place of "visit box 1", so the agent could never
    // return to it.
    const move = moveOf(observation.actions)?.move;
    for (const key of swapped) {
      const [template, slot] = [key.slice(0, key.lastIndexOf('#')), Number(key.slice(key.lastIndexOf('#') + 1))];
      if (refilled.has(key) || template !== move || template.split('{}').length !== 2) continue;
      const back = comingBack(template, slot);
      if (back === undefined) continue;
      actions = actions.filter((a) => !actionTemplate(a).entities.includes(back));
      actions.push(template.replace('{}', back));
    }
    for (const a of added) if (!actions.includes(a)) actions.push(a);
    // What the agent carries goes with it where the neighbour's walk showed nothing for it.
    const ends = moveEnds(observation.actions, actions, action);
    if (ends) {
      const carried = carriedEntities(observation.actions, ends.here, actionTemplate(action).template, new Set(actions.flatMap((a) => actionTemplate(a).entities)));
      for (const a of movedActions(observation.actions, carried, ends.here, ends.there)) if (!actions.includes(a)) actions.push(a);
    }
    return { text, actions };
  }

  /**
   * The stored continuing transition most like (state, action): the same task's (same id) own transition
   * for this action when the data has one (it shows this task's world), else one with the same
   * action in any task (an item's page is the same page in every task); for an item opened from
   * a list by its id, the stored opening of the item whose list line is most like this one's;
   * else among the k most similar of the same verb, one with the same template first.
   */
  /**
   * {@link dealingsWith} of a stored transition's history and its own action, kept: every list
   * `nearest` filters with it holds transitions of the action asked about, and a common walk's list
   * runs to hundreds of histories, read again on every step.
   */
  private dealingsOf(pos: number): string {
    let key = this.dealings.get(pos);
    if (key === undefined) {
      const t = this.transitions[pos] as RealTransition;
      key = dealingsWith(t.history, t.action);
      this.dealings.set(pos, key);
    }
    return key;
  }

  private async nearest(task: AgentTask, observation: Observation, action: string, actionsSoFar: readonly string[] = []): Promise<{ t: RealTransition; source: EvidenceSource; similarity: number; agreement: number } | undefined> {
    const state = observation.text;
    const [query] = await this.embedder.embed([retrievalText(state, action, task.instruction)]);
    const q = query as Float32Array;
    const kinds = templateSet(observation.actions);
    const nearestFirst = this.config.neighbourOrder === 'nearest';
    // Similar screens first, and among them states that offered the same kinds of action (a
    // neighbour that held nothing cannot say what holding something offers here).
    const rank = (positions: readonly number[]): { pos: number; score: number; cosine: number }[] =>
      positions
        .map((pos) => {
          const v = this.vectors[pos] as Float32Array;
          // Summed in this order (the overlap first) so that near ties fall as they always did.
          let score = jaccardOf(kinds, this.templates[pos] as Set<string>);
          for (let i = 0; i < v.length; i++) score += (v[i] as number) * (q[i] as number);
          return { pos, score, cosine: dot(v, q) };
        })
        // Stable: among equal scores the earlier transition.
        .sort((x, y) => (nearestFirst ? y.score - x.score : x.score - y.score));
    const pick = (positions: readonly number[] | undefined, source: EvidenceSource): { t: RealTransition; source: EvidenceSource; similarity: number; agreement: number } | undefined => {
      if (!positions || positions.length === 0) return undefined;
      const ranked = rank(positions);
      const best = ranked[0] as { pos: number; cosine: number };
      return { t: this.transitions[best.pos] as RealTransition, source, similarity: best.cosine, agreement: this.agreement(best.pos, ranked.slice(1, this.config.k).map((r) => r.pos)) };
    };
    // The task's own recorded steps, else its root's: a generated task lives in its root's world
    // where another task's step of the same action is a stand-in at best. First the steps whose
    // episode had done to this action's entities what this one has (a move to a place the recorded
    // agent had opened showed it open, and the child's is closed).
    const mine = dealingsWith(actionsSoFar, action);
    const alike = (positions: readonly number[] | undefined): number[] | undefined => positions?.filter((pos) => this.dealingsOf(pos) === mine);
    const ownPositions = this.byTaskAction.get(taskActionKey(task.id, action));
    const rootPositions = task.rootId !== undefined ? this.byTaskAction.get(taskActionKey(task.rootId, action)) : undefined;
    const own = pick(alike(ownPositions), 'own-task') ?? pick(alike(rootPositions), 'own-task') ?? pick(ownPositions, 'own-task') ?? pick(rootPositions, 'own-task');
    if (own) return own;
    // Another episode's step of the same action, again first where that episode had done to the
    // entities what this one has: a first move to a place another episode had opened before
    // showed it open with its contents.
    const same = pick(alike(this.byAction.get(action)), 'same-action') ?? pick(this.byAction.get(action), 'same-action');
    if (same) return same;
    const verb = this.verbs.get(actionVerb(action));
    if (!verb) return undefined;
    let hits = this.safeSearch(verb.index, q, nearestFirst ? this.config.k : verb.rows.length);
    if (!nearestFirst) hits = hits.reverse().slice(0, this.config.k);
    const neighbours = hits.map((h) => ({ pos: verb.rows[h.seq] as number, score: h.score }));
    const template = actionTemplate(action).template;
    const chosen = neighbours.find((n) => actionTemplate((this.transitions[n.pos] as RealTransition).action).template === template) ?? neighbours[0];
    if (!chosen) return undefined;
    const others = neighbours.filter((n) => n !== chosen && actionTemplate((this.transitions[n.pos] as RealTransition).action).template === template).map((n) => n.pos);
    return { t: this.transitions[chosen.pos] as RealTransition, source: 'neighbour', similarity: chosen.score, agreement: this.agreement(chosen.pos, others) };
  }

  /**
   * Laplace-smoothed share of `others` (the other candidate transitions) whose outcome looks like
   * `pos`'s ({@link effectOf}): 0.5 with no other candidate, near 1 when they all agree.
   */
  private agreement(pos: number, others: readonly number[]): number {
    const mine = this.effectOf(pos);
    const same = others.filter((o) => this.effectOf(o) === mine).length;
    return (same + 1) / (others.length + 2);
  }

  /**
   * A transition's outcome as a key comparable across tasks: its next state's text (without the
   * instruction) and action signatures, with the instruction's words, numbers and ids abstracted.
   */
  private effectOf(pos: number): string {
    let key = this.effects.get(pos);
    if (key === undefined) {
      const t = this.transitions[pos] as RealTransition;
      const words = instructionWords(t.task.instruction);
      key = t.next ? `${abstractText(withoutInstruction(t.next.text, t.task.instruction), words)}\u0002${t.next.actions.map((a) => actionSignature(a, words)).sort().join('\u0001')}` : '';
      this.effects.set(pos, key);
    }
    return key;
  }

  private safeSearch(index: RetrievalIndex, query: Float32Array, k: number): { seq: number; score: number }[] {
    // A text without any word embeds to the zero vector, for which cosine similarity is undefined.
    if (!query.some((x) => x !== 0)) return [];
    return index.search([query], k)[0] ?? [];
  }

  /** Frees the reward model's tensors. */
  dispose(): void {
    this.rewardModel?.dispose();
  }
}

/** Stored steps tried, most similar first, for one that shows a named thing the episode lacks. */
const MAX_NAMED_TRIES = 8;

const templateSet = (actions: readonly string[]): Set<string> => new Set(actions.map((a) => actionTemplate(a).template));

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] as number) * (b[i] as number);
  return s;
}

/** The text a recorded success is compared by: state (without the instruction line) and action, with the instruction's words abstracted (see `abstractText`). */
function successText(instruction: string, state: string, action: string): string {
  const words = instructionWords(instruction);
  return `${abstractText(withoutInstruction(state, instruction), words)}\n${abstractText(action, words)}`;
}

/** Transitions split into episodes (a transition without history opens one), in order. */
function episodesOf(transitions: readonly RealTransition[]): RealTransition[][] {
  const out: RealTransition[][] = [];
  for (const t of transitions) {
    if (t.history.length === 0 || out.length === 0) out.push([]);
    (out[out.length - 1] as RealTransition[]).push(t);
  }
  return out;
}

/**
 * Whether a predicted step is what the recorded one did: the same done and reward (within 0.05)
 * and, where the episode went on, the same next state (text without the instruction, and the
 * admissible actions as a set).
 */
function matchesRecorded(pred: ExperienceStep, t: RealTransition): boolean {
  if (pred.done !== (t.next === null ? t.done : false)) return false;
  if (Math.abs(pred.reward - t.reward) > 0.05) return false;
  if (t.next === null) return true;
  const a = new Set(pred.observation.actions);
  const b = new Set(t.next.actions);
  return a.size === b.size && [...a].every((x) => b.has(x)) && withoutInstruction(pred.observation.text, t.task.instruction) === withoutInstruction(t.next.text, t.task.instruction);
}

/** Share of a kind's endings one action must account for to make the kind's endings its own (see {@link endsLike}). */
const OWN_ENDINGS_SHARE = 0.9;

/**
 * Whether a kind's endings speak for `action`: not when nearly all of them ({@link
 * OWN_ENDINGS_SHARE}, at least {@link MIN_KIND_COUNT} times) were one other action, taken exactly
 * so (instance numbers aside: `use lamp 2` is `use lamp 1` in another world). A choice the
 * instruction does not name may share a kind with the one action that ends episodes (a "confirm"
 * button): a policy learned to end by choosing. A kind whose endings were many different actions
 * (each thing and place) still speaks for one it has not seen.
 */
function endsLike(stats: KindStats, action: string): boolean {
  let top: [string, number] | undefined;
  let total = 0;
  for (const entry of stats.enders) {
    total += entry[1];
    if (!top || entry[1] > top[1]) top = entry;
  }
  if (!top || top[1] < MIN_KIND_COUNT || withoutInstanceNumbers(top[0]) === withoutInstanceNumbers(action)) return true;
  return top[1] / total < OWN_ENDINGS_SHARE;
}

/** An action with each instance's number dropped (`use lamp 2` -> `use lamp #`): instances of one thing are not other actions. */
const withoutInstanceNumbers = (action: string): string => action.replace(/(\p{L}+) \p{N}+/gu, '$1 #');

/** Share of admissible actions (Jaccard) two states must have in common to be one stay at a place. */
const STAY_OVERLAP = 0.5;

function jaccardOf(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  let inter = 0;
  for (const x of a) if (b.has(x)) inter++;
  const union = a.size + b.size - inter;
  return union === 0 ? 1 : inter / union;
}

const clone = (o: Observation): Observation => ({ text: o.text, actions: o.actions.slice() });

/** The sentences of `o` outside the instruction's lines, by the key of their line. */
function sentencesByLine(o: Observation, instruction: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const line of withoutInstruction(o.text, instruction).split('\n')) {
    const set = out.get(lineKey(line)) ?? new Set<string>();
    for (const sentence of sentencesOf(line)) set.add(sentence);
    out.set(lineKey(line), set);
  }
  return out;
}

/**
 * The sentences of `next` (outside the instruction's lines) that the episode's first state
 * (`atFirst`, see {@link sentencesByLine}) shows in a line of the same key and `state` does not
 * show at all: see {@link RealTransition.fromFirstState}.
 */
function sentencesFromFirstState(atFirst: ReadonlyMap<string, ReadonlySet<string>>, state: Observation, next: Observation, instruction: string): { line: string; key: string }[] {
  const now = new Set([...sentencesByLine(state, instruction).values()].flatMap((x) => [...x]));
  const out: { line: string; key: string }[] = [];
  for (const line of withoutInstruction(next.text, instruction).split('\n')) {
    for (const sentence of sentencesOf(line)) {
      if (!now.has(sentence) && atFirst.get(lineKey(line))?.has(sentence)) out.push({ line: lineKey(line), key: sentenceKey(sentence) });
    }
  }
  return out;
}

/**
 * `predicted` (the neighbour `t`'s next state, rewritten) with the sentences that `t` brought back
 * from its episode's first state taken from this episode's first state (`first`) instead: the
 * neighbour's listing of places was of its own world, this episode's first state lists this
 * world's.
 */
function withFirstStateSentences(t: RealTransition, first: Observation, predicted: Observation): Observation {
  if (!t.fromFirstState) return predicted;
  let text = predicted.text;
  for (const { line, key } of t.fromFirstState) {
    const mine = sentenceAt(first.text, line, key);
    if (mine !== undefined && sentenceAt(text, line, key) !== undefined) text = replaceSentence(text, line, key, mine);
  }
  return text === predicted.text ? predicted : { text, actions: predicted.actions };
}

/** `text` with its first letter upper-cased: the next state's reason follows the verdict's as a sentence of its own. */
function sentenceCase(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * What `actions` did to `action`'s entities, other than `action` itself, as one key: two
 * episodes with the same key had opened, taken from, or left alone the same things.
 */
function dealingsWith(actions: readonly string[], action: string): string {
  const entities = actionTemplate(action).entities.filter((e) => e.trim() !== '');
  return [...new Set(actions.filter((a) => a !== action && actionTemplate(a).entities.some((e) => entities.includes(e))))].sort().join('\u0001');
}

/**
 * A remembered state of a place (`remembered`: how the agent left it earlier in the episode) as
 * it looks now (`now`: the state the agent is in). What did not change when the agent left
 * (from `left`, the last state of its stay there, to `departed`, the state right after) went with the agent: what it holds and in what
 * state. That comes from now, line by line and sentence by sentence; the rest (the place, what
 * lies there) and the actions are remembered (dropping actions of things put down since cost
 * consistency). Without this, coming back to a place showed the agent holding what it held
 * then, in the state it was then.
 */
function carryOver(remembered: Observation, left: Observation, departed: Observation, now: Observation, action: string): Observation {
  const departedLines = departed.text.split('\n');
  const nowLines = now.text.split('\n');
  const leftLines = left.text.split('\n');
  const text = remembered.text
    .split('\n')
    .map((line) => {
      const key = lineKey(line);
      const went = departedLines.find((l) => lineKey(l) === key);
      const ours = nowLines.find((l) => lineKey(l) === key);
      // A line of one sentence describes the page (an option list and its choice, the page's
      // actions): it stays as remembered. Carried over, choosing an option again showed the
      // choice of the page open now, and training in the simulator suffered.
      if (went === undefined || ours === undefined || sentenceCount(line) < 2) return line;
      // Sentences as the agent left the place (not as it arrived: a thing changed there leaves
      // changed) that the departing step kept went with the agent; they come from now.
      const kept = sentencesOf(went);
      const stayed = new Set(sentencesOf(leftLines.find((l) => lineKey(l) === key) ?? line).filter((c) => kept.includes(c)).map(sentenceKey));
      const mine = sentencesOf(ours);
      return sentencesOf(line)
        .map((c) => (stayed.has(sentenceKey(c)) ? mine.find((o) => sentenceKey(o) === sentenceKey(c)) : undefined) ?? c)
        .join(' ');
    })
    .join('\n');
  return { text, actions: carriedActions(remembered, left, departed, now, action) };
}

/**
 * The place reached by a move (`action`, of one entity: `visit {}`) and the place left: the one
 * entity that fills the action's slot after the move, not before, and that other actions before
 * the move name (`inspect bin 1` where no `visit bin 1` is offered). Undefined where that is not
 * plain (a list, where many fill `pick[{}]`).
 */
function moveEnds(before: readonly string[], after: readonly string[], action: string): { there: string; here: string } | undefined {
  const own = actionTemplate(action);
  if (own.entities.length !== 1) return undefined;
  const there = own.entities[0] as string;
  const fills = (actions: readonly string[]): Set<string> => new Set(actions.map(actionTemplate).filter((t) => t.template === own.template).map((t) => t.entities[0] ?? ''));
  const fillsBefore = fills(before);
  const namedBefore = new Set(before.flatMap((a) => actionTemplate(a).entities));
  const left = [...fills(after)].filter((e) => e !== '' && e !== there && !fillsBefore.has(e) && namedBefore.has(e));
  return left.length === 1 ? { there, here: left[0] as string } : undefined;
}

/**
 * What the agent carries (in `before`): entities named both by an action not tied to the place
 * left (what lies there is named only with it: `lift {} from` there) and by one with it (`drop {}
 * at` there), that are not destinations of the move's kind and not in `known`.
 */
function carriedEntities(before: readonly string[], here: string, moveTemplate: string, known: ReadonlySet<string>): Set<string> {
  const destinations = new Set(before.map(actionTemplate).filter((t) => t.template === moveTemplate).flatMap((t) => t.entities));
  const lists = before.map((a) => actionTemplate(a).entities);
  const withHere = new Set(lists.filter((es) => es.includes(here)).flat());
  return new Set(
    lists
      .filter((es) => !es.includes(here))
      .flat()
      .filter((e) => withHere.has(e) && !destinations.has(e) && !known.has(e)),
  );
}

/** `before`'s actions on `carried` (alone or with the place left), moved to the place reached. */
function movedActions(before: readonly string[], carried: ReadonlySet<string>, here: string, there: string): string[] {
  const out: string[] = [];
  for (const a of before) {
    const { entities } = actionTemplate(a);
    if (entities.some((e) => carried.has(e)) && entities.every((e) => carried.has(e) || e === here)) out.push(applySubstitution(a, [[here, there]]));
  }
  return out;
}

/**
 * The remembered place's actions for what the agent holds now: actions of what went with the
 * agent when it left then and is gone now go; actions of what it carries now come along, moved
 * from the place it is at to the one it returns to (`drop box 1 at bin 2` becomes `drop box 1 at
 * rack 1`). Without this, a place came back with the actions of its first visit: an agent back
 * with the thing it was sent to put there could not put it down.
 */
function carriedActions(remembered: Observation, left: Observation, departed: Observation, now: Observation, action: string): string[] {
  const ends = moveEnds(now.actions, remembered.actions, action);
  if (!ends) return remembered.actions.slice();
  const entitiesOf = (o: Observation): Set<string> => new Set(o.actions.flatMap((a) => actionTemplate(a).entities));
  const nowEntities = entitiesOf(now);
  const departedEntities = entitiesOf(departed);
  const moveTemplate = actionTemplate(action).template;
  const destinations = new Set([...left.actions, ...departed.actions].map(actionTemplate).filter((t) => t.template === moveTemplate).flatMap((t) => t.entities));
  const wentThen = new Set([...entitiesOf(left)].filter((e) => departedEntities.has(e) && !nowEntities.has(e) && e !== ends.here && !destinations.has(e)));
  const kept = remembered.actions.filter((a) => !actionTemplate(a).entities.some((e) => wentThen.has(e)));
  const carried = carriedEntities(now.actions, ends.here, moveTemplate, entitiesOf(remembered));
  for (const a of movedActions(now.actions, carried, ends.here, ends.there)) if (!kept.includes(a)) kept.push(a);
  return kept;
}

/**
 * `o` without actions that name a place it offers to move to by another kind of action (`lift
 * box 1 from rack 1` where `visit rack 1` is offered): one acts only where one is, so those are
 * left over from places visited before. The move is the one-entity kind of action with the most
 * entities (`visit {}`), when it has at least three. Without it, moves piled up the actions of
 * earlier places, and what the agent held lost its actions among them.
 */
export function withoutStaleActions(o: Observation): Observation {
  const found = moveOf(o.actions);
  if (found === undefined) return o;
  const { move, destinations } = found;
  const actions = o.actions.filter((a) => {
    const { template, entities } = actionTemplate(a);
    return template === move || !entities.some((e) => destinations.has(e));
  });
  return actions.length === o.actions.length ? o : { text: o.text, actions };
}


/**
 * This state's text with the neighbour's edit applied line by line: for each line the neighbour's
 * action changed, the line of this text that starts with the same word gets the same change
 * (the changed words, rewritten, where this line has them; else the neighbour's new line,
 * rewritten). Choosing an option on an item's page then marks it selected on this item's page
 * instead of showing the neighbour's item. When the neighbour's line count changed, or a
 * changed line has no counterpart here, its new text is merged with this one ({@link mergeText}).
 */
function editText(ours: string, before: string, after: string, sub: Substitution, chosen?: { theirs: string; ours: string }): string {
  const a = before.split('\n');
  const b = after.split('\n');
  if (a.length !== b.length) return mergeText(ours, before, after, sub);
  const lines = ours.split('\n');
  for (let i = 0; i < a.length; i++) {
    const was = a[i] as string;
    const now = b[i] as string;
    if (was === now) continue;
    const key = lineKey(was);
    // A line listing the neighbour's chosen entity (`[red]` of `pick[red]`) is the line listing
    // ours (`[large]`), whatever its first word: by the first word, choosing in one list where the
    // neighbour chose in another marked the choice in the wrong list.
    const listing = chosen && lists(was, chosen.theirs) ? lines.findIndex((l) => lists(l, chosen.ours)) : -1;
    const at = listing >= 0 ? listing : lineKey(lines[i] ?? '') === key ? i : lines.findIndex((l) => lineKey(l) === key);
    // A line this state does not have: the neighbour's text, merged with ours line by line.
    // Copied whole, it brought the neighbour's "Holding: nothing." along (with episode memory's
    // carry-over, moves changed what the agent held).
    if (at < 0) return mergeText(ours, before, after, sub);
    const x = was.split(' ');
    const y = now.split(' ');
    let pre = 0;
    while (pre < x.length && pre < y.length && x[pre] === y[pre]) pre++;
    let post = 0;
    while (post < x.length - pre && post < y.length - pre && x[x.length - 1 - post] === y[y.length - 1 - post]) post++;
    const oldMid = applySubstitution(x.slice(pre, x.length - post).join(' '), sub);
    const newMid = applySubstitution(y.slice(pre, y.length - post).join(' '), sub);
    const line = lines[at] as string;
    let pos = oldMid === '' ? -1 : line.lastIndexOf(oldMid);
    // Only where it stands in a sentence of the same kind: an entity aligned with the wrong role
    // (a neighbour's place with this agent's thing) otherwise turned "Holding: box 2." into
    // "Holding: bin 1." on a move to the bin.
    // (A line found by the entity it lists is of our kind, whatever the neighbour's was.)
    const wasSentence = listing >= 0 ? sentenceKeyAt(line, 0) : sentenceKeyAt(was, x.slice(0, pre).join(' ').length + (pre > 0 ? 1 : 0));
    if (pos >= 0 && sentenceKeyAt(line, pos) !== wasSentence) pos = -1;
    // And only after the word it followed: "(selected: 8 cm)" -> "(selected: 16 cm)" found no
    // "(selected: 8" in "[8 cm] ... (selected: none)" and turned the option "[8 cm]" into a
    // second "[16 cm]". (Only after a label, a word ending in ":"; an edit inside a list, "you see
    // a box 1, ...", finds its place by the entity.)
    const anchor = pre > 0 && (x[pre - 1] as string).endsWith(':') ? `${applySubstitution(x[pre - 1] as string, sub)} ` : '';
    if (pos >= 0 && anchor !== '' && !line.slice(0, pos).endsWith(anchor)) {
      const anchored = line.lastIndexOf(anchor + oldMid);
      pos = anchored >= 0 ? anchored + anchor.length : -1;
    }
    // Where ours has the word before the edit in its last sentence, and the edit is in the
    // neighbour's last sentence, ours' end after that word is what the edit replaces ("(selected:
    // none)" -> "(selected: white)"); merged whole, the line took the neighbour's options.
    const tail = pos < 0 && anchor !== '' ? line.lastIndexOf(anchor) : -1;
    if (tail >= 0 && !line.slice(tail).includes('. ') && !x.slice(pre).join(' ').includes('. ') && sentenceKeyAt(line, tail) === wasSentence) {
      lines[at] = line.slice(0, tail + anchor.length) + applySubstitution(y.slice(pre).join(' '), sub);
      continue;
    }
    if (pos < 0) {
      lines[at] = mergeSentences(line, was, now, sub);
      continue;
    }
    // A deletion takes one space beside it along: "You reach bin 2. The bin 2 is closed." ->
    // "The bin 2 is closed." left " The bin 2 ..." with a space in front.
    let start = pos;
    let end = pos + oldMid.length;
    if (newMid === '') {
      if (line[end] === ' ') end++;
      else if (start > 0 && line[start - 1] === ' ') start--;
    }
    lines[at] = line.slice(0, start) + newMid + line.slice(end);
  }
  return lines.join('\n');
}

/** Whether `line` lists `entity` as an item (`[entity]` alone, not inside an action such as `pick[entity]`). */
function lists(line: string, entity: string): boolean {
  return line.startsWith(`[${entity}]`) || line.includes(` [${entity}]`);
}

/**
 * The neighbour's next text (`after`, reached from `before`), rewritten, with each line that
 * this text (`ours`) also has merged sentence by sentence ({@link mergeSentences}): what the
 * neighbour's step left as it was (what it holds) stays ours.
 */
function mergeText(ours: string, before: string, after: string, sub: Substitution): string {
  const ourLines = ours.split('\n');
  const beforeLines = before.split('\n');
  return after
    .split('\n')
    .map((line) => {
      const key = lineKey(line);
      const was = beforeLines.find((l) => lineKey(l) === key);
      const mine = ourLines.find((l) => lineKey(l) === key);
      if (was === undefined || mine === undefined) return applySubstitution(line, sub);
      return was === line ? mine : mergeSentences(mine, was, line, sub);
    })
    .join('\n');
}

const sentenceCount = (line: string): number => sentencesOf(line).length;
/** The first word of the sentence of `line` that holds position `pos`. */
function sentenceKeyAt(line: string, pos: number): string {
  const start = line.lastIndexOf('. ', Math.max(0, pos - 1));
  return sentenceKey(line.slice(start < 0 ? 0 : start + 2));
}

/**
 * One line merged sentence by sentence ({@link sentencesOf}): a sentence the neighbour's step
 * left as it was keeps ours where ours has a sentence with the same first word; the rest is the
 * neighbour's. Without it, moving on while holding a thing copied the neighbour's whole status
 * line, "Holding: box 1 (clean)" included, and a thing never cleaned counted as clean.
 */
function mergeSentences(ours: string, was: string, now: string, sub: Substitution): string {
  const unchanged = new Set(sentencesOf(was));
  const mine = sentencesOf(ours);
  return sentencesOf(now)
    .map((c) => (unchanged.has(c) ? mine.find((o) => sentenceKey(o) === sentenceKey(c)) : undefined) ?? applySubstitution(c, sub))
    .join(' ');
}
