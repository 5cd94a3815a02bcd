"""The record of a run: the journal of executions, the views derived from it (steps,
staleness), the sidebar's snapshot and the timeline. (Named `records` because
`resumable_cells.record()` is the public function that returns the current run's.)"""
