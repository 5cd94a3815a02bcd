/**
 * How a duration, a time saved and a count are written: the rule of
 * resumable_cells/formatting.py, so the panel, the status line, `%step status` and the
 * CLI write the same figure the same way (both test suites check the cases in
 * tests/shared/formatting.json). Rounding is done on integers, never by toFixed, so
 * Python and JavaScript write the same digits for the same float.
 */

function halfUp(x: number): number {
  return Math.floor(x + 0.5);
}

function fixed(x: number, digits: number): string {
  const sign = x < 0 ? '-' : '';
  const scale = 10 ** digits;
  const scaled = halfUp(Math.abs(x) * scale);
  const whole = Math.floor(scaled / scale);
  const frac = scaled - whole * scale;
  return sign + (digits ? `${whole}.${String(frac).padStart(digits, '0')}` : `${whole}`);
}

/** `0.6 ms`, `628 ms`, `1.52 s`, `12.3 s`, `2m 40s`, `1h 05m`; `–` when unknown. */
export function formatDuration(s: number | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s)) {
    return '–';
  }
  s = Math.max(0, s);
  if (s === 0) {
    return '0 ms';
  }
  if (s < 0.00095) {
    return `${fixed(s * 1000, 1)} ms`;
  }
  if (halfUp(s * 1000) < 1000) {
    return `${halfUp(s * 1000)} ms`;
  }
  if (halfUp(s * 100) < 1000) {
    return `${fixed(s, 2)} s`;
  }
  if (halfUp(s * 10) < 600) {
    return `${fixed(s, 1)} s`;
  }
  if (halfUp(s) < 3600) {
    const total = halfUp(s);
    const m = Math.floor(total / 60);
    return `${m}m ${String(total - m * 60).padStart(2, '0')}s`;
  }
  const minutes = halfUp(s / 60);
  const h = Math.floor(minutes / 60);
  return `${h}h ${String(minutes - h * 60).padStart(2, '0')}m`;
}

/** `950`, `12.5k`, `310k`, `1.2M`, `31M`; `–` when unknown. */
export function formatCount(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) {
    return '–';
  }
  if (halfUp(Math.abs(n) / 1e3) >= 1000) {
    const v = n / 1e6;
    return fixed(v, halfUp(Math.abs(v) * 10) >= 100 ? 0 : 1) + 'M';
  }
  if (Math.abs(n) >= 1e4) {
    const v = n / 1e3;
    return fixed(v, halfUp(Math.abs(v) * 10) >= 1000 ? 0 : 1) + 'k';
  }
  if (n === Math.trunc(n)) {
    return `${n}`;
  }
  return fixed(n, 2).replace(/0+$/, '').replace(/\.$/, '');
}

/** A fraction as a whole percentage: `80%`, `0%`, `100%`; `–` when unknown. */
export function formatPercent(f: number | null | undefined): string {
  if (f === null || f === undefined || !Number.isFinite(f)) {
    return '–';
  }
  return `${halfUp(Math.max(0, f) * 100)}%`;
}

export function formatCost(x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x)) {
    return '–';
  }
  return `$${fixed(x, x < 10 ? 2 : 0)}`;
}

/** `512 B`, `1.5 KiB`, `20.0 MiB`, `1.2 GiB`; `–` when unknown. */
export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) {
    return '–';
  }
  let v = Math.max(0, n);
  if (halfUp(v) < 1024) {
    return `${halfUp(v)} B`;
  }
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  for (let i = 0; i < units.length; i++) {
    v /= 1024;
    if (halfUp(v * 10) < 10240 || i === units.length - 1) {
      return `${fixed(v, 1)} ${units[i]}`;
    }
  }
  return '–'; // not reached
}

/**
 * How long ago, or how long a TTL is, in whole units rounded down: `45 s`, `12 min`,
 * `3 h`, `3 days` (minutes up to two hours, hours up to two days).
 */
export function formatAge(s: number | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s)) {
    return '–';
  }
  s = Math.max(0, s);
  if (s < 60) {
    return `${Math.floor(s)} s`;
  }
  if (s < 7200) {
    return `${Math.floor(s / 60)} min`;
  }
  if (s < 172800) {
    return `${Math.floor(s / 3600)} h`;
  }
  return `${Math.floor(s / 86400)} days`;
}

export function formatClock(t: number): string {
  const d = new Date(t * 1000);
  const pad = (x: number) => String(x).padStart(2, '0');
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/**
 * `name` in at most `max` characters, cut in the middle (`s12_o…liers`): step names
 * often share a prefix (`s12_`) and differ at both ends. Names that fit are unchanged.
 */
export function middleEllipsis(name: string, max: number): string {
  if (name.length <= max) {
    return name;
  }
  if (max <= 1) {
    return '…';
  }
  const keep = max - 1;
  const head = Math.ceil(keep / 2);
  return `${name.slice(0, head)}…${name.slice(name.length - (keep - head))}`;
}
