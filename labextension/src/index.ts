/**
 * resumable-cells: a sidebar with the rows, staleness and timeline of the notebook in
 * focus, and a status badge on each step cell, in JupyterLab and in Notebook 7 (the same
 * panel in its right area). This file only wires.
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

import { BadgeController } from './badges';
import { NotebookRecord, SidebarModel } from './model';
import { installPalette } from './palette';
import { RecordSidebar } from './view';

namespace CommandIDs {
  export const show = 'resumable-cells:show';
  export const refresh = 'resumable-cells:refresh';
}

const PLUGIN_ID = 'resumable-cells:sidebar';

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'The rows, staleness and timeline of %%step cells.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ILayoutRestorer, ICommandPalette, ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    registry: ISettingRegistry | null
  ) => {
    installPalette();
    const settings = app.serviceManager.serverSettings;
    const records = new Map<NotebookPanel, { record: NotebookRecord; badges: BadgeController }>();
    const model = new SidebarModel();
    const sidebar = new RecordSidebar(model);
    app.shell.add(sidebar, 'right', { rank: 650 });
    restorer?.add(sidebar, sidebar.id);
    const opener = new Opener(app, sidebar, registry);

    const track = (panel: NotebookPanel) => {
      if (records.has(panel)) {
        return;
      }
      const record = new NotebookRecord(panel, settings);
      record.stepSeen.connect(() => opener.firstStep());
      records.set(panel, { record, badges: new BadgeController(record) });
      panel.disposed.connect(() => {
        const entry = records.get(panel);
        records.delete(panel);
        if (entry && model.record === entry.record) {
          model.record = null;
        }
        entry?.badges.dispose();
        entry?.record.dispose();
      });
    };
    const follow = () => {
      const panel = tracker.currentWidget;
      if (panel) {
        track(panel);
      }
      model.record = panel ? (records.get(panel)?.record ?? null) : null;
    };
    tracker.widgetAdded.connect((_, panel) => track(panel));
    tracker.currentChanged.connect(follow);
    tracker.forEach(track);
    follow();

    app.commands.addCommand(CommandIDs.show, {
      label: 'Show Resumable cells',
      execute: () => app.shell.activateById(sidebar.id)
    });
    app.commands.addCommand(CommandIDs.refresh, {
      label: 'Reload Resumable cells',
      isEnabled: () => model.record !== null,
      execute: () => model.record?.refresh()
    });
    palette?.addItem({ command: CommandIDs.show, category: 'Resumable cells' });
    palette?.addItem({ command: CommandIDs.refresh, category: 'Resumable cells' });
  }
};

/**
 * Opens the sidebar by itself the first time one of the user's notebooks runs a step
 * (once per user: remembered in the settings), and, in Notebook 7, which does not
 * restore side panels, reopens it on each page where the user left it open.
 */
class Opener {
  constructor(app: JupyterFrontEnd, sidebar: RecordSidebar, registry: ISettingRegistry | null) {
    this._app = app;
    this._sidebar = sidebar;
    this._notebook7 = app.name !== 'JupyterLab';
    if (registry) {
      void Promise.all([registry.load(PLUGIN_ID), app.restored])
        .then(([s]) => {
          this._settings = s;
          if (this._notebook7 && s.get('openInNotebook').composite === true) {
            app.shell.activateById(sidebar.id); // after the shell laid itself out
          }
          sidebar.model.visibleChanged.connect(this._remember, this);
        })
        .catch(reason => console.warn('resumable-cells: no settings', reason));
    }
  }

  /** A step started in some notebook: open the sidebar if this is the first time. */
  firstStep(): void {
    const s = this._settings;
    if (!s || this._done || s.get('openedOnce').composite === true) {
      return;
    }
    this._done = true;
    if (s.get('openOnFirstStep').composite !== false && !this._sidebar.isVisible) {
      const focused = document.activeElement as HTMLElement | null;
      this._app.shell.activateById(this._sidebar.id);
      focused?.focus(); // the notebook keeps the keyboard
    }
    void s.set('openedOnce', true);
  }

  private _remember(_: unknown, visible: boolean): void {
    const s = this._settings;
    if (s && this._notebook7) {
      // Notebook 7 hides and shows the panel again while a page lays itself out: two
      // saves in flight, and `composite` still says the old value until the first one
      // lands, so comparing with it dropped the second and kept "closed". Compare with
      // what was last asked for instead, and save in order: the last change wins.
      const last = this._asked ?? s.get('openInNotebook').composite;
      if (last !== visible) {
        this._asked = visible;
        this._saving = this._saving
          .then(() => s.set('openInNotebook', visible))
          .catch(reason => console.warn('resumable-cells: the panel state was not kept', reason));
      }
    }
    if (s && visible && s.get('openedOnce').composite !== true) {
      this._done = true; // the user found it: it never needs to open by itself
      void s.set('openedOnce', true);
    }
  }

  private _app: JupyterFrontEnd;
  private _sidebar: RecordSidebar;
  private _notebook7: boolean;
  private _settings: ISettingRegistry.ISettings | null = null;
  private _done = false;
  private _asked: boolean | null = null;
  private _saving: Promise<void> = Promise.resolve();
}

export default plugin;
