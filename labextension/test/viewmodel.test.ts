import { describe, expect, it } from 'vitest';

import type { IExecution, ISnapshot, IStepRow } from '../src/protocol';

import {
  applyMessage,
  applySnapshot,
  buildView,
  emptyState,
  ICellInfo,
  parseStepCell,
  quoteArg
} from '../src/viewmodel';
import { bigRun } from './bigrun';

const T0 = 1796000000;

function exec(over: Partial<IExecution> & { id: string; step: string }): IExecution {
  return {
    run: 'r-1',
    session: 'k-1',
    cell_id: null,
    key: 'k',
    status: 'live',
    start: T0,
    end: T0 + 1,
    duration_s: 1,
    saved_s: 0,
    reason: null,
    ...over
  };
}

function row(over: Partial<IStepRow> & { step: string }): IStepRow {
  return {
    cell_id: null,
    status: 'live',
    duration_s: 1,
    saved_s: 0,
    stale: false,
    stale_cause: null,
    reason: null,
    last_start: T0,
    executions: 1,
    ...over
  };
}

function snapshot(over: Partial<ISnapshot> = {}): ISnapshot {
  return {
    notebook: 'nb.ipynb',
    run: { id: 'r-1', epoch: '2026-11-29T09:30:00+00:00', seed: 1, created: T0 },
    budget: {
      limits: { steps: 10, tokens: null, cost: 2 },
      spent: { steps: 4, tokens: 31000, cost: 0.5 }
    },
    sessions: ['k-1'],
    executions: [],
    steps: [],
    ...over
  };
}

const cells: ICellInfo[] = [
  { id: 'c0', source: '%load_ext resumable_cells' },
  { id: 'c1', source: '%%step load\nx = 1' },
  { id: 'c2', source: '# a comment cell\ny = 2' },
  { id: 'c3', source: '%%step --version 2 clean --effect\nz = x' },
  { id: 'c4', source: '%%step\nw = 3' },
  { id: 'c5', source: '%%step train_model --deps data.csv\nm = 4' }
];

describe('parseStepCell', () => {
  it('finds the name as the magic does (the cases of spec.json are in stepline.test.ts)', () => {
    expect(parseStepCell('%%step load\nx=1')).toEqual({ name: 'load', effect: false, error: null });
    // --deps takes every value up to the next flag, the name included: as in Python
    expect(parseStepCell('%%step --deps data/*.csv load --effect\n')).toEqual({
      name: null,
      effect: true,
      error: null
    });
    expect(parseStepCell('%%step load --deps data/*.csv --effect\n')?.name).toBe('load');
    expect(parseStepCell('%%step load --dir x')?.error).toBe('unrecognized arguments: --dir x');
  });
  it('returns a null name when the kernel derives it, and null for other cells', () => {
    expect(parseStepCell('%%step\nx=1')).toEqual({ name: null, effect: false, error: null });
    expect(parseStepCell('%%stepper x')).toBeNull();
    expect(parseStepCell('x = 1\n%%step a')).toBeNull();
    expect(parseStepCell('%step status')).toBeNull();
  });
  it('quotes a name for a line magic', () => {
    expect(quoteArg('load')).toBe('load');
    expect(quoteArg('two words')).toBe("'two words'");
  });
});

