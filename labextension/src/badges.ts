/**
 * A small badge in the prompt area of each step cell: served, ran, effect, stale,
 * error. One BadgeController per notebook; per-cell elements kept in a WeakMap.
 */

import type { Cell } from '@jupyterlab/cells';

import { NotebookRecord } from './model';
import type { IBadge } from './viewmodel';

export class BadgeController {
  constructor(record: NotebookRecord) {
    this._record = record;
    record.changed.connect(this._schedule, this);
    this._schedule();
  }

  dispose(): void {
    this._record.changed.disconnect(this._schedule, this);
    if (this._frame !== null) {
      cancelAnimationFrame(this._frame);
      this._frame = null;
    }
  }

  private _schedule(): void {
    if (this._frame === null) {
      this._frame = requestAnimationFrame(() => {
        this._frame = null;
        this._update();
      });
    }
  }

  private _update(): void {
    const record = this._record;
    if (record.isDisposed) {
      return;
    }
    const badges = record.view().badges;
    for (const cell of record.panel.content.widgets) {
      this._apply(cell, badges.get(cell.model.id) ?? null);
    }
  }

  private _apply(cell: Cell, badge: IBadge | null): void {
    let el = this._elements.get(cell) ?? null;
    if (!badge) {
      if (el) {
        el.remove();
        this._elements.delete(cell);
        cell.removeClass('rc-mod-hasBadge');
      }
      return;
    }
    const host = cell.node.querySelector('.jp-Cell-inputWrapper');
    if (!host) {
      // Not rendered yet (windowed notebook): come back when it is.
      void cell.ready.then(() => this._schedule());
      return;
    }
    if (!el) {
      el = document.createElement('span');
      this._elements.set(cell, el);
    }
    if (el.parentElement !== host) {
      host.appendChild(el);
    }
    cell.addClass('rc-mod-hasBadge');
    // Write only what changed: a notebook of 500 steps must not relayout every frame.
    const className = `rc-CellBadge rc-status-${badge.status}`;
    if (el.className !== className) {
      el.className = className;
    }
    if (el.textContent !== badge.label) {
      el.textContent = badge.label;
    }
    if (el.title !== badge.title) {
      el.title = badge.title;
    }
  }

  private _record: NotebookRecord;
  private _frame: number | null = null;
  private _elements = new WeakMap<Cell, HTMLElement>();
}
