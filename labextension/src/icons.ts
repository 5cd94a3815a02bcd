/** The sidebar's own icon and the icon for each status. */

import {
  checkIcon,
  circleEmptyIcon,
  circleIcon,
  errorIcon,
  LabIcon,
  launchIcon,
  lockIcon,
  refreshIcon,
  runIcon,
  stopIcon
} from '@jupyterlab/ui-components';

import type { ExecutionStatus } from './protocol';

const sidebarSvg = `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <rect x="3" y="4" width="8" height="3" rx="1"/>
    <rect x="9" y="10.5" width="12" height="3" rx="1"/>
    <rect x="5" y="17" width="6" height="3" rx="1"/>
    <rect x="13" y="17" width="3" height="3" rx="1"/>
  </g>
</svg>`;

export const resumableIcon = new LabIcon({ name: 'resumable-cells:sidebar', svgstr: sidebarSvg });

/** A row whose result is out of date. */
export const staleIcon = refreshIcon;

export const STATUS_ICON: Record<ExecutionStatus | 'none', LabIcon> = {
  running: circleIcon,
  hit: checkIcon,
  live: runIcon,
  effect: launchIcon,
  error: errorIcon,
  interrupted: stopIcon,
  refused: lockIcon,
  none: circleEmptyIcon
};
