/** The setup form's values as a training configuration (src/ui/setup/form.ts). */
import { describe, expect, it } from 'vitest';
import { PRESETS } from '../src/train/config.ts';
import { configFromForm, defaultSetupForm, presetValue, SetupFormError } from '../src/ui/setup/form.ts';

describe('setup form', () => {
  it('layers the preset under the fields filled in; blank fields keep the preset', () => {
    const c = configFromForm({ ...defaultSetupForm(), warmStart: false, env: 'household', mode: 's2r', preset: 'standard', seed: '7', advanced: { iterations: '4', noisyEpisodes: ' 3 ', sftEpochs: '2', groupSize: '' } });
    expect(c).toMatchObject({ env: 'household', mode: 's2r', seed: 7, iterations: 4, sim: 'retrieval', warmStart: 'none' });
    expect(c.offline.noisyEpisodes).toBe(3);
    expect(c.offline.expertEpisodes).toBe(PRESETS.standard.offline.expertEpisodes);
    expect(c.sft.epochs).toBe(2);
    expect(c.groupSize).toBe(PRESETS.standard.groupSize);
  });

  it('warm-starts RL modes only; the first form is dreamgym warm-started', () => {
    expect(defaultSetupForm()).toMatchObject({ mode: 'dreamgym', warmStart: true });
    expect(configFromForm({ ...defaultSetupForm(), mode: 'dreamgym', warmStart: true }).warmStart).toBe('sft');
    expect(configFromForm({ ...defaultSetupForm(), mode: 'sft', warmStart: true }).warmStart).toBe('none');
  });

  it('names the field of a bad value', () => {
    const bad = (patch: Parameters<typeof configFromForm>[0]) => {
      try {
        configFromForm(patch);
      } catch (e) {
        return e;
      }
      return null;
    };
    const e1 = bad({ ...defaultSetupForm(), seed: '1e3' });
    expect(e1).toBeInstanceOf(SetupFormError);
    expect((e1 as SetupFormError).field).toBe('seed');
    const e2 = bad({ ...defaultSetupForm(), advanced: { groupSize: '1' } });
    expect((e2 as SetupFormError).field).toBe('groupSize');
    expect((e2 as Error).message).toMatch(/Rollouts per task \(G\): expected a whole number of at least 2, got "1"/);
    expect(configFromForm({ ...defaultSetupForm(), seed: '-3' }).seed).toBe(-3);
  });

  it('shows the preset values as the placeholders of blank fields', () => {
    expect(presetValue('quick', 'iterations')).toBe(PRESETS.quick.iterations);
    expect(presetValue('standard', 'expertEpisodes')).toBe(PRESETS.standard.offline.expertEpisodes);
    expect(presetValue('quick', 'sftEpochs')).toBe(PRESETS.quick.sft.epochs);
  });
});