describe('state reduction', () => {
  it('fills from the server snapshot before the kernel has run anything', () => {
    const s = applySnapshot(
      emptyState(),
      snapshot({
        executions: [exec({ id: 'e1', step: 'load', cell_id: 'c1' })],
        steps: [row({ step: 'load', cell_id: 'c1' })]
      }),
      'server'
    );
    const v = buildView(s, cells, T0 + 10);
    expect(v.rows.map(r => r.name)).toEqual(['load', 'clean', 'cell 5', 'train_model']);
    expect(v.rows[0]).toMatchObject({ status: 'live', cellIndex: 1, durationS: 1 });
    expect(v.rows[1]).toMatchObject({ status: 'none', cellIndex: 3, effect: true });
    expect(v.badges.get('c1')?.label).toBe('ran');
    expect(v.gauges.map(g => g.text)).toEqual(['4 of 10', '31.0k (no limit)', '$0.50 of $2.00']);
    expect(v.gauges[0].fraction).toBeCloseTo(0.4);
  });

  it('shows a step running, then its final state, from comm messages', () => {
    let s = applySnapshot(emptyState(), snapshot(), 'server');
    s = applyMessage(s, {
      type: 'execution',
      execution: exec({
        id: 'e1',
        step: 'load',
        cell_id: 'c1',
        status: 'running',
        end: null,
        duration_s: null
      })
    });
    let v = buildView(s, cells, T0 + 5);
    expect(v.rows[0].status).toBe('running');
    expect(v.running).toBe(true);
    expect(v.lanes).toHaveLength(1);
    // the running bar reaches "now"
    expect(v.lanes[0].bars[0]).toMatchObject({ status: 'running', x: 0, w: 1 });
    expect(v.lanes[0].busyS).toBeCloseTo(5);

    s = applyMessage(s, {
      type: 'execution',
      execution: exec({
        id: 'e1',
        step: 'load',
        cell_id: 'c1',
        status: 'live',
        end: T0 + 2,
        duration_s: 2
      })
    });
    s = applyMessage(s, {
      type: 'steps',
      steps: [row({ step: 'load', cell_id: 'c1', duration_s: 2 })],
      budget: null
    });
    v = buildView(s, cells, T0 + 5);
    expect(v.rows[0]).toMatchObject({ status: 'live', durationS: 2 });
    expect(v.running).toBe(false);
    expect(v.totals.session).toMatchObject({ ran: 1, served: 0 });
    expect(v.totals.run).toMatchObject({ ran: 1, served: 0 });
  });

  it('a running bar grows with the clock, next to the bars before it', () => {
    let s = applySnapshot(
      emptyState(),
      snapshot({ executions: [exec({ id: 'a', step: 'load', start: T0, end: T0 + 2 })] }),
      'server'
    );
    s = applyMessage(s, {
      type: 'execution',
      execution: exec({
        id: 'b',
        step: 'clean',
        status: 'running',
        start: T0 + 2,
        end: null,
        duration_s: null
      })
    });
    const at = (now: number) => buildView(s, cells, now).lanes[0].bars[1];
    expect(at(T0 + 3).w).toBeCloseTo(1 / 3);
    expect(at(T0 + 6).w).toBeCloseTo(4 / 6);
    expect(at(T0 + 6).title).toContain('clean — running');
    expect(at(T0 + 6).title).toContain('took 4.00 s');
  });

  it('never lets a lagging server snapshot undo the kernel', () => {
    let s = applySnapshot(emptyState(), snapshot(), 'server');
    s = applyMessage(s, {
      type: 'execution',
      execution: exec({ id: 'e1', step: 'load', status: 'live' })
    });
    s = applySnapshot(
      s,
      snapshot({ executions: [exec({ id: 'e1', step: 'load', status: 'running', end: null })] }),
      'server'
    );
    expect(s.executions.get('e1')?.status).toBe('live');
  });

  it('a server snapshot without a run does not wipe a known run (rename in flight)', () => {
    const s = applySnapshot(
      emptyState(),
      snapshot({ executions: [exec({ id: 'e1', step: 'load' })] }),
      'server'
    );
    const after = applySnapshot(s, snapshot({ run: null, executions: [], steps: [] }), 'server');
    expect(after).toBe(s);
    // the kernel may say so, though
    const cleared = applyMessage(s, { type: 'snapshot', ...snapshot({ run: null }) });
    expect(cleared.run).toBeNull();
    expect(cleared.executions.size).toBe(0);
  });

  it('a kernel snapshot replaces the state (after a clear)', () => {
    let s = applySnapshot(
      emptyState(),
      snapshot({ executions: [exec({ id: 'e1', step: 'load' })], steps: [row({ step: 'load' })] }),
      'server'
    );
    s = applyMessage(s, { type: 'snapshot', ...snapshot() });
    expect(s.executions.size).toBe(0);
    expect(buildView(s, cells, T0).rows[0].status).toBe('none');
  });

  it('an execution of another run resets the record', () => {
    let s = applySnapshot(
      emptyState(),
      snapshot({ executions: [exec({ id: 'e1', step: 'load' })] }),
      'server'
    );
    s = applyMessage(s, {
      type: 'execution',
      execution: exec({ id: 'e2', step: 'load', run: 'r-2' })
    });
    expect([...s.executions.keys()]).toEqual(['e2']);
    expect(s.run?.id).toBe('r-2');
  });

  it('after a restart: served steps, two lanes, saved time, stale marker', () => {
    const first = ['load', 'clean', 'train_model'].map((step, i) =>
      exec({ id: `a${i}`, step, start: T0 + i * 10, end: T0 + i * 10 + 9, duration_s: 9 })
    );
    const second = ['load', 'clean', 'train_model'].map((step, i) =>
      exec({
        id: `b${i}`,
        step,
        session: 'k-2',
        status: i === 1 ? 'effect' : 'hit',
        start: T0 + 3600 + i * 0.1,
        end: T0 + 3600 + i * 0.1 + 0.05,
        duration_s: 0.05,
        saved_s: i === 1 ? 0 : 9
      })
    );
    const s = applySnapshot(
      emptyState(),
      snapshot({
        sessions: ['k-1', 'k-2'],
        executions: [...first, ...second],
        steps: [
          row({
            step: 'load',
            status: 'hit',
            duration_s: 9,
            saved_s: 9,
            last_start: T0 + 3600,
            executions: 2
          }),
          row({
            step: 'clean',
            status: 'effect',
            duration_s: 0.05,
            last_start: T0 + 3600.1,
            executions: 2
          }),
          row({
            step: 'train_model',
            status: 'hit',
            saved_s: 9,
            stale: true,
            stale_cause: 'input x changed by clean',
            last_start: T0 + 3600.2,
            executions: 2
          })
        ]
      }),
      'server'
    );
    const v = buildView(s, cells, T0 + 4000);
    expect(v.lanes.map(l => l.session)).toEqual(['k-1', 'k-2']);
    expect(v.lanes[1].bars.map(b => b.status)).toEqual(['hit', 'effect', 'hit']);
    expect(v.rows.map(r => r.status)).toEqual(['hit', 'effect', 'none', 'hit']);
    expect(v.totals.run).toMatchObject({ served: 2, ran: 3, effects: 1, savedS: 18 });
    expect(v.totals.session).toMatchObject({ served: 2, ran: 0, effects: 1, savedS: 18 });
    expect(v.totals).toMatchObject({ steps: 4, stale: 1 });
    expect(v.staleCells).toEqual([5]);
    expect(v.badges.get('c5')?.label).toBe('stale');
    expect(v.badges.get('c1')?.label).toBe('served');
    expect(v.rows[3].title).toContain('input x changed by clean');
    // bars fit the lane
    for (const lane of v.lanes) {
      for (const b of lane.bars) {
        expect(b.x).toBeGreaterThanOrEqual(0);
        expect(b.x + b.w).toBeLessThanOrEqual(1 + 1e-9);
      }
    }
  });

  it('a running execution of an older session is shown as interrupted', () => {
    const s = applySnapshot(
      emptyState(),
      snapshot({
        executions: [
          exec({ id: 'a', step: 'load', status: 'running', end: null, duration_s: null }),
          exec({ id: 'b', step: 'load', session: 'k-2', start: T0 + 100, end: T0 + 101 })
        ]
      }),
      'server'
    );
    const v = buildView(s, cells, T0 + 200);
    expect(v.lanes[0].bars[0].status).toBe('interrupted');
    expect(v.running).toBe(false);
  });

  it('matches an unnamed step cell by the cell id of its executions', () => {
    const s = applySnapshot(
      emptyState(),
      snapshot({ executions: [exec({ id: 'e', step: 'w_3a9f', cell_id: 'c4' })] }),
      'server'
    );
    const v = buildView(s, cells, T0 + 10);
    expect(v.rows[2]).toMatchObject({ name: 'w_3a9f', cellIndex: 4, status: 'live' });
  });
});

