import { describe, expect, it } from 'vitest';
import type { Observation } from '../src/core/types.ts';
import { NoExpertEnv } from './fixtures/no-expert.ts';
import { Rng } from '../src/core/rng.ts';
import { runEpisode } from '../src/envs/episode.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { createHouseholdExplorer, householdExplorerAction, HouseholdEnv, parseHouseholdInstruction, type ExplorerContext } from '../src/envs/household/index.ts';

function ctx(instruction: string, observation: Observation, history: string[] = []): ExplorerContext {
  return { instruction, observation, history: history.map((action) => ({ action })) };
}

describe('household explorer', () => {
  it('reads the six instruction forms', () => {
    expect(parseHouseholdInstruction('put a clean fork in drawer.')).toEqual({ object: 'fork', receptacle: 'drawer', condition: 'clean', count: 1 });
    expect(parseHouseholdInstruction('put a hot plate in sinkbasin.')).toEqual({ object: 'plate', receptacle: 'sinkbasin', condition: 'hot', count: 1 });
    expect(parseHouseholdInstruction('put a cool apple in countertop.')).toEqual({ object: 'apple', receptacle: 'countertop', condition: 'cool', count: 1 });
    expect(parseHouseholdInstruction('put an egg in fridge.')).toEqual({ object: 'egg', receptacle: 'fridge', condition: null, count: 1 });
    expect(parseHouseholdInstruction('put two pen in desk.')).toEqual({ object: 'pen', receptacle: 'desk', condition: null, count: 2 });
    expect(parseHouseholdInstruction('look at cd under the desklamp.')).toEqual({ object: 'cd', receptacle: null, condition: null, count: 1 });
    expect(parseHouseholdInstruction('make me a sandwich')).toBeNull();
  });

  const instruction = 'put a hot plate in sinkbasin.';
  const rooms = ['cabinet 1', 'cabinet 2', 'countertop 1', 'microwave 1', 'sinkbasin 1'];
  const obs = (location: string | null, tail: string, extra: string[]): Observation => ({
    text: `Your task is to: ${instruction}\nSomething happened.\nLocation: ${location ?? 'middle of the room'}${tail}`,
    actions: [...rooms.filter((r) => r !== location).map((r) => `go to ${r}`), ...extra, 'inventory', 'look'],
  });

  it('explores in listed order, least recently visited first, and opens closed receptacles', () => {
    expect(householdExplorerAction(ctx(instruction, obs(null, '. Holding: nothing.', [])))).toBe('go to cabinet 1');
    const closed = obs('cabinet 1', ' (closed). Holding: nothing.', ['open cabinet 1', 'examine cabinet 1']);
    expect(householdExplorerAction(ctx(instruction, closed, ['go to cabinet 1']))).toBe('open cabinet 1');
    const empty = obs('cabinet 1', ' (open); you see nothing. Holding: nothing.', ['close cabinet 1', 'examine cabinet 1']);
    expect(householdExplorerAction(ctx(instruction, empty, ['go to cabinet 1', 'open cabinet 1']))).toBe('go to cabinet 2');
    const history = ['go to cabinet 1', 'go to cabinet 2', 'go to countertop 1', 'go to microwave 1', 'go to sinkbasin 1', 'go to cabinet 1'];
    const atCab1 = obs('cabinet 1', ' (open); you see nothing. Holding: nothing.', ['close cabinet 1']);
    expect(householdExplorerAction(ctx(instruction, atCab1, history))).toBe('go to cabinet 2');
  });

  it('takes the named object, heats it, and puts it in the named receptacle', () => {
    const withPlate = obs('cabinet 2', ' (open); you see plate 1, mug 1. Holding: nothing.', ['close cabinet 2', 'take plate 1 from cabinet 2', 'take mug 1 from cabinet 2']);
    expect(householdExplorerAction(ctx(instruction, withPlate))).toBe('take plate 1 from cabinet 2');
    const holding = obs('cabinet 2', ' (open); you see mug 1. Holding: plate 1.', ['close cabinet 2', 'put plate 1 in/on cabinet 2']);
    expect(householdExplorerAction(ctx(instruction, holding))).toBe('go to microwave 1');
    const atMicrowave = obs('microwave 1', ' (closed). Holding: plate 1.', ['open microwave 1', 'heat plate 1 with microwave 1']);
    expect(householdExplorerAction(ctx(instruction, atMicrowave))).toBe('heat plate 1 with microwave 1');
    const hot = obs('microwave 1', ' (closed). Holding: plate 1 (hot).', ['open microwave 1', 'heat plate 1 with microwave 1']);
    expect(householdExplorerAction(ctx(instruction, hot))).toBe('go to sinkbasin 1');
    const atSink = obs('sinkbasin 1', '; you see nothing. Holding: plate 1 (hot).', ['put plate 1 in/on sinkbasin 1', 'clean plate 1 with sinkbasin 1']);
    expect(householdExplorerAction(ctx(instruction, atSink))).toBe('put plate 1 in/on sinkbasin 1');
  });

  it('switches the desklamp on when holding the object to look at', () => {
    const look = 'look at cd under the desklamp.';
    const o: Observation = {
      text: `Your task is to: ${look}\nYou arrive at desk 1.\nLocation: desk 1; you see desklamp 1 (off). Holding: cd 1.`,
      actions: ['go to drawer 1', 'put cd 1 in/on desk 1', 'use desklamp 1', 'examine desk 1', 'examine cd 1', 'inventory', 'look'],
    };
    expect(householdExplorerAction(ctx(look, o, ['go to drawer 1', 'take cd 1 from drawer 1', 'go to desk 1']))).toBe('use desklamp 1');
  });

  it('as a demonstrator: reads the instruction from the first observation, keeps its own history, never asks the expert', () => {
    const spec = getEnvSpec('household');
    expect(spec.demonstrator).toBe(createHouseholdExplorer);
    const env = new NoExpertEnv(new HouseholdEnv());
    const tasks = spec.tasks({ split: 'test', count: 12, seed: 3 });
    let successes = 0;
    for (const task of tasks) {
      const trajectory = runEpisode(env, task, createHouseholdExplorer(), { rng: new Rng(0) });
      if (trajectory.success) successes++;
      // Each step is what the stateless rule chooses for the same instruction and history.
      trajectory.steps.forEach((step, i) => {
        const history = trajectory.steps.slice(0, i).map((s) => s.action);
        expect(step.action).toBe(householdExplorerAction(ctx(task.instruction, step.observation, history)));
      });
    }
    expect(successes).toBeGreaterThanOrEqual(11);
  });
});
