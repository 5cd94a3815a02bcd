/**
 * The rules the sidebar shares with Python, checked on the same data: the formatter
 * (tests/shared/formatting.json), the timeline's time axis (tests/shared/time_axis.json),
 * the `%%step` line parser (the cases in src/spec.json, parsed by Python's own parser)
 * and the palette (src/spec.json, from resumable_cells/palette.py).
 */
import * as fs from 'fs';
import * as path from 'path';
import { describe, expect, it } from 'vitest';

import {
  formatAge,
  formatBytes,
  formatCount,
  formatDuration,
  formatPercent,
  middleEllipsis
} from '../src/format';
import { paletteCss, STATUS_WORD } from '../src/palette';
import { provenanceSentence } from '../src/provenance';
import spec from '../src/spec.json';
import { parseStepLine } from '../src/stepline';
import { laneAxes } from '../src/timeaxis';

const SHARED = path.resolve(__dirname, '..', '..', 'tests', 'shared');
const load = (name: string) => JSON.parse(fs.readFileSync(path.join(SHARED, name), 'utf8'));

describe('one provenance sentence (resumable_cells/records/provenance.py)', () => {
  const cases = load('provenance.json').sentence as Array<{
    now: number;
    provenance: Parameters<typeof provenanceSentence>[0];
    expected: string;
  }>;
  it.each(cases)('$expected', c => {
    expect(provenanceSentence(c.provenance, c.now)).toBe(c.expected);
  });
});

describe('one formatter (resumable_cells/formatting.py)', () => {
  const cases = load('formatting.json');
  it.each(cases.duration as Array<[number | null, string]>)('duration %s -> %s', (s, text) => {
    expect(formatDuration(s)).toBe(text);
  });
  it.each(cases.count as Array<[number | null, string]>)('count %s -> %s', (n, text) => {
    expect(formatCount(n)).toBe(text);
  });
  it.each(cases.size as Array<[number | null, string]>)('size %s -> %s', (n, text) => {
    expect(formatBytes(n)).toBe(text);
  });
  it.each(cases.age as Array<[number | null, string]>)('age %s -> %s', (s, text) => {
    expect(formatAge(s)).toBe(text);
  });
  it.each(cases.percent as Array<[number | null, string]>)('percent %s -> %s', (f, text) => {
    expect(formatPercent(f)).toBe(text);
  });
});

describe('the %%step line, parsed as the magic parses it', () => {
  type Case = { line: string; parsed?: Record<string, unknown>; error?: string };
  it.each(spec.step_magic.cases as Case[])('%%step $line', c => {
    const got = parseStepLine(c.line);
    if (c.error !== undefined) {
      expect(got).toEqual({ error: c.error });
    } else {
      expect(got).toEqual({ parsed: c.parsed });
    }
  });
  it('knows exactly the flags the magic declares', () => {
    const flags = spec.step_magic.arguments.map(a => a.name).sort();
    expect(flags).toEqual([
      '--auto',
      '--deps',
      '--effect',
      '--force',
      '--ignore',
      '--ttl',
      '--version',
      'name'
    ]);
  });
});

describe('one time axis (resumable_cells/records/timeline.py lane_axes)', () => {
  type Case = {
    title: string;
    lanes: Array<Array<[number, number]>>;
    length: number;
    axis: number[][][];
  };
  it.each(load('time_axis.json').cases as Case[])('$title', c => {
    const { maps, length } = laneAxes(c.lanes);
    expect(length).toBeCloseTo(c.length, 6);
    c.lanes.forEach((lane, i) =>
      lane.forEach(([s, e], j) => {
        expect(maps[i](s)).toBeCloseTo(c.axis[i][j][0], 6);
        expect(maps[i](e)).toBeCloseTo(c.axis[i][j][1], 6);
      })
    );
  });
});

describe('one palette (resumable_cells/palette.py)', () => {
  it('gives every status a word and a colour in both themes', () => {
    expect(STATUS_WORD.hit).toBe('served');
    expect(STATUS_WORD.live).toBe('ran');
    const css = paletteCss();
    for (const [status, s] of Object.entries(spec.statuses)) {
      expect(css).toContain(`--rc-${status}: ${s.light};`);
      expect(css).toContain(`--rc-${status}: ${s.dark};`);
    }
    expect(css).toContain("body[data-jp-theme-light='false']");
  });
});

describe('middleEllipsis', () => {
  it('keeps names that fit and cuts longer ones in the middle', () => {
    expect(middleEllipsis('s12_outliers', 16)).toBe('s12_outliers');
    expect(middleEllipsis('s18_transitions', 15)).toBe('s18_transitions');
    expect(middleEllipsis('s18_transitions', 9)).toBe('s18_…ions');
    expect(middleEllipsis('abcdef', 1)).toBe('…');
  });
});