describe('scale', () => {
  // How long this takes is measured by bench/sidebar_view.py (labextension/bench/), not here.
  it('builds the view of 500 steps and 5,000 executions, and a live message on top', () => {
    const big = bigRun(500, 10);
    let s = applySnapshot(emptyState(), big.snapshot, 'server');
    s = applyMessage(s, big.message);
    const v = buildView(s, big.cells, big.now);
    expect(v.rows).toHaveLength(500);
    expect(v.lanes).toHaveLength(10);
    expect(v.lanes.reduce((a, l) => a + l.bars.length, 0)).toBe(5001);
    expect(v.totals.run.served).toBe(4500);
    expect(v.totals.session.running).toBe(1);
  });
});

describe('rows and badges per cell', () => {
  const qs: ICellInfo[] = [
    { id: 'p', source: 'ridge = 1.0' },
    { id: 'f1', source: '%%step fit\ncoef = ridge' },
    { id: 'b', source: '%%step bootstrap\nboots = ridge' },
    { id: 'e1', source: '%%step evaluate\nscores = coef' },
    { id: 'f2', source: '%%step fit\ncoef = ridge' }
  ];

  it('the badge of a cell that ran says ran even when a later cell has the same name', () => {
    let s = applySnapshot(emptyState(), snapshot(), 'server');
    const events: Array<[string, string, IExecution['status']]> = [
      ['fit', 'f1', 'live'],
      ['bootstrap', 'b', 'live'],
      ['evaluate', 'e1', 'live'],
      ['fit', 'f2', 'hit']
    ];
    events.forEach(([step, cell, status], i) => {
      s = applyMessage(s, {
        type: 'execution',
        execution: exec({ id: `x${i}`, step, cell_id: cell, status, start: T0 + i })
      });
    });
    const v = buildView(s, qs, T0 + 10);
    expect(v.rows.map(r => [r.name, r.cellIndex, r.status])).toEqual([
      ['fit', 1, 'live'],
      ['bootstrap', 2, 'live'],
      ['evaluate', 3, 'live'],
      ['fit', 4, 'hit']
    ]);
    expect(v.badges.get('f1')?.label).toBe('ran');
    expect(v.badges.get('f2')?.label).toBe('served');
  });

  it('stale rows from the kernel: reason, badge, and the cells Run stale runs', () => {
    const stale = (step: string, cell: string, cause: string) =>
      row({ step, cell_id: cell, stale: true, stale_cause: cause });
    const s = applyMessage(applySnapshot(emptyState(), snapshot(), 'server'), {
      type: 'steps',
      steps: [
        stale('fit', 'f1', 'ridge changed (In [7])'),
        stale('bootstrap', 'b', 'ridge changed (In [7])'),
        stale('evaluate', 'e1', 'coef comes from stale step fit'),
        row({ step: 'fit', cell_id: 'f2', status: 'hit' })
      ],
      budget: null
    });
    const v = buildView(s, qs, T0 + 10);
    expect(v.staleCells).toEqual([1, 2, 3]);
    expect(v.badges.get('b')?.label).toBe('stale');
    expect(v.badges.get('f2')?.label).toBe('served');
    expect(v.rows[1].title).toContain('stale: ridge changed (In [7])');
    expect(v.totals).toMatchObject({ steps: 4, stale: 3 });
  });

  it('Run stale runs what the kernel plan names once it answered, for its kernel session', () => {
    const live = applySnapshot(emptyState(), snapshot({ session: 'k-1' }), 'kernel');
    const s = applyMessage(live, {
      type: 'steps',
      steps: [row({ step: 'load', cell_id: 'c1', stale: true, stale_cause: 'x changed' })],
      budget: null
    });
    expect(buildView(s, cells, T0).staleCells).toEqual([1]); // no plan yet: the stale rows
    // the plan also names a plain cell edited and not run (c2), and what reads it (c4)
    const planned = applyMessage(s, {
      type: 'plan',
      request: 1,
      run: ['c2', 'c4', 'gone'],
      error: null
    });
    const v = buildView(planned, cells, T0);
    expect(v.staleCells).toEqual([2, 4]); // a cell the notebook no longer has is skipped
    expect(v.planError).toBeNull();
    const failed = applyMessage(s, { type: 'plan', request: 2, run: [], error: 'a bad line' });
    expect(buildView(failed, cells, T0).staleCells).toEqual([]);
    expect(buildView(failed, cells, T0).planError).toBe('a bad line');
    // another kernel session: that plan no longer holds
    const restarted = applySnapshot(
      planned,
      snapshot({ session: 'k-2', sessions: ['k-1', 'k-2'] }),
      'kernel'
    );
    expect(restarted.plan).toBeNull();
  });

  it('a record made without cell ids (nbconvert) shows at the cells of its names', () => {
    const s = applySnapshot(
      emptyState(),
      snapshot({
        executions: [
          exec({ id: 'a', step: 'fit', start: T0 }),
          exec({ id: 'b', step: 'gone', start: T0 + 1 })
        ]
      }),
      'server'
    );
    const v = buildView(s, qs, T0 + 10);
    expect(v.rows.filter(r => r.name === 'fit').map(r => r.status)).toEqual(['live', 'live']);
    // a step no cell is named after is listed at the end, not lost
    expect(v.rows[v.rows.length - 1]).toMatchObject({ name: 'gone', cellIndex: -1 });
  });
});

