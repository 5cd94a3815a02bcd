/**
 * The sidebar: a ReactWidget that renders the current notebook's record view and
 * re-renders through UseSignal when the model says so.
 */

import { ReactWidget, UseSignal } from '@jupyterlab/apputils';
import {
  addIcon,
  clearIcon,
  refreshIcon,
  runIcon,
  ToolbarButtonComponent
} from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import * as React from 'react';

import type { ExecutionStatus } from './protocol';
import { resumableIcon, staleIcon, STATUS_ICON } from './icons';
import { NotebookRecord, SidebarModel } from './model';
import type { ICacheLine, ICacheView } from './glance';
import {
  formatDuration,
  ICounts,
  IGauge,
  ILane,
  IRecordView,
  IStepView,
  middleEllipsis,
  STATUS_LABEL
} from './viewmodel';

export class RecordSidebar extends ReactWidget {
  constructor(model: SidebarModel) {
    super();
    this.model = model;
    this.id = 'resumable-cells-sidebar';
    this.addClass('rc-Sidebar');
    this.title.icon = resumableIcon;
    this.title.label = 'Resumable cells';
    this.title.caption = 'Resumable cells: steps, what is stale, and the timeline';
  }

  readonly model: SidebarModel;

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this.model.visible = this.isVisible;
  }

  protected onBeforeDetach(msg: Message): void {
    this.model.visible = false;
    super.onBeforeDetach(msg);
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.model.visible = true;
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this.model.visible = false;
  }

  render(): JSX.Element {
    return (
      <UseSignal signal={this.model.changed} initialSender={this.model}>
        {() => <RecordPanel model={this.model} />}
      </UseSignal>
    );
  }
}

function RecordPanel({ model }: { model: SidebarModel }): JSX.Element {
  const record = model.record;
  const view = model.view;
  if (!record || !view) {
    return (
      <div className="rc-Panel rc-Panel-empty">
        <Title />
        <p className="rc-Empty">Open a notebook to see its steps.</p>
      </div>
    );
  }
  return (
    <div className="rc-Panel">
      <Title />
      <Actions record={record} view={view} />
      {view.restore && (
        <div className="rc-RestoreOffer">
          <button
            className="rc-Restore jp-Button jp-mod-styled jp-mod-accept"
            title={view.restore.title}
            onClick={() => record.restoreSession()}
          >
            Restore session
          </button>
          <span className="rc-RestoreWhat">{view.restore.what}</span>
        </div>
      )}
      {view.restored && (
        <p className={`rc-Restored${view.restored.stopped ? ' rc-mod-stopped' : ''}`} role="status">
          {view.restored.text}
        </p>
      )}
      <Header view={view} />
      <Cache record={record} cache={view.cache} />
      <StepList record={record} rows={view.rows} />
      <Timeline lanes={view.lanes} record={record} />
    </div>
  );
}

function Title(props: { children?: React.ReactNode }): JSX.Element {
  return (
    <header className="rc-Title">
      <resumableIcon.react tag="span" className="rc-TitleIcon" />
      <h2>Resumable cells</h2>
      {props.children}
    </header>
  );
}

function Actions({ record, view }: { record: NotebookRecord; view: IRecordView }): JSX.Element {
  const stale = view.staleCells.length;
  return (
    <div className="rc-Toolbar jp-Toolbar">
      <ToolbarButtonComponent
        className="rc-RunStale"
        icon={runIcon}
        label={`Run stale (${stale})`}
        tooltip={
          view.planError
            ? `No plan: ${view.planError}`
            : 'Run the cells that are out of date: what Run All would run, as %step plan says'
        }
        enabled={stale > 0}
        onClick={() => void record.runStale(view.staleCells)}
      />
      <ToolbarButtonComponent
        className="rc-NewRun"
        icon={addIcon}
        label="New run"
        tooltip="Start a new run (%step run --new)"
        onClick={() => void record.newRun()}
      />
      <ToolbarButtonComponent
        className="rc-Refresh"
        icon={refreshIcon}
        tooltip="Reload the stored record"
        onClick={() => void record.refresh()}
      />
    </div>
  );
}

