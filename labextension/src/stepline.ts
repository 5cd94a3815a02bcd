/**
 * The `%%step` line, parsed as the magic parses it. The flags and how many values each
 * takes come from spec.json, which Python writes from the one argument spec of the
 * magic (`resumable_cells/ipython/stepargs.py`, by
 * `python -m resumable_cells.ipython.frontend_spec`); the parsing follows IPython's
 * `parse_argstring` (a non-POSIX shell split, then argparse), and the test runs every
 * example line of spec.json, whose expected results Python's parser produced.
 */

import spec from './spec.json';

/** How many values an argument takes: a flag, exactly one, one or more, or optional. */
type Takes = 'flag' | 1 | '+' | '?';

interface IArgument {
  name: string;
  takes: Takes;
}

const ARGUMENTS = spec.step_magic.arguments as IArgument[];
const OPTIONS = ARGUMENTS.filter(a => a.name.startsWith('--'));

export interface IStepLine {
  name: string | null;
  effect: boolean;
  force: boolean;
  ignore: string[];
  version: string | null;
  deps: string[];
  ttl: string | null;
}

/** What the magic's parser gives a line without the argument: false, [] or null. */
function defaults(): IStepLine {
  const out: Record<string, unknown> = {};
  for (const a of ARGUMENTS) {
    out[a.name.replace(/^-+/, '')] = a.takes === 'flag' ? false : a.takes === '+' ? [] : null;
  }
  return out as unknown as IStepLine;
}

export type StepLineResult = { parsed: IStepLine } | { error: string };

/** Split like IPython's `arg_split(line)`: whitespace, quotes kept in the token. */
export function splitArgs(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < line.length) {
    if (/\s/.test(line[i])) {
      i++;
      continue;
    }
    let j = i;
    if (line[i] === '"' || line[i] === "'") {
      const close = line.indexOf(line[i], i + 1);
      if (close < 0) {
        throw new Error('No closing quotation');
      }
      j = close + 1; // a quoted token ends at its closing quote
    } else {
      while (j < line.length && !/\s/.test(line[j])) {
        j++;
      }
    }
    out.push(line.slice(i, j));
    i = j;
  }
  return out;
}

function dest(option: IArgument): keyof IStepLine {
  return option.name.replace(/^-+/, '') as keyof IStepLine;
}

function isOptionLike(token: string): boolean {
  if (!token.startsWith('-') || token === '-') {
    return false;
  }
  return !/^-\d+$|^-\d*\.\d+$/.test(token) && !token.includes(' ');
}

/** The option a token names: exact, `--opt=value`, or a unique prefix (argparse's). */
function resolve(token: string): { option: IArgument; attached: string | null } | null {
  const eq = token.indexOf('=');
  const flag = eq >= 0 ? token.slice(0, eq) : token;
  const attached = eq >= 0 ? token.slice(eq + 1) : null;
  const exact = OPTIONS.find(o => o.name === flag);
  if (exact) {
    return { option: exact, attached };
  }
  const prefixed = flag.startsWith('--') ? OPTIONS.filter(o => o.name.startsWith(flag)) : [];
  return prefixed.length === 1 ? { option: prefixed[0], attached } : null;
}

/** Parse what follows `%%step` on the cell's first line. */
export function parseStepLine(line: string): StepLineResult {
  let tokens: string[];
  try {
    tokens = splitArgs(line);
  } catch (err) {
    return { error: (err as Error).message };
  }
  const out = defaults();
  const extras: string[] = [];
  let positionalDone = false;
  let rest = false; // after `--`: every token is a value
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (!rest && t === '--') {
      rest = true;
      continue;
    }
    if (rest || !isOptionLike(t)) {
      if (!positionalDone) {
        out.name = t;
        positionalDone = true;
      } else {
        extras.push(t);
      }
      continue;
    }
    const found = resolve(t);
    if (!found) {
      extras.push(t);
      continue;
    }
    const { option, attached } = found;
    const key = dest(option);
    if (option.takes === 'flag') {
      if (attached !== null) {
        return { error: `argument ${option.name}: ignored explicit argument '${attached}'` };
      }
      (out[key] as boolean) = true;
      continue;
    }
    const values: string[] = attached !== null ? [attached] : [];
    if (attached === null) {
      const max = option.takes === '+' ? Infinity : 1;
      while (
        values.length < max &&
        i + 1 < tokens.length &&
        tokens[i + 1] !== '--' &&
        !isOptionLike(tokens[i + 1])
      ) {
        values.push(tokens[++i]);
      }
    }
    if (!values.length) {
      const want = option.takes === '+' ? 'at least one argument' : 'one argument';
      return { error: `argument ${option.name}: expected ${want}` };
    }
    if (option.takes === '+') {
      (out[key] as string[]) = values;
    } else {
      (out[key] as string | null) = values[0];
    }
  }
  if (extras.length) {
    return { error: `unrecognized arguments: ${extras.join(' ')}` };
  }
  return { parsed: out };
}

export interface IStepCellInfo {
  /** The step's name when the magic line gives one, else null (the kernel derives it). */
  name: string | null;
  effect: boolean;
  /** Why the magic would refuse the line, or null. */
  error: string | null;
}

/** A cell's `%%step` line, or null when the cell does not start with `%%step`. */
export function parseStepCell(source: string): IStepCellInfo | null {
  const text = source.replace(/^\s*\n/, '');
  const first = text.split('\n', 1)[0].trim();
  if (!/^%%step(\s|$)/.test(first)) {
    return null;
  }
  const result = parseStepLine(first.slice('%%step'.length));
  if ('error' in result) {
    return { name: null, effect: false, error: result.error };
  }
  return { name: result.parsed.name, effect: result.parsed.effect, error: null };
}

/** Quote a step name for a `%step` line magic. */
export function quoteArg(name: string): string {
  return /^[\w.\-/:]+$/.test(name) ? name : `'${name.replace(/'/g, '')}'`;
}
