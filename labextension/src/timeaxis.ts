/**
 * The timeline's time axis, the rule of `lane_axes` in resumable_cells/records/timeline.py (the
 * SVG of `%step timeline`), so both draw the same picture: every lane starts at 0, all
 * lanes share one scale (a 0.7 s resume is drawn a tenth as long as a 7 s first run),
 * and each idle gap is shortened to min(2 s, a quarter of the mean busy stretch). Both
 * test suites check the cases in tests/shared/time_axis.json.
 */

export const MAX_GAP_S = 2.0;
export const GAP_OF_MEAN_BAR = 0.25;

type Interval = readonly [number, number];

function merge(intervals: readonly Interval[]): Array<[number, number]> {
  const sorted = [...intervals].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const out: Array<[number, number]> = [];
  for (const [s, e0] of sorted) {
    const e = Math.max(s, e0);
    const last = out[out.length - 1];
    if (last && s <= last[1]) {
      last[1] = Math.max(last[1], e);
    } else {
      out.push([s, e]);
    }
  }
  return out;
}

/** Seconds some execution of the lane was running: idle time not counted. */
export function busySeconds(intervals: readonly Interval[]): number {
  return merge(intervals).reduce((acc, [s, e]) => acc + (e - s), 0);
}

function laneMap(merged: Array<[number, number]>, cap: number) {
  if (!merged.length) {
    return { map: (_t: number) => 0, length: 0 };
  }
  const wall: number[] = [merged[0][0]];
  const axis: number[] = [0];
  merged.forEach(([s, e], i) => {
    if (i) {
      wall.push(s);
      axis.push(axis[axis.length - 1] + Math.min(s - merged[i - 1][1], cap));
    }
    wall.push(e);
    axis.push(axis[axis.length - 1] + (e - s));
  });
  const map = (t: number): number => {
    // the first index whose wall time is greater than t (bisect_right)
    let lo = 0;
    let hi = wall.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (wall[mid] <= t) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo === 0) {
      return 0;
    }
    if (lo >= wall.length) {
      return axis[axis.length - 1];
    }
    const span = wall[lo] - wall[lo - 1];
    const frac = span > 0 ? (t - wall[lo - 1]) / span : 0;
    return axis[lo - 1] + frac * (axis[lo] - axis[lo - 1]);
  };
  return { map, length: axis[axis.length - 1] };
}

/** For each lane, a map from wall time to axis seconds; and the axis length. */
export function laneAxes(lanes: ReadonlyArray<readonly Interval[]>): {
  maps: Array<(t: number) => number>;
  length: number;
} {
  const merged = lanes.map(merge);
  const stretches = merged.reduce((acc, m) => acc + m.length, 0);
  const busy = merged.reduce((acc, m) => acc + m.reduce((a, [s, e]) => a + (e - s), 0), 0);
  const cap = Math.min(
    MAX_GAP_S,
    Math.max((GAP_OF_MEAN_BAR * busy) / Math.max(stretches, 1), 1e-3)
  );
  let length = 1e-3;
  const maps = merged.map(m => {
    const lane = laneMap(m, cap);
    length = Math.max(length, lane.length);
    return lane.map;
  });
  return { maps, length };
}
