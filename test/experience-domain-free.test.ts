import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENV_NAMES } from '../src/core/types.ts';

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** The names the bundled environment modules export (`export const name ... = 'x'`), read from disk. */
function moduleNames(): string[] {
  return filesUnder('src/envs').flatMap((path) => {
    const m = /export const name\b[^=]*=\s*'([a-z][a-z0-9-]*)'/.exec(readFileSync(path, 'utf8'));
    return m ? [m[1] as string] : [];
  });
}

/**
 * Words of the built-in domains that no general mechanism needs: their action language, their
 * things and their pages. A rule that needs one of them is a rule for one domain.
 */
const DISTINCTIVE: readonly RegExp[] = [
  /webshop/i,
  /alfworld/i,
  /fridge/i,
  /potato/i,
  /microwave/i,
  /countertop/i,
  /sinkbasin/i,
  /desklamp/i,
  /stoveburner/i,
  /cabinet/i,
  /drawer/i,
  /in\/on/i,
  /buy now/i,
  /back to search/i,
  /< prev/i,
  /next >/i,
  /search\[/i,
  /click\[/i,
  /\bgo to (?:\{\}|[a-z]+ \d)/i,
  /your task is to/i,
  /Instruction: /,
  /purchase/i,
  /product/i,
];

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('the simulator names no domain', () => {
  const files = filesUnder('src/experience');
  const names = [...new Set([...ENV_NAMES, ...moduleNames()])];

  it('finds the simulator sources and the domain names to look for', () => {
    expect(files.filter((f) => f.endsWith('.ts')).length).toBeGreaterThanOrEqual(10);
    expect(names).toEqual(expect.arrayContaining(['shop', 'household', 'tickets', 'library']));
  });

  it('no file under src/experience contains a built-in domain name or one of their distinctive words', () => {
    const patterns = [...names.map((n) => new RegExp(`\\b${escape(n)}\\b`, 'i')), ...DISTINCTIVE];
    const found: string[] = [];
    for (const file of files) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          for (const re of patterns) if (re.test(line)) found.push(`${file}:${i + 1}: ${re.source}: ${line.trim()}`);
        });
    }
    expect(found).toEqual([]);
  });
});