describe('the cache at a glance and the age of what is served', () => {
  const GiB = 1024 ** 3;
  const store = { dir: '/w/.resumable_cells', bytes: 1.2 * GiB, limit: 10 * GiB, entries: 34 };
  const team = {
    url: 'redis://cache:6379/0',
    bytes: null,
    limit: null,
    entries: null,
    error: 'unreachable (Connection refused)'
  };

  it('says the hit rate of the run (effects not counted) and the store against its limit', () => {
    const s = applySnapshot(
      emptyState(),
      snapshot({
        executions: [
          exec({ id: 'a', step: 'load', status: 'live' }),
          exec({ id: 'b', step: 'load', status: 'hit', saved_s: 2, start: T0 + 5 }),
          exec({ id: 'c', step: 'clean', status: 'hit', saved_s: 1.5, start: T0 + 6 }),
          exec({ id: 'd', step: 'send', status: 'effect', start: T0 + 7 })
        ],
        cache: { store, team }
      }),
      'kernel'
    );
    const v = buildView(s, cells, T0 + 10);
    expect(v.cache.hitRate).toBe('67% served (2 of 3 pure executions) · 3.50 s saved');
    expect(v.cache.lines.map(l => [l.name, l.text])).toEqual([
      ['store', '1.2 GiB of 10.0 GiB · 34 entries'],
      ['team', 'unreachable (Connection refused)']
    ]);
    expect(v.cache.lines[0].fraction).toBeCloseTo(0.12);
    expect(v.cache.entries).toBe(34);

    // a steps message brings the store's figures; the team's stay from the snapshot
    const after = applyMessage(s, {
      type: 'steps',
      steps: [],
      budget: null,
      cache: { store: { ...store, entries: 0, bytes: 0 } }
    });
    const v2 = buildView(after, cells, T0 + 10);
    expect(v2.cache.lines.map(l => l.text)).toEqual([
      '0 B of 10.0 GiB · 0 entries',
      'unreachable (Connection refused)'
    ]);
    expect(v2.cache.entries).toBe(0);
  });

  it('shows the entries written behind until the kernel says they are stored', () => {
    const MB = 1024 ** 2;
    const writing = { entries: 2, bytes: 400 * MB, steps: ['fit', 'score'] };
    const s = applyMessage(applySnapshot(emptyState(), snapshot({ cache: { store } }), 'kernel'), {
      type: 'steps',
      steps: [],
      budget: null,
      cache: { store, writing }
    });
    const line = buildView(s, cells, T0).cache.lines.find(l => l.name === 'writing');
    expect(line?.text).toBe('2 entries · 400.0 MiB: fit, score');
    expect(line?.fraction).toBeNull();

    // a server snapshot knows nothing of the kernel's writes: they stay
    const served = applySnapshot(s, snapshot({ cache: { store } }), 'server');
    expect(buildView(served, cells, T0).cache.lines.map(l => l.name)).toContain('writing');

    // the writer's own message: one stored, one left; then none
    const one = applyMessage(served, {
      type: 'cache',
      cache: {
        store: { ...store, entries: 35 },
        writing: { ...writing, entries: 1, steps: ['score'] }
      }
    });
    const v1 = buildView(one, cells, T0).cache;
    expect(v1.entries).toBe(35);
    expect(v1.lines.find(l => l.name === 'writing')?.text).toMatch(/^1 entry · .*: score$/);
    const none = applyMessage(one, {
      type: 'cache',
      cache: { store, writing: { entries: 0, bytes: 0, steps: [] } }
    });
    expect(buildView(none, cells, T0).cache.lines.map(l => l.name)).toEqual(['store']);
  });

  it('has no hit rate before any step, and no store line before any figures', () => {
    const v = buildView(applySnapshot(emptyState(), snapshot(), 'server'), cells, T0);
    expect(v.cache).toEqual({ hitRate: null, lines: [], entries: null });
  });

  it('a served value more than a few minutes old says when it was computed', () => {
    const day = 86400;
    const s = applySnapshot(
      emptyState(),
      snapshot({
        executions: [
          exec({ id: 'a', step: 'load', cell_id: 'c1', status: 'hit', computed: T0 - 3 * day }),
          exec({ id: 'b', step: 'clean', cell_id: 'c3', status: 'hit', computed: T0 - 60 })
        ]
      }),
      'server'
    );
    const v = buildView(s, cells, T0 + 10);
    const load = v.rows.find(r => r.name === 'load')!;
    const clean = v.rows.find(r => r.name === 'clean')!;
    expect(load.age).toBe('3 days ago');
    expect(load.title).toContain('its value was computed 3 days ago');
    expect(clean.age).toBeNull(); // a minute: not worth saying
  });

  it('a value served from the team cache says who computed it, from what and where', () => {
    const day = 86400;
    const fromTeam = {
      computed: T0 - 3 * day,
      user: 'ana',
      host: 'gpu-3',
      packages: { numpy: '1.26.4' },
      inputs: [{ name: 'df', digest: '9f2c41aa', step: 'load', key: 'ab12' }],
      served_from: 'redis://cache:6379/0',
      recorded: true
    };
    const here = { ...fromTeam, computed: T0, user: 'bo', host: 'lap', served_from: null };
    const s = applySnapshot(
      emptyState(),
      snapshot({
        executions: [
          exec({ id: 'a', step: 'load', cell_id: 'c1', status: 'live', provenance: here }),
          exec({ id: 'b', step: 'clean', cell_id: 'c3', status: 'hit', provenance: fromTeam })
        ]
      }),
      'server'
    );
    const v = buildView(s, cells, T0 + 10);
    const clean = v.rows.find(r => r.name === 'clean')!;
    const said =
      'computed by ana on gpu-3, 3 days ago, from df@9f2c (load), served from redis://cache:6379/0';
    expect(clean.provenance).toBe(said);
    expect(clean.teamLine).toBe('computed by ana on gpu-3 · served from redis://cache:6379/0');
    expect(clean.title).toContain(said);
    const load = v.rows.find(r => r.name === 'load')!;
    expect(load.provenance).toBe('computed by bo on lap, 10 s ago, from df@9f2c (load)');
    expect(load.teamLine).toBeNull(); // computed here: in the tooltip only
    // a row whose record predates provenance says nothing of it
    const old = buildView(
      applySnapshot(
        emptyState(),
        snapshot({ executions: [exec({ id: 'c', step: 'w' })] }),
        'server'
      ),
      cells,
      T0
    );
    expect(old.rows.find(r => r.name === 'w')?.provenance ?? null).toBeNull();
  });

  it('a step that ran because its entry expired says so', () => {
    const expired = 'expired (computed 3 h ago, ttl 2 h)';
    const s = applySnapshot(
      emptyState(),
      snapshot({
        executions: [exec({ id: 'a', step: 'load', cell_id: 'c1', reason: expired })]
      }),
      'server'
    );
    const row = buildView(s, cells, T0 + 10).rows.find(r => r.name === 'load')!;
    expect(row.reason).toBe(expired);
    expect(row.title).toContain(`why: ${expired}`);
  });
});

