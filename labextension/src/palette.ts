/**
 * The colour and word of each status, from spec.json (written from
 * resumable_cells/palette.py, which the SVG timeline uses too): one definition for the
 * panel, the badges and `%step timeline`, in the light and the dark theme.
 */

import spec from './spec.json';

export type PaletteStatus = keyof typeof spec.statuses;

/** A value served is said to be old (`computed 3 days ago`) past this many seconds. */
export const AGE_SHOWN_AFTER_S: number = spec.age_shown_after_s;

export const STATUS_WORD: Record<string, string> = Object.fromEntries(
  Object.entries(spec.statuses).map(([status, s]) => [status, s.label])
);

/** CSS custom properties `--rc-STATUS` for both themes, and the badge text colours. */
export function paletteCss(): string {
  const vars = (theme: 'light' | 'dark') =>
    Object.entries(spec.statuses)
      .map(([status, s]) => `--rc-${status}: ${s[theme]};`)
      .concat(`--rc-on-status: ${spec.themes[theme].on_status};`)
      .join(' ');
  return [
    `body { ${vars('light')} }`,
    `body[data-jp-theme-light='false'] { ${vars('dark')} }`
  ].join('\n');
}

/** Put the palette in the page once (its values are data, not a stylesheet of ours). */
export function installPalette(doc: Document = document): void {
  if (doc.getElementById('rc-palette')) {
    return;
  }
  const style = doc.createElement('style');
  style.id = 'rc-palette';
  style.textContent = paletteCss();
  doc.head.appendChild(style);
}
