/**
 * What the browser tests share: the server started by global-setup.ts, and the ways a
 * user drives JupyterLab and Notebook 7 (menus, themes, waiting for an idle kernel).
 */
import { expect, Locator, Page } from '@playwright/test';
import * as path from 'path';

export const SCREENSHOTS = path.resolve(__dirname, '..', '..', 'docs', 'screenshots');
export const SIDEBAR = '#resumable-cells-sidebar';

function env(name: string): string {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set: global-setup did not run`);
  }
  return v;
}

export const baseURL = () => env('RC_BASE_URL');
export const token = () => env('RC_TOKEN');

export async function menu(page: Page, top: string, item: string): Promise<void> {
  await page.locator('.lm-MenuBar-itemLabel', { hasText: new RegExp(`^${top}$`) }).click();
  await page
    .locator('.lm-Menu-itemLabel', { hasText: new RegExp(`^${item}`) })
    .first()
    .click();
}

/** JupyterLab: the status bar says Idle once a kernel is connected and idle. */
export async function waitForKernelIdle(page: Page): Promise<void> {
  await expect(page.locator('#jp-main-statusbar').getByText(/\| Idle$/)).toBeVisible();
  await expect(
    page.locator('.jp-NotebookPanel:visible .jp-Notebook-ExecutionIndicator')
  ).toHaveAttribute('data-status', 'idle');
}

/** JupyterLab: the notebook's cell at index `i`. */
export const cell = (page: Page, i: number): Locator =>
  page.locator('.jp-NotebookPanel .jp-Cell').nth(i);

/** JupyterLab: run cell `i` (Ctrl+Enter) and wait until the kernel is idle again. */
export async function runCell(page: Page, i: number): Promise<void> {
  await cell(page, i).locator('.jp-InputPrompt').click();
  // the key goes to the active cell: press it once the click has made this one active
  await expect(cell(page, i)).toHaveClass(/\bjp-mod-active\b/);
  await page.keyboard.press('Control+Enter');
  await expect(cell(page, i).locator('.jp-InputPrompt')).toHaveText(/\[\d+\]/);
  await waitForKernelIdle(page);
}

export function stepRow(page: Page, name: string): Locator {
  return page.locator(`${SIDEBAR} .rc-Step[data-step="${name}"]`);
}

export function rowAt(page: Page, cellIndex: number): Locator {
  return page.locator(`${SIDEBAR} .rc-Step[data-cell-index="${cellIndex}"]`);
}

/** Wait until the shell is painted in `theme`, so a screenshot shows one theme. */
export async function setTheme(page: Page, theme: 'JupyterLab Light' | 'JupyterLab Dark') {
  await page.locator('.lm-MenuBar-itemLabel', { hasText: /^Settings$/ }).click();
  await page
    .locator('.lm-Menu-itemLabel', { hasText: /^Theme$/ })
    .first()
    .hover();
  await page.locator('.lm-Menu-itemLabel', { hasText: new RegExp(`^${theme}$`) }).click();
  const light = theme === 'JupyterLab Light';
  await expect(page.locator('body')).toHaveAttribute('data-jp-theme-light', String(light));
  await expect(page.locator('body')).toHaveAttribute('data-jp-theme-name', theme);
  await expect(page.locator('#jupyterlab-splash')).toHaveCount(0);
  await page.waitForFunction(
    ([wantLight, sidebar]) => {
      const isLight = (el: Element | null) => {
        if (!el) {
          return false;
        }
        const rgb = (getComputedStyle(el).backgroundColor.match(/\d+/g) || []).map(Number);
        return rgb.length >= 3 && (rgb[0] + rgb[1] + rgb[2]) / 3 > 128;
      };
      const shell = [document.querySelector('.lm-MenuBar'), document.querySelector(sidebar)];
      return shell.every(el => isLight(el) === wantLight);
    },
    [light, SIDEBAR] as const
  );
}

/** The names in the sidebar as shown, and whether any was cut. */
export async function shownNames(page: Page): Promise<{ shown: string[]; full: string[] }> {
  const names = page.locator(`${SIDEBAR} .rc-StepName`);
  return {
    shown: await names.allTextContents(),
    full: await names.evaluateAll(els => els.map(e => e.getAttribute('data-name') ?? ''))
  };
}

/**
 * The WCAG contrast ratio of an element's text against the first opaque background
 * behind it (its own or an ancestor's).
 */
export async function contrastRatio(locator: Locator): Promise<number> {
  return locator.evaluate(el => {
    const rgb = (c: string) => (c.match(/[\d.]+/g) || []).map(Number);
    const luminance = (c: number[]) => {
      const [r, g, b] = c.slice(0, 3).map(v => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    let bg: number[] = [255, 255, 255];
    for (let e: Element | null = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length >= 3 && (c.length < 4 || c[3] === 1)) {
        bg = c;
        break;
      }
    }
    const [hi, lo] = [luminance(rgb(getComputedStyle(el).color)), luminance(bg)].sort(
      (a, b) => b - a
    );
    return (hi + 0.05) / (lo + 0.05);
  });
}