function Header({ view }: { view: IRecordView }): JSX.Element {
  const t = view.totals;
  const run = view.run;
  return (
    <section className="rc-Header">
      <div
        className="rc-RunLine"
        title={run ? `run ${run.id}\nepoch ${run.epoch}\nseed ${run.seed}` : 'no run yet'}
      >
        <span className="rc-RunLabel">run</span>
        <span className="rc-RunId">{run ? run.id : 'none yet'}</span>
        <span className="rc-StepCount" title="step cells in this notebook, and how many are stale">
          {t.steps} steps · {t.stale} stale
        </span>
      </div>
      <table className="rc-Totals">
        <thead>
          <tr>
            <th scope="col" title="executions of steps, counted by outcome" />
            <th scope="col" className="rc-status-hit" title="served from the cache">
              served
            </th>
            <th scope="col" className="rc-status-live" title="ran live">
              ran
            </th>
            <th scope="col" className="rc-status-effect" title="effects (they always run)">
              effect
            </th>
            <th scope="col" className="rc-status-error" title="failed">
              error
            </th>
            <th scope="col" title="time the cache hits saved">
              saved
            </th>
          </tr>
        </thead>
        <tbody>
          <Totals
            label="session"
            title="executions in this kernel session (since the last restart)"
            counts={t.session}
            className="rc-Totals-session"
          />
          <Totals
            label="run"
            title="executions in every kernel session of this run"
            counts={t.run}
            className="rc-Totals-run"
          />
        </tbody>
      </table>
      {view.gauges.length > 0 && (
        <div className="rc-Gauges">
          {view.gauges.map(g => (
            <Gauge key={g.name} gauge={g} />
          ))}
        </div>
      )}
    </section>
  );
}

function Cache({ record, cache }: { record: NotebookRecord; cache: ICacheView }): JSX.Element {
  return (
    <section className="rc-Cache">
      <span className="rc-CacheName">hit rate</span>
      <span className="rc-HitRate" title="this run: executions of pure steps served from the cache">
        {cache.hitRate ?? 'no steps run yet'}
      </span>
      {cache.lines.map(line => (
        <CacheLine key={line.name} line={line} />
      ))}
      <button
        className="rc-ClearAll jp-Button jp-mod-minimal"
        title="Drop every entry of the local store (asks first)"
        disabled={cache.entries === 0}
        onClick={() => void record.clearAll(cache.entries)}
      >
        Clear cache…
      </button>
    </section>
  );
}

function CacheLine({ line }: { line: ICacheLine }): JSX.Element {
  const pct = line.fraction === null ? 0 : Math.round(line.fraction * 100);
  const level = line.fraction === null ? 'none' : line.fraction >= 0.9 ? 'high' : 'ok';
  return (
    <>
      <span className="rc-CacheName">{line.name}</span>
      <span className={`rc-CacheLine rc-Gauge-${level}`} data-name={line.name} title={line.title}>
        {line.fraction !== null && (
          <span className="rc-GaugeTrack">
            <span className="rc-GaugeFill" style={{ width: `${pct}%` }} />
          </span>
        )}
        <span className="rc-CacheText">{line.text}</span>
      </span>
    </>
  );
}

function Totals(props: {
  label: string;
  title: string;
  counts: ICounts;
  className: string;
}): JSX.Element {
  const c = props.counts;
  return (
    <tr className={props.className} title={props.title}>
      <th scope="row">{props.label}</th>
      <td className="rc-status-hit">{c.served}</td>
      <td className="rc-status-live">{c.ran}</td>
      <td className="rc-status-effect">{c.effects}</td>
      <td className="rc-status-error">{c.errors}</td>
      <td className="rc-TotalSaved">{formatDuration(c.savedS)}</td>
    </tr>
  );
}

function Gauge({ gauge }: { gauge: IGauge }): JSX.Element {
  const pct = gauge.fraction === null ? 0 : Math.round(gauge.fraction * 100);
  const level =
    gauge.fraction === null
      ? 'none'
      : gauge.fraction >= 1
        ? 'full'
        : gauge.fraction >= 0.8
          ? 'high'
          : 'ok';
  return (
    <div className={`rc-Gauge rc-Gauge-${level}`} title={`${gauge.name}: ${gauge.text}`}>
      <span className="rc-GaugeName">{gauge.name}</span>
      <span className="rc-GaugeTrack">
        <span className="rc-GaugeFill" style={{ width: `${pct}%` }} />
      </span>
      <span className="rc-GaugeText">{gauge.text}</span>
    </div>
  );
}

function StepList({ record, rows }: { record: NotebookRecord; rows: IStepView[] }): JSX.Element {
  const nameRef = React.useRef<HTMLSpanElement>(null);
  const chars = useCharsThatFit(nameRef);
  if (!rows.length) {
    return (
      <section className="rc-Steps">
        <p className="rc-Empty">
          No <code>%%step</code> cells in this notebook yet.
        </p>
      </section>
    );
  }
  return (
    <section className="rc-Steps">
      <div className="rc-StepHead" aria-hidden="true">
        <span />
        <span ref={nameRef} className="rc-StepHeadName">
          step
        </span>
        <span title="how long the cell's last live run took">last run</span>
        <span
          className="rc-StepHeadSaved"
          title="time the cell's cache hits saved, all of this run"
        >
          saved in run
        </span>
      </div>
      <ul className="rc-StepList" role="list">
        {rows.map(row => (
          <StepRow key={row.key} record={record} row={row} chars={chars} />
        ))}
      </ul>
    </section>
  );
}

