/**
 * The provenance sentence of a row: who computed its value and where, how long ago, from
 * which inputs, and where a hit was served from ("computed by ana on gpu-3, 3 days ago,
 * from df@9f2c (load), served from redis://cache:6379/0"). Written as Python writes it
 * (resumable_cells/records/provenance.py: `sentence`), both tested on the cases in
 * tests/shared/provenance.json.
 */
import { formatAge } from './format';
import type { IProvenance } from './protocol';

/** Hex digits of a digest in its short form (`df@9f2c`). */
const SHORT_DIGEST = 4;

export function shortDigest(digest: string | null | undefined): string {
  if (!digest) {
    return '?';
  }
  const colon = digest.lastIndexOf(':');
  return digest.slice(colon + 1, colon + 1 + SHORT_DIGEST);
}

/** `ana on gpu-3`, `ana`, `someone on gpu-3`, `someone`; `someone (not recorded)`. */
export function provenanceWho(p: IProvenance): string {
  if (p.recorded === false) {
    return 'someone (not recorded)';
  }
  const user = p.user || 'someone';
  return p.host ? `${user} on ${p.host}` : user;
}

/** The row's own line for a value from the team cache: who and where, the two things
 * a narrow panel must not cut (the whole sentence is in the row's tooltip). Null for a
 * value computed here or served from the local store. */
export function teamLine(p: IProvenance): string | null {
  return p.served_from ? `computed by ${provenanceWho(p)} · served from ${p.served_from}` : null;
}

export function provenanceSentence(p: IProvenance, now: number): string {
  const parts = [`computed by ${provenanceWho(p)}`];
  if (p.computed) {
    parts.push(`${formatAge(now - p.computed)} ago`);
  }
  const inputs = p.inputs ?? [];
  if (inputs.length) {
    const short = inputs.map(i => {
      const text = `${i.name}@${shortDigest(i.digest)}`;
      return i.step ? `${text} (${i.step})` : text;
    });
    parts.push(`from ${short.join(' ')}`);
  }
  if (p.served_from) {
    parts.push(`served from ${p.served_from}`);
  }
  return parts.join(', ');
}
