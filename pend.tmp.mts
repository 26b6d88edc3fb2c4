import { getEnvSpec } from './src/envs/registry.ts';
import { evaluationTasks } from './src/train/setup.ts';
import { conjunctionKeys, instructionProfile } from './src/policy/matching.ts';
import { observationWithoutInstruction } from './src/policy/features.ts';
const spec = getEnvSpec('shop');
const tasks = evaluationTasks(spec, 100);
const t = tasks.find((x) => x.id === 'shop-test-1-24')!;
const e = spec.create(); let o = e.reset(t);
const hist: string[] = [];
for (const a of ['search[desk lamp that is refillable, in white]', 'click[B0OJCTMVCS]']) { hist.push(a); o = e.step(a).observation; }
console.log(o.text);
const p = instructionProfile(t.instruction);
console.log([...p.words]);
const keys = conjunctionKeys(p, o.actions, hist, observationWithoutInstruction({ instruction: t.instruction, observation: o }));
o.actions.forEach((a, i) => console.log(a, keys[i]));
