import { describe, expect, it } from 'vitest';
import { replaceSection } from '../src/cli/bench.ts';

describe('bench markdown sections', () => {
  it('replaces only the text between a suite markers', () => {
    const doc = '# B\n\nintro\n<!-- bench:envs:start -->\nold\n<!-- bench:envs:end -->\nnotes by hand\n';
    const next = replaceSection(doc, 'envs', 'new table');
    expect(next).toBe('# B\n\nintro\n<!-- bench:envs:start -->\nnew table\n<!-- bench:envs:end -->\nnotes by hand\n');
  });
  it('appends a section when the markers are absent', () => {
    const next = replaceSection('# B\n', 'replay', 'rows');
    expect(next).toBe('# B\n\n## replay\n\n<!-- bench:replay:start -->\nrows\n<!-- bench:replay:end -->\n');
  });
});
