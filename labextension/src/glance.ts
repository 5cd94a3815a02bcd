/**
 * The cache at a glance: the run's hit rate and time saved, the local store's size,
 * limit and entries, and the team cache's, in the words `%step status` uses
 * (resumable_cells/records/views.py) and written by the one formatter.
 */

import { formatBytes, formatDuration, formatPercent } from './format';
import type { ICacheFigures, IStoreFigures, ITeamFigures, IWritingFigures } from './protocol';

/** Executions of the run by outcome, as ICounts in viewmodel.ts. */
interface IRunCounts {
  served: number;
  ran: number;
  savedS: number;
}

/** One line of the cache section: a gauge when there is a limit. */
export interface ICacheLine {
  name: 'store' | 'team' | 'writing';
  /** bytes / limit in [0, 1]; null without a limit or when unknown. */
  fraction: number | null;
  text: string;
  title: string;
}

export interface ICacheView {
  /** `80% served (12 of 15 pure executions) · 41.2 s saved`, or null before any. */
  hitRate: string | null;
  lines: ICacheLine[];
  /** Entries the local store holds (0: nothing to clear), null when unknown. */
  entries: number | null;
}

/** `served / (served + ran)`: effects always run, so they are not counted. */
export function hitRate(c: IRunCounts): number | null {
  const pure = c.served + c.ran;
  return pure > 0 ? c.served / pure : null;
}

function hitRateText(c: IRunCounts): string | null {
  const rate = hitRate(c);
  if (rate === null) {
    return null;
  }
  const pure = c.served + c.ran;
  return (
    `${formatPercent(rate)} served (${c.served} of ${pure} pure executions) · ` +
    `${formatDuration(c.savedS)} saved`
  );
}

function entriesText(n: number): string {
  return `${n} ${n === 1 ? 'entry' : 'entries'}`;
}

function storeLine(s: IStoreFigures): ICacheLine {
  return {
    name: 'store',
    fraction: s.limit > 0 ? Math.min(1, s.bytes / s.limit) : null,
    text: `${formatBytes(s.bytes)} of ${formatBytes(s.limit)} · ${entriesText(s.entries)}`,
    title: `the local store, ${s.dir}: its blobs take ${formatBytes(s.bytes)} of its ${formatBytes(s.limit)} limit (least recently used entries go first)`
  };
}

function teamLine(t: ITeamFigures): ICacheLine {
  if (t.error) {
    return { name: 'team', fraction: null, text: t.error, title: `the team cache ${t.url}` };
  }
  const size =
    t.bytes === null
      ? ''
      : t.limit
        ? `${formatBytes(t.bytes)} of ${formatBytes(t.limit)}`
        : `${formatBytes(t.bytes)} (no limit)`;
  const parts = [size, t.entries === null ? '' : entriesText(t.entries)].filter(Boolean);
  return {
    name: 'team',
    fraction: t.bytes !== null && t.limit ? Math.min(1, t.bytes / t.limit) : null,
    text: parts.join(' · ') || 'no figures',
    title: `the team cache ${t.url}`
  };
}

/** `2 entries · 400.0 MB: fit, score`, as `%step status` says it. */
function writingLine(w: IWritingFigures): ICacheLine {
  return {
    name: 'writing',
    fraction: null,
    text: `${entriesText(w.entries)} · ${formatBytes(w.bytes)}: ${w.steps.join(', ')}`,
    title:
      'values written in the background: each entry is served once its bytes are written ' +
      'and match the digests taken when its step ended'
  };
}

export function cacheView(cache: ICacheFigures | null, run: IRunCounts): ICacheView {
  const lines: ICacheLine[] = [];
  if (cache?.store) {
    lines.push(storeLine(cache.store));
  }
  if (cache?.team) {
    lines.push(teamLine(cache.team));
  }
  if (cache?.writing && cache.writing.entries > 0) {
    lines.push(writingLine(cache.writing));
  }
  return { hitRate: hitRateText(run), lines, entries: cache?.store?.entries ?? null };
}
