"""The record of a run: the journal of executions (`journal`), the rows derived from it
and which of them are stale (`staleness`), the `%step status` table (`views`), the
sidebar's snapshot (`snapshot`), the timeline (`timeline`) and why a step missed
(`why`). (Named `records` because `resumable_cells.record()` is the public function that
returns the current run's.)"""