/** Rows are rebuilt on every update: compare what they show, not their identity. */
function sameStepRow(
  a: { record: NotebookRecord; row: IStepView; chars: number },
  b: { record: NotebookRecord; row: IStepView; chars: number }
): boolean {
  const x = a.row;
  const y = b.row;
  return (
    a.record === b.record &&
    a.chars === b.chars &&
    x.key === y.key &&
    x.title === y.title &&
    x.status === y.status &&
    x.stale === y.stale &&
    x.staleCause === y.staleCause &&
    x.durationS === y.durationS &&
    x.savedS === y.savedS &&
    x.age === y.age &&
    x.executions === y.executions &&
    x.cellIndex === y.cellIndex
  );
}

const StepRow = React.memo(function StepRow({
  record,
  row,
  chars
}: {
  record: NotebookRecord;
  row: IStepView;
  chars: number;
}): JSX.Element {
  const Icon = row.stale ? staleIcon : STATUS_ICON[row.status];
  const classes = [
    'rc-Step',
    `rc-status-${row.status}`,
    row.stale ? 'rc-mod-stale' : '',
    row.cellIndex < 0 ? 'rc-mod-orphan' : ''
  ]
    .filter(Boolean)
    .join(' ');
  const shown = chars > 0 ? middleEllipsis(row.name, chars) : row.name;
  return (
    <li
      className={classes}
      title={row.title}
      data-step={row.name}
      data-status={row.status}
      data-cell-index={row.cellIndex}
      tabIndex={0}
      onClick={() => void record.revealCell(row.cellIndex)}
      onKeyDown={event => {
        if (event.key === 'Enter' || event.key === ' ') {
          event.preventDefault();
          void record.revealCell(row.cellIndex);
        }
      }}
    >
      <span
        className={row.stale ? 'rc-StepIcon rc-StaleMarker rc-status-stale' : 'rc-StepIcon'}
        title={row.stale ? `stale: ${row.staleCause ?? 'an input changed'}` : undefined}
      >
        <Icon.react tag="span" elementSize="small" />
      </span>
      <span className="rc-StepLabel">
        <span className="rc-StepName" data-name={row.name}>
          {shown}
        </span>
        <span className="rc-StepStatus">
          {STATUS_LABEL[row.status]}
          {row.stale ? `, ${STATUS_LABEL.stale}` : ''}
          {row.age ? (
            <span className="rc-StepAge">
              {row.status === 'hit' ? ` · computed ${row.age}` : ` · ${row.age}`}
            </span>
          ) : null}
        </span>
      </span>
      <span className="rc-StepDuration">
        {row.durationS === null ? '' : formatDuration(row.durationS)}
      </span>
      <span className="rc-StepSaved">{row.savedS ? formatDuration(row.savedS) : ''}</span>
      {row.stale && <span className="rc-StaleCause">{row.staleCause ?? 'an input changed'}</span>}
      {row.teamLine ? <span className="rc-StepProvenance">{row.teamLine}</span> : null}
      <button
        className="rc-StepClear jp-Button jp-mod-minimal"
        title={`Clear the cache of ${row.name}`}
        aria-label={`Clear the cache of ${row.name}`}
        disabled={row.executions === 0}
        onClick={event => {
          event.stopPropagation();
          void record.clearStep(row.name);
        }}
      >
        <clearIcon.react tag="span" elementSize="small" />
      </button>
    </li>
  );
}, sameStepRow);

/**
 * How many characters of the step-name font fit in the element's width, kept current
 * with a ResizeObserver (names use a monospace font: one width per character). The
 * character is measured again when the width changes and once the page's fonts have
 * loaded: measured in a fallback font, it came out narrower and the column's edge cut
 * names at the end (`s21_cluster_regim…`) instead of the middle. One pixel is kept
 * spare against rounding.
 */
function useCharsThatFit(ref: React.RefObject<HTMLElement | null>): number {
  const width = useWidth(ref);
  const [charWidth, setCharWidth] = React.useState(0);
  React.useLayoutEffect(() => {
    const el = ref.current;
    if (!el) {
      return;
    }
    const measure = () => {
      const probe = document.createElement('span');
      probe.className = 'rc-StepName';
      probe.style.position = 'absolute';
      probe.style.visibility = 'hidden';
      probe.textContent = '0123456789'.repeat(4);
      el.appendChild(probe);
      setCharWidth(probe.getBoundingClientRect().width / 40);
      probe.remove();
    };
    measure();
    let live = true;
    void document.fonts?.ready.then(() => live && measure());
    return () => {
      live = false;
    };
  }, [ref, width]);
  return width > 0 && charWidth > 0 ? Math.floor((width - 1) / charWidth) : 0;
}

