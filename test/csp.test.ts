/**
 * The page's Content-Security-Policy (vite.config.ts) against WebLLM's model list: every model's
 * weights (Hugging Face, and the CDNs it redirects downloads to) and WebGPU library
 * (raw.githubusercontent.com) may be fetched, and no other host. Model downloads are the only
 * network use of the page, and only when the person asks for a model.
 */
import { prebuiltAppConfig } from '@mlc-ai/web-llm';
import { describe, expect, it } from 'vitest';
import { CONTENT_SECURITY_POLICY } from '../vite.config.ts';

const directives = new Map(
  CONTENT_SECURITY_POLICY.split(';').map((d) => {
    const [name, ...sources] = d.trim().split(/\s+/);
    return [name as string, sources];
  }),
);

/** Whether CSP source expression `source` allows `url` (scheme and host; paths are not used here). */
function allows(source: string, url: URL): boolean {
  if (source === "'self'") return false; // the page's own origin is not a model host
  const m = /^(https?):\/\/(\*\.)?([^/:]+)$/.exec(source);
  if (!m) return false;
  const [, scheme, wildcard, host] = m;
  if (`${scheme}:` !== url.protocol) return false;
  return wildcard ? url.hostname.endsWith(`.${host}`) : url.hostname === host;
}
const connectAllows = (url: string): boolean => (directives.get('connect-src') ?? []).some((s) => allows(s, new URL(url)));

describe('Content-Security-Policy and model downloads', () => {
  it('lets the page fetch every prebuilt model’s weights and WebGPU library', () => {
    const hosts = new Set<string>();
    for (const record of prebuiltAppConfig.model_list) {
      // WebLLM fetches weights below `<model>/resolve/main/`.
      const weights = new URL('resolve/main/tensor-cache.json', record.model.endsWith('/') ? record.model : `${record.model}/`).href;
      expect(connectAllows(weights), record.model_id).toBe(true);
      expect(connectAllows(record.model_lib), record.model_lib).toBe(true);
      hosts.add(new URL(record.model).hostname).add(new URL(record.model_lib).hostname);
    }
    expect([...hosts].sort()).toEqual(['huggingface.co', 'raw.githubusercontent.com']);
  });

  it('lets the downloads follow Hugging Face’s redirects to its storage CDNs', () => {
    for (const host of ['cdn-lfs.huggingface.co', 'cdn-lfs-us-1.hf.co', 'cas-bridge.xethub.hf.co']) expect(connectAllows(`https://${host}/x`), host).toBe(true);
  });

  it('allows no other host, and nothing unencrypted', () => {
    expect(directives.get('connect-src')).toEqual(["'self'", 'https://huggingface.co', 'https://*.huggingface.co', 'https://*.hf.co', 'https://raw.githubusercontent.com']);
    for (const url of ['https://github.com/mlc-ai', 'https://example.com/', 'http://huggingface.co/x', 'https://huggingface.co.evil.example/x', 'https://githubusercontent.com/x']) {
      expect(connectAllows(url), url).toBe(false);
    }
    // Only the page's own scripts, workers, styles, images and fonts: no other origin anywhere.
    for (const [name, sources] of directives) {
      if (name === 'connect-src') continue;
      for (const s of sources) expect(s, `${name} ${s}`).not.toMatch(/^https?:/);
    }
  });

  it('lets WebAssembly compile (tfjs-wasm and WebLLM’s model libraries) without allowing eval', () => {
    expect(directives.get('script-src')).toContain("'wasm-unsafe-eval'");
    expect(CONTENT_SECURITY_POLICY).not.toMatch(/'unsafe-eval'|'unsafe-inline'/);
  });
});
