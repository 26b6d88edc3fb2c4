import { describe, expect, it } from 'vitest';
import { ENVIRONMENTS, getEnvSpec, isBuiltinEnv, registerEnvSpec, unregisterEnvSpec } from '../src/envs/registry.ts';
import type { AnyEnvSpec } from '../src/envs/spec.ts';

const fake = (name: string): AnyEnvSpec => ({ name, description: 'x', maxSteps: 1, create: () => ENVIRONMENTS.shop.create(), tasks: () => [], validateTask: () => ({ ok: true }) });

describe('the environment registry', () => {
  it('finds built-in environments, and a registered one until it is unregistered', () => {
    expect(getEnvSpec('shop')).toBe(ENVIRONMENTS.shop);
    expect(isBuiltinEnv('household')).toBe(true);
    expect(isBuiltinEnv('library')).toBe(false);
    expect(() => getEnvSpec('library')).toThrow(/Unknown environment "library": use one of shop, household, or load your own with --env-module PATH/);
    const spec = fake('library');
    registerEnvSpec(spec);
    try {
      expect(getEnvSpec('library')).toBe(spec);
      registerEnvSpec(spec);
      expect(() => registerEnvSpec(fake('library'))).toThrow(/another environment named "library" is loaded already/);
    } finally {
      unregisterEnvSpec(spec);
    }
    expect(() => getEnvSpec('library')).toThrow(/Unknown environment/);
  });

  it('refuses built-in names and names that break the pattern', () => {
    expect(() => registerEnvSpec(fake('shop'))).toThrow(/built-in/);
    expect(() => registerEnvSpec(fake('Library'))).toThrow(/does not match/);
    expect(() => getEnvSpec('__proto__')).toThrow(/Unknown environment/);
  });
});