/** The pixel width of an element, kept current with a ResizeObserver. */
function useWidth(ref: React.RefObject<HTMLElement | null>): number {
  const [width, setWidth] = React.useState(0);
  React.useLayoutEffect(() => {
    const el = ref.current;
    if (!el) {
      return;
    }
    setWidth(el.clientWidth);
    const observer = new ResizeObserver(entries => {
      for (const entry of entries) {
        setWidth(Math.floor(entry.contentRect.width));
      }
    });
    observer.observe(el);
    return () => observer.disconnect();
  }, [ref]);
  return width;
}

function Timeline({ lanes, record }: { lanes: ILane[]; record: NotebookRecord }): JSX.Element {
  const ref = React.useRef<HTMLDivElement>(null);
  const width = useWidth(ref);
  return (
    <section className="rc-Timeline">
      <h3 className="rc-SectionTitle">Timeline</h3>
      <div className="rc-Lanes" ref={ref}>
        {lanes.length === 0 ? (
          <p className="rc-Empty">No executions yet.</p>
        ) : (
          lanes.map(lane => <Lane key={lane.session} lane={lane} record={record} width={width} />)
        )}
      </div>
      <Legend />
    </section>
  );
}

/** Bars closer than this many pixels are drawn with a gap so neighbours stay apart. */
const BAR_GAP_PX = 1;
const BAR_MIN_PX = 2;

/** Lanes are rebuilt on every update; only a lane whose bars moved re-renders. */
function sameLane(
  a: { lane: ILane; record: NotebookRecord; width: number },
  b: { lane: ILane; record: NotebookRecord; width: number }
): boolean {
  if (
    a.record !== b.record ||
    a.width !== b.width ||
    a.lane.label !== b.lane.label ||
    a.lane.detail !== b.lane.detail
  ) {
    return false;
  }
  const x = a.lane.bars;
  const y = b.lane.bars;
  if (x.length !== y.length) {
    return false;
  }
  for (let i = 0; i < x.length; i++) {
    const p = x[i];
    const q = y[i];
    if (
      p.id !== q.id ||
      p.status !== q.status ||
      p.x !== q.x ||
      p.w !== q.w ||
      p.title !== q.title
    ) {
      return false;
    }
  }
  return true;
}

const Lane = React.memo(function Lane({
  lane,
  record,
  width
}: {
  lane: ILane;
  record: NotebookRecord;
  width: number;
}): JSX.Element {
  const reveal = (cellId: string | null) => {
    if (!cellId) {
      return;
    }
    const index = record.cells.findIndex(c => c.id === cellId);
    void record.revealCell(index);
  };
  return (
    <div className="rc-Lane" data-session={lane.session}>
      <div className="rc-LaneLabel" title={lane.title}>
        <span>{lane.label}</span>
        <span className="rc-LaneBusy">{lane.detail}</span>
      </div>
      <svg className="rc-LaneTrack" width="100%" height="16" role="img">
        {lane.bars.map(bar => {
          // Fit to width: pixels once the width is known, percentages before.
          const geometry =
            width > 0
              ? {
                  x: Math.min(bar.x * width, width - BAR_MIN_PX),
                  width: Math.max(BAR_MIN_PX, bar.w * width - BAR_GAP_PX)
                }
              : { x: `${(bar.x * 100).toFixed(3)}%`, width: `${(bar.w * 100).toFixed(3)}%` };
          return (
            <rect
              key={bar.id}
              className={`rc-Bar rc-status-${bar.status}`}
              data-status={bar.status}
              y="2"
              height="12"
              rx="1"
              {...geometry}
              onClick={() => reveal(bar.cellId)}
            >
              <title>{bar.title}</title>
            </rect>
          );
        })}
      </svg>
    </div>
  );
}, sameLane);

function Legend(): JSX.Element {
  const items: ExecutionStatus[] = [
    'hit',
    'live',
    'effect',
    'error',
    'interrupted',
    'refused',
    'running'
  ];
  return (
    <div className="rc-Legend">
      {items.map(status => (
        <span key={status} className={`rc-LegendItem rc-status-${status}`}>
          <span className="rc-Swatch" />
          {STATUS_LABEL[status]}
        </span>
      ))}
    </div>
  );
}
