"""The record of a run: the journal of executions (`journal`), the views derived from it
(`views`: steps, staleness), the sidebar's snapshot (`snapshot`), the timeline
(`timeline`) and why a step missed (`why`). (Named `records` because
`resumable_cells.record()` is the public function that returns the current run's.)"""