describe('Restore session', () => {
  const earlier = [
    exec({
      id: 'a',
      step: 'load',
      cell_id: 'c1',
      start: T0,
      outputs: [{ name: 'x', type: 'int', size: 1024 }]
    }),
    exec({ id: 'b', step: 'clean', cell_id: 'c3', status: 'hit', start: T0 + 2 }),
    exec({ id: 'c', step: 'load', cell_id: 'c1', status: 'hit', start: T0 + 3 }),
    exec({ id: 'd', step: 'w', cell_id: 'c4', status: 'error', start: T0 + 4 })
  ];

  it('is offered after a restart, before the new session runs anything', () => {
    const s = applySnapshot(
      emptyState(),
      snapshot({ session: 'k-2', sessions: ['k-1', 'k-2'], executions: earlier }),
      'kernel'
    );
    const offer = buildView(s, cells, T0 + 10).restore;
    // three executions made the state (the error made none), in two cells
    expect(offer?.executions).toBe(3);
    expect(offer?.what).toBe('2 cells, 1.0 KiB, ~15 ms');

    // once this session runs a cell, or from the disk alone, there is nothing to offer
    const ran = applyMessage(s, {
      type: 'execution',
      execution: exec({ id: 'e', step: 'load', session: 'k-2', start: T0 + 20 })
    });
    expect(buildView(ran, cells, T0 + 30).restore).toBeNull();
    const fromDisk = applySnapshot(emptyState(), snapshot({ executions: earlier }), 'server');
    expect(buildView(fromDisk, cells, T0 + 10).restore).toBeNull();
  });

  it('says how far the restore went, for this kernel session only', () => {
    const s = applySnapshot(
      emptyState(),
      snapshot({ session: 'k-2', sessions: ['k-1', 'k-2'], executions: earlier }),
      'kernel'
    );
    const stopped = { step: 'clean', cell_id: 'c3', why: 'the cell was edited since it ran' };
    const told = applyMessage(s, {
      type: 'restored',
      planned: 3,
      restored: 1,
      stopped,
      text: 'restored 1 of 3 executions; stopped at clean: the cell was edited since it ran'
    });
    expect(buildView(told, cells, T0 + 10).restored?.stopped).toEqual(stopped);
    // a new kernel session: what an earlier restore said no longer holds
    const restarted = applySnapshot(
      told,
      snapshot({ session: 'k-3', sessions: ['k-1', 'k-2', 'k-3'], executions: earlier }),
      'kernel'
    );
    expect(buildView(restarted, cells, T0 + 10).restored).toBeNull();
  });
});
