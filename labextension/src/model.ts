/**
 * The record of one notebook's run, kept up to date from the server route and the
 * kernel's comm. Owns the comms and the kernel signal connections of its notebook and
 * drops them on dispose.
 */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import { URLExt } from '@jupyterlab/coreutils';
import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage, ServerConnection } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

import {
  COMM_TARGET,
  IPlanAnswer,
  ISnapshot,
  KernelMessage as RecordMessage,
  RECORD_ROUTE
} from './protocol';
import {
  applyMessage,
  applySnapshot,
  buildView,
  emptyState,
  ICellInfo,
  IRecordState,
  IRecordView,
  quoteArg
} from './viewmodel';

/** Fetch a notebook's stored record from the server extension; null when it has none. */
export async function fetchSnapshot(
  path: string,
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<ISnapshot | null> {
  const url = URLExt.join(settings.baseUrl, RECORD_ROUTE) + URLExt.objectToQueryString({ path });
  const response = await ServerConnection.makeRequest(url, {}, settings);
  if (response.status === 404) {
    return null;
  }
  if (!response.ok) {
    throw new ServerConnection.ResponseError(response);
  }
  return (await response.json()) as ISnapshot;
}

/** How long the notebook must be still (no edit, no step ending, the kernel idle) before
 * the panel asks the kernel's plan again for the Run stale button. */
const PLAN_DELAY_MS = 800;

/** A cell that asks for the plan or a restore: its request carries the notebook's cells. */
const PLAN_OR_RESTORE = /^\s*%step\s+(plan|restore)\b/m;

export class NotebookRecord {
  constructor(panel: NotebookPanel, settings?: ServerConnection.ISettings) {
    this.panel = panel;
    this._settings = settings ?? panel.sessionContext.session?.serverSettings;
    const ctx = panel.sessionContext;
    ctx.kernelChanged.connect(this._onKernelChanged, this);
    panel.context.pathChanged.connect(this._onPathChanged, this);
    panel.content.modelContentChanged.connect(this._onContentChanged, this);
    this._connectKernel(ctx.session?.kernel ?? null);
    void ctx.ready.then(() => {
      if (!this._disposed) {
        this._connectKernel(ctx.session?.kernel ?? null);
      }
    });
    void panel.context.ready.then(() => {
      if (!this._disposed) {
        this._cellsChanged();
        void this.refresh();
      }
    });
  }

  readonly panel: NotebookPanel;

  /** Emitted when the record or the notebook's cells change. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get state(): IRecordState {
    return this._state;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** The cells of the notebook as the view model wants them (id, source). */
  get cells(): ICellInfo[] {
    if (this._cells === null) {
      const model = this.panel.content.model;
      const out: ICellInfo[] = [];
      if (model) {
        for (let i = 0; i < model.cells.length; i++) {
          const c = model.cells.get(i);
          out.push({ id: c.id, source: c.sharedModel.getSource() });
        }
      }
      this._cells = out;
    }
    return this._cells;
  }

  /** The view at time `now` (Unix seconds); reused while nothing changed or runs. */
  view(now: number = Date.now() / 1000): IRecordView {
    const cells = this.cells;
    const memo = this._memo;
    if (memo && memo.state === this._state && memo.cells === cells) {
      if (!memo.view.running || Math.abs(now - memo.now) < 0.05) {
        return memo.view;
      }
    }
    const view = buildView(this._state, cells, now);
    this._memo = { state: this._state, cells, now, view };
    return view;
  }

  /** Re-read the stored record through the server route, and ask the kernel to look
   * again at what changed in place (a deep look: its answer is a snapshot). */
  async refresh(): Promise<void> {
    for (const comm of this._comms) {
      if (!comm.isDisposed) {
        comm.send({ action: 'snapshot' });
      }
    }
    const path = this.panel.context.path;
    try {
      const snap = await fetchSnapshot(path, this._settings);
      if (snap && !this._disposed && path === this.panel.context.path) {
        this._setState(applySnapshot(this._state, snap, 'server'));
      }
    } catch (reason) {
      console.warn('resumable-cells: could not read the stored record', reason);
    }
  }

  /** Scroll to the cell at `index`, select it and give the notebook focus. */
  async revealCell(index: number): Promise<void> {
    const nb = this.panel.content;
    if (index < 0 || index >= nb.widgets.length) {
      return;
    }
    nb.deselectAll();
    nb.activeCellIndex = index;
    nb.mode = 'command';
    await nb.scrollToItem(index, 'smart');
    // Focus the notebook, so the keyboard acts on the selected cell.
    nb.activate();
  }

  /** Run stale: the cells the kernel's plan says are out of date, asked again now (the
   * plan `%step plan` prints, from the cells as they are, unsaved edits included); the
   * stale rows' cells (`indices`) when no kernel answers (the extension not loaded). */
  async runStale(indices: number[]): Promise<void> {
    const nb = this.panel.content;
    const answer = await this.askPlan();
    let chosen = indices;
    if (answer) {
      if (answer.error) {
        await showDialog({
          title: 'Run stale',
          body: `No plan: ${answer.error}`,
          buttons: [Dialog.okButton()]
        });
        return;
      }
      chosen = this.view().staleCells;
    }
    const cells = chosen.filter(i => i >= 0 && i < nb.widgets.length).map(i => nb.widgets[i]);
    if (cells.length) {
      await NotebookActions.runCells(nb, cells, this.panel.sessionContext);
    }
  }

  /** Ask the kernel which cells are out of date; null without an open comm. The answer
   * also lands in the state (the button's count). */
  askPlan(): Promise<IPlanAnswer | null> {
    const comm = [...this._comms].find(c => !c.isDisposed);
    if (!comm) {
      return Promise.resolve(null);
    }
    const request = ++this._planRequest;
    return new Promise(resolve => {
      this._planWaiters.set(request, resolve);
      comm.send({ action: 'plan', cells: this.codeCells(), request });
    });
  }

  /** Ask for the plan again once the kernel is idle and the notebook has been still for
   * a moment: while a Run All goes on, or while the user types, nothing is asked. */
  private _schedulePlan(): void {
    if (this._planTimer !== null) {
      clearTimeout(this._planTimer);
    }
    this._planTimer = setTimeout(() => {
      this._planTimer = null;
      if (this._disposed || ![...this._comms].some(c => !c.isDisposed)) {
        return;
      }
      if (this._kernel?.status !== 'idle') {
        this._schedulePlan();
        return;
      }
      void this.askPlan();
    }, PLAN_DELAY_MS);
  }

  /** Restore session: the kernel serves the last session's executions again, from the
   * code cells this notebook holds now (unsaved edits included). Its answer selects the
   * cell where it stopped. */
  restoreSession(): void {
    const cells = this.codeCells();
    for (const comm of this._comms) {
      if (!comm.isDisposed) {
        comm.send({ action: 'restore', cells });
        return;
      }
    }
  }

  /** The code cells as this notebook holds them now, unsaved edits included. */
  codeCells(): { id: string; source: string }[] {
    const model = this.panel.content.model;
    const cells: { id: string; source: string }[] = [];
    if (model) {
      for (let i = 0; i < model.cells.length; i++) {
        const c = model.cells.get(i);
        if (c.type === 'code') {
          cells.push({ id: c.id, source: c.sharedModel.getSource() });
        }
      }
    }
    return cells;
  }

  /** Ask, then drop one step's cached entries with `%step clear NAME`. */
  async clearStep(name: string): Promise<boolean> {
    const result = await showDialog({
      title: 'Clear cached step',
      body: `Drop the cached entries of step "${name}"? Its next run executes the cell again.`,
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Clear' })]
    });
    if (!result.button.accept) {
      return false;
    }
    await this._executeSilently(`%step clear ${quoteArg(name)}`);
    return true;
  }

  /** Ask, then drop every entry of the local store with `%step clear --all`. */
  async clearAll(entries: number | null): Promise<boolean> {
    const what = entries === null ? 'every cached entry' : `all ${entries} cached entries`;
    const result = await showDialog({
      title: 'Clear the cache',
      body:
        `Drop ${what} of this notebook's store? Every step runs again the next time its ` +
        'cell runs. The record of the run, its budget and the team cache are kept.',
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Clear all' })]
    });
    if (!result.button.accept) {
      return false;
    }
    await this._executeSilently('%step clear --all');
    return true;
  }

  /** Ask, then start a new run with `%step run --new`. */
  async newRun(): Promise<boolean> {
    const result = await showDialog({
      title: 'Start a new run',
      body: 'Start a new run with a new clock and seed? The cache is kept; steps that use step.now() or step.rng() will run again.',
      buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'New run' })]
    });
    if (!result.button.accept) {
      return false;
    }
    await this._executeSilently('%step run --new');
    return true;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    if (this._planTimer !== null) {
      clearTimeout(this._planTimer);
    }
    this._disconnectKernel();
    const ctx = this.panel.sessionContext;
    ctx.kernelChanged.disconnect(this._onKernelChanged, this);
    this.panel.context.pathChanged.disconnect(this._onPathChanged, this);
    this.panel.content.modelContentChanged.disconnect(this._onContentChanged, this);
    Signal.clearData(this);
  }

  /** Emitted when the kernel reports a step execution (the first run opens the sidebar). */
  get stepSeen(): ISignal<this, void> {
    return this._stepSeen;
  }

  /** Feed one comm payload (exposed for tests and for other transports). */
  handleMessage(data: unknown): void {
    if (data && typeof data === 'object' && 'type' in data) {
      const msg = data as RecordMessage;
      this._setState(applyMessage(this._state, msg));
      if (msg.type === 'execution') {
        this._stepSeen.emit();
      }
      if (msg.type === 'plan') {
        const { type: _type, ...answer } = msg;
        this._planWaiters.get(msg.request)?.(answer);
        this._planWaiters.delete(msg.request);
      } else if (msg.type === 'snapshot' || msg.type === 'steps') {
        this._schedulePlan(); // the kernel is there, or a step ended: what is stale changed
      }
      if (msg.type === 'restored' && msg.stopped?.cell_id) {
        const at = this.cells.findIndex(c => c.id === msg.stopped?.cell_id);
        if (at >= 0) {
          void this.revealCell(at);
        }
      }
    }
  }

  private async _executeSilently(code: string): Promise<void> {
    const kernel = this.panel.sessionContext.session?.kernel;
    if (!kernel) {
      await showDialog({
        title: 'No kernel',
        body: 'Start the notebook kernel first.',
        buttons: [Dialog.okButton()]
      });
      return;
    }
    const future = kernel.requestExecute({ code, silent: true, store_history: false });
    let error: string | null = null;
    future.onIOPub = msg => {
      if (KernelMessage.isErrorMsg(msg)) {
        error = `${msg.content.ename}: ${msg.content.evalue}`;
      }
    };
    await future.done;
    if (error) {
      await showDialog({ title: 'resumable-cells', body: error, buttons: [Dialog.okButton()] });
    }
  }

  private _setState(state: IRecordState): void {
    if (state !== this._state) {
      this._state = state;
      this._changed.emit();
    }
  }

  private _onKernelChanged(): void {
    this._connectKernel(this.panel.sessionContext.session?.kernel ?? null);
    // A new kernel continues the run: what it knows comes from the disk first.
    this._setState({ ...this._state, live: false, plan: null });
    void this.refresh();
  }

  private _onPathChanged(): void {
    void this.refresh();
  }

  private _onContentChanged(): void {
    this._cellsChanged();
    this._schedulePlan();
  }

  private _cellsChanged(): void {
    this._cells = null;
    this._changed.emit();
  }

  private _connectKernel(kernel: Kernel.IKernelConnection | null): void {
    if (kernel === this._kernel) {
      return;
    }
    this._disconnectKernel();
    this._kernel = kernel;
    if (!kernel) {
      return;
    }
    kernel.registerCommTarget(COMM_TARGET, this._onCommOpen);
    kernel.statusChanged.connect(this._onKernelStatus, this);
    this._sendCellsWithPlans(kernel);
    this._openComm();
  }

  /**
   * `%step plan` and `%step restore` work from the cells this notebook holds now, unsaved
   * edits included: their execute requests carry them (metadata `resumable_cells.cells`,
   * docs/PROTOCOL.md). A comm message would arrive too late: Run All queues every
   * request before the kernel's comm opens. JupyterLab has no hook for a request's
   * metadata, so this connection's `sendShellMessage` is wrapped (undone on disconnect).
   */
  private _sendCellsWithPlans(kernel: Kernel.IKernelConnection): void {
    type Send = (msg: KernelMessage.IShellMessage, ...rest: unknown[]) => unknown;
    const conn = kernel as unknown as { sendShellMessage: Send };
    const original = conn.sendShellMessage;
    if (typeof original !== 'function') {
      return;
    }
    conn.sendShellMessage = (msg, ...rest) => {
      if (msg.header.msg_type === 'execute_request') {
        const code = (msg.content as { code?: unknown }).code;
        if (typeof code === 'string' && PLAN_OR_RESTORE.test(code)) {
          msg.metadata = { ...msg.metadata, resumable_cells: { cells: this.codeCells() } };
        }
      }
      return original.call(kernel, msg, ...rest);
    };
    this._unwrapRequests = () => {
      conn.sendShellMessage = original;
    };
  }

  /** Requests no kernel will answer (it went away or restarts): answered "no plan". */
  private _dropPlanRequests(): void {
    for (const resolve of this._planWaiters.values()) {
      resolve(null);
    }
    this._planWaiters.clear();
  }

  private _disconnectKernel(): void {
    this._dropPlanRequests();
    const kernel = this._kernel;
    this._unwrapRequests?.();
    this._unwrapRequests = null;
    for (const comm of this._comms) {
      if (!comm.isDisposed) {
        comm.dispose();
      }
    }
    this._comms.clear();
    if (kernel && !kernel.isDisposed) {
      kernel.removeCommTarget(COMM_TARGET, this._onCommOpen);
      kernel.statusChanged.disconnect(this._onKernelStatus, this);
    }
    this._kernel = null;
  }

  private _onKernelStatus(kernel: Kernel.IKernelConnection, status: Kernel.Status): void {
    if (status === 'restarting' || status === 'autorestarting') {
      this._restarting = true;
      this._comms.clear();
      this._dropPlanRequests();
    } else if (this._restarting && status === 'idle') {
      this._restarting = false;
      this._setState({ ...this._state, live: false, plan: null });
      void this.refresh();
      this._openComm();
    }
  }

  /** Open a comm to the kernel's target; the kernel may not have loaded us yet. */
  private _openComm(): void {
    const kernel = this._kernel;
    if (!kernel || kernel.isDisposed || !kernel.handleComms) {
      return;
    }
    if ([...this._comms].some(c => !c.isDisposed)) {
      return;
    }
    try {
      const comm = kernel.createComm(COMM_TARGET);
      this._attach(comm);
      comm.open({ action: 'snapshot' }).done.catch(() => {
        /* the extension is not loaded in this kernel yet */
      });
    } catch (reason) {
      console.debug('resumable-cells: could not open a comm', reason);
    }
  }

  private _onCommOpen = (comm: Kernel.IComm, msg: KernelMessage.ICommOpenMsg): void => {
    this._attach(comm);
    this.handleMessage(msg.content.data);
    // Say we are here: the kernel sends events only to comms a frontend answered, so a
    // kernel without a sidebar (nbclient, a terminal) does no work for one.
    comm.send({ action: 'snapshot' });
  };

  private _attach(comm: Kernel.IComm): void {
    this._comms.add(comm);
    comm.onMsg = msg => this.handleMessage(msg.content.data);
    comm.onClose = () => {
      this._comms.delete(comm);
    };
  }

  private _planRequest = 0;
  private _planWaiters = new Map<number, (answer: IPlanAnswer | null) => void>();
  private _planTimer: ReturnType<typeof setTimeout> | null = null;
  private _state: IRecordState = emptyState();
  private _cells: ICellInfo[] | null = null;
  private _memo: {
    state: IRecordState;
    cells: ICellInfo[];
    now: number;
    view: IRecordView;
  } | null = null;
  private _kernel: Kernel.IKernelConnection | null = null;
  private _comms = new Set<Kernel.IComm>();
  private _unwrapRequests: (() => void) | null = null;
  private _restarting = false;
  private _disposed = false;
  private _settings: ServerConnection.ISettings | undefined;
  private _changed = new Signal<this, void>(this);
  private _stepSeen = new Signal<this, void>(this);
}

