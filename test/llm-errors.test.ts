import { describe, expect, it } from 'vitest';
import { LLMUnavailableError, LLM_UNAVAILABLE_REASONS, classifyLoadError, errorText } from '../src/llm/errors.ts';

describe('classifyLoadError', () => {
  // Texts as WebLLM's worker protocol delivers them: `err.toString()` of the worker-side error.
  const cases: [string, unknown, string, RegExp][] = [
    ['no network (worker string)', 'TypeError: Failed to fetch', 'no-network', /could not be downloaded/],
    ['no network (Error)', new TypeError('Failed to fetch'), 'no-network', /could not be downloaded/],
    ['no network (Firefox)', 'TypeError: NetworkError when attempting to fetch resource.', 'no-network', /could not be downloaded/],
    ['shader-f16', 'ShaderF16SupportError: This model requires WebGPU extension shader-f16, which is not enabled in this browser.', 'no-shader-f16', /shader-f16.*q4f32/],
    ['device lost', 'DeviceLostError: The WebGPU device was lost while loading the model.', 'out-of-memory', /ran out of memory/],
    ['oom', new Error('Out of memory while allocating buffer'), 'out-of-memory', /ran out of memory/],
    ['no webgpu', 'WebGPUNotAvailableError: WebGPU is not supported in your current environment', 'no-webgpu', /WebGPU is not available/],
    ['no adapter', 'WebGPUNotFoundError: Unable to find a compatible GPU.', 'no-webgpu', /WebGPU is not available/],
    ['other', 'Error: tokenizer.json is malformed', 'load-failed', /could not be loaded: Error: tokenizer\.json is malformed/],
  ];
  for (const [name, error, reason, message] of cases) {
    it(`classifies ${name} as ${reason}`, () => {
      const e = classifyLoadError(error, 'Tiny-q4f32_1-MLC');
      expect(e).toBeInstanceOf(LLMUnavailableError);
      expect(e.reason).toBe(reason);
      expect(e.message).toMatch(message);
      expect(e.message).toContain('Tiny-q4f32_1-MLC');
      expect(e.modelId).toBe('Tiny-q4f32_1-MLC');
      expect(e.cause).toBe(error);
    });
  }

  it('passes an LLMUnavailableError through unchanged', () => {
    const e = new LLMUnavailableError('no-webgpu', 'none here');
    expect(classifyLoadError(e, 'x')).toBe(e);
  });

  it('covers every reason', () => {
    const seen = new Set(cases.map((c) => c[2]));
    expect([...seen].sort()).toEqual([...LLM_UNAVAILABLE_REASONS].sort());
  });

  it('cuts very long error texts', () => {
    const e = classifyLoadError(`Error: ${'x'.repeat(2000)}`, 'm');
    expect(e.message.length).toBeLessThan(500);
  });
});

describe('errorText', () => {
  it('renders errors, strings and other values', () => {
    expect(errorText(new RangeError('bad'))).toBe('RangeError: bad');
    expect(errorText('plain')).toBe('plain');
    expect(errorText({ a: 1 })).toBe('{"a":1}');
    expect(errorText(undefined)).toBe('undefined');
  });
});
