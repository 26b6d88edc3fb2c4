import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import {
  BackendError,
  backendFromUrl,
  chooseBackend,
  currentGpuDevice,
  planBackends,
  probeAdapter,
  type AdapterReport,
  type GpuLike,
} from '../src/policy/backend.ts';

const hardware: AdapterReport = { description: 'NVIDIA H100', vendor: 'nvidia', architecture: 'hopper', isFallbackAdapter: false };
const swiftshader: AdapterReport = { description: 'Google SwiftShader', vendor: 'google', architecture: 'swiftshader', isFallbackAdapter: true };

describe('planBackends', () => {
  it('auto: WebGPU only on a hardware adapter, else wasm, then cpu', () => {
    expect(planBackends('auto', hardware).order).toEqual(['webgpu', 'wasm', 'cpu']);
    expect(planBackends('auto', swiftshader).order).toEqual(['wasm', 'cpu']);
    expect(planBackends('auto', swiftshader).reason).toMatch(/fallback/);
    expect(planBackends('auto', null).order).toEqual(['wasm', 'cpu']);
  });
  it('a named backend comes first; WebGPU by name uses even a fallback adapter, but not a missing one', () => {
    expect(planBackends('webgpu', swiftshader).order).toEqual(['webgpu', 'wasm', 'cpu']);
    expect(planBackends('webgpu', null).order).toEqual(['wasm', 'cpu']);
    expect(planBackends('wasm', hardware).order).toEqual(['wasm', 'cpu']);
    expect(planBackends('cpu', hardware).order).toEqual(['cpu']);
  });
});

describe('backendFromUrl', () => {
  it('reads ?backend=, ignores its absence and rejects unknown values by name', () => {
    expect(backendFromUrl('http://127.0.0.1:5173/?backend=wasm')).toBe('wasm');
    expect(backendFromUrl(new URL('http://x/?a=1&backend=webgpu'))).toBe('webgpu');
    expect(backendFromUrl('/?backend=auto')).toBe('auto');
    expect(backendFromUrl('http://x/')).toBeUndefined();
    expect(() => backendFromUrl('http://x/?backend=webgl')).toThrow(BackendError);
    expect(() => backendFromUrl('http://x/?backend=webgl')).toThrow(/"webgl"/);
  });
});

describe('probeAdapter', () => {
  it('describes the adapter from adapter.info, including the fallback flag', async () => {
    const gpu: GpuLike = {
      requestAdapter: () => Promise.resolve({ isFallbackAdapter: true, info: { vendor: 'google', architecture: 'swiftshader', description: '' } }),
    };
    expect(await probeAdapter(gpu)).toEqual({ description: 'google swiftshader', vendor: 'google', architecture: 'swiftshader', isFallbackAdapter: true });
  });
  it('reads the fallback flag from info and older requestAdapterInfo()', async () => {
    const viaInfo: GpuLike = { requestAdapter: () => Promise.resolve({ info: { vendor: 'nvidia', description: 'RTX', isFallbackAdapter: false } }) };
    expect((await probeAdapter(viaInfo))?.isFallbackAdapter).toBe(false);
    const legacy: GpuLike = { requestAdapter: () => Promise.resolve({ requestAdapterInfo: () => Promise.resolve({ vendor: 'amd', architecture: 'rdna3' }) }) };
    expect(await probeAdapter(legacy)).toMatchObject({ description: 'amd rdna3', isFallbackAdapter: false });
  });
  it('is null without WebGPU, without an adapter, or when the request fails', async () => {
    expect(await probeAdapter(null)).toBeNull();
    expect(await probeAdapter({ requestAdapter: () => Promise.resolve(null) })).toBeNull();
    expect(await probeAdapter({ requestAdapter: () => Promise.reject(new Error('blocked')) })).toBeNull();
  });
});

describe('chooseBackend in Node', () => {
  it('uses cpu when asked', async () => {
    const report = await chooseBackend({ prefer: 'cpu' });
    expect(report).toMatchObject({ backend: 'cpu', requested: 'cpu', threaded: false, adapter: null, failures: [] });
    expect(tf.getBackend()).toBe('cpu');
    expect(currentGpuDevice()).toBeNull();
  });
  it('auto without WebGPU picks single-threaded wasm', async () => {
    const report = await chooseBackend({ gpu: null });
    expect(report).toMatchObject({ backend: 'wasm', requested: 'auto', threaded: false, threads: 1, adapter: null });
    expect(tf.getBackend()).toBe('wasm');
  });
  it('auto with a hardware adapter tries WebGPU first and falls back to wasm where it cannot start', async () => {
    const gpu: GpuLike = { requestAdapter: () => Promise.resolve({ info: { vendor: 'nvidia', architecture: 'hopper', description: 'NVIDIA H100' } }) };
    const report = await chooseBackend({ gpu });
    expect(report.backend).toBe('wasm');
    expect(report.adapter?.description).toBe('NVIDIA H100');
    expect(report.failures[0]).toMatch(/^webgpu: /);
    expect(report.reason).toMatch(/fell back to wasm/);
  });
  it('rejects an unknown preference', async () => {
    await expect(chooseBackend({ prefer: 'tpu' as 'cpu' })).rejects.toThrow(/Unknown backend "tpu"/);
  });
});