/** How often a running step's bar grows, in ms. */
const TICK_MS = 500;

/**
 * Follows the record of the notebook in focus and emits `changed` at most once per
 * animation frame, and every TICK_MS while a step runs so its bar grows.
 */
export class SidebarModel {
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get record(): NotebookRecord | null {
    return this._record;
  }

  set record(record: NotebookRecord | null) {
    if (record === this._record) {
      return;
    }
    this._record?.changed.disconnect(this._schedule, this);
    this._record = record;
    record?.changed.connect(this._schedule, this);
    this._schedule();
  }

  /** Whether the sidebar is shown: a hidden sidebar computes nothing until shown. */
  get visible(): boolean {
    return this._visible;
  }

  set visible(value: boolean) {
    if (value !== this._visible) {
      this._visible = value;
      if (value) {
        this._schedule();
      }
      this._visibleChanged.emit(value);
    }
  }

  /** Emitted when the sidebar is shown or hidden. */
  get visibleChanged(): ISignal<this, boolean> {
    return this._visibleChanged;
  }

  /** The view of the current record, computed at the last flush. */
  get view(): IRecordView | null {
    return this._viewOf === this._record ? this._view : null;
  }

  dispose(): void {
    this.record = null;
    this._cancel();
    Signal.clearData(this);
  }

