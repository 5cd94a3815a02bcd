/**
 * resumable-cells: a sidebar with the completion record and the timeline of the
 * notebook in focus, and a status badge on each step cell. This file only wires.
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { BadgeController } from './badges';
import { NotebookRecord, SidebarModel } from './model';
import { RecordSidebar } from './view';

namespace CommandIDs {
  export const show = 'resumable-cells:show';
  export const refresh = 'resumable-cells:refresh';
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'resumable-cells:sidebar',
  description: 'The completion record and timeline of %%step cells.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ILayoutRestorer, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ) => {
    const settings = app.serviceManager.serverSettings;
    const records = new Map<NotebookPanel, { record: NotebookRecord; badges: BadgeController }>();
    const model = new SidebarModel();
    const sidebar = new RecordSidebar(model);
    app.shell.add(sidebar, 'right', { rank: 650 });
    restorer?.add(sidebar, sidebar.id);

    const track = (panel: NotebookPanel) => {
      if (records.has(panel)) {
        return;
      }
      const record = new NotebookRecord(panel, settings);
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
      label: 'Show Resumable Cells Sidebar',
      execute: () => app.shell.activateById(sidebar.id)
    });
    app.commands.addCommand(CommandIDs.refresh, {
      label: 'Reload Resumable Cells Record',
      isEnabled: () => model.record !== null,
      execute: () => model.record?.refresh()
    });
    palette?.addItem({ command: CommandIDs.show, category: 'Resumable Cells' });
    palette?.addItem({ command: CommandIDs.refresh, category: 'Resumable Cells' });
  }
};

export default plugin;