  private _schedule(): void {
    if (this._frame !== null || !this._visible) {
      return;
    }
    const run = () => {
      this._frame = null;
      this._flush();
    };
    this._frame =
      typeof requestAnimationFrame === 'function'
        ? { raf: requestAnimationFrame(run) }
        : { timer: setTimeout(run, 16) };
  }

  private _cancel(): void {
    if (this._frame?.raf !== undefined) {
      cancelAnimationFrame(this._frame.raf);
    }
    if (this._frame?.timer !== undefined) {
      clearTimeout(this._frame.timer);
    }
    this._frame = null;
    if (this._tick !== null) {
      clearTimeout(this._tick);
      this._tick = null;
    }
  }

  private _flush(): void {
    const record = this._record;
    this._view = record && !record.isDisposed ? record.view() : null;
    this._viewOf = record;
    this._changed.emit();
    if (this._tick !== null) {
      clearTimeout(this._tick);
      this._tick = null;
    }
    if (this._view?.running) {
      this._tick = setTimeout(() => {
        this._tick = null;
        this._schedule();
      }, TICK_MS);
    }
  }

  private _record: NotebookRecord | null = null;
  private _visible = false;
  private _view: IRecordView | null = null;
  private _viewOf: NotebookRecord | null = null;
  private _frame: { raf?: number; timer?: ReturnType<typeof setTimeout> } | null = null;
  private _tick: ReturnType<typeof setTimeout> | null = null;
  private _changed = new Signal<this, void>(this);
  private _visibleChanged = new Signal<this, boolean>(this);
}
