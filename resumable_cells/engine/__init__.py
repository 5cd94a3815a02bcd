"""Running steps: the life of one `%%step` execution, as rooms in the order it happens.

Orchestration, on top:
    kernel.py       `Engine`: what a kernel's steps share (namespace, store and team
                    cache, run, budget, journal, listeners)
    execution.py    one execution: key, then a hit served or a live run kept
    recording.py    the record of one execution as it happens (journal rows, listeners,
                    warnings, the status line)
    collector.py    Python's garbage collector paused for the engine's work, as the
                    notebook left it for the body, and the engine's modules kept out of
                    its count once imported (imports nothing of the engine)

Rooms, each importing only the rooms listed before it:
    objects/   the object graph behind names (`objgraph`), giving an object its new
               state in place (`inplace`), which names are the user's (`user_names`)
    code/      what a step reads, before it runs: the cell's static analysis
               (`analysis`, `namespace_reads`), the code as IPython decides it
               (`step_code`, `magics`), its inputs (`inputs`), direct clock and random
               calls (`nondeterminism`), two cells sharing a name (`step_names`)
    live/      running the body: as IPython would run it (`body`), the `step` object
               (`step_object`), the tripwire that watches a pure step (`tripwire`, the
               functions it wraps while the step runs in `watchpoints`, `system_queries`)
    state/     process state a step changes outside its namespace (`process_state`,
               its parts in `parts`), attributes of the notebook's modules
               (`module_attrs`), the settings its outputs were shown with (`shown`)
    units/     values that share objects, stored as one pickle stream: what goes where
               (`layout`), writing and reading the stream (`stream`), the changed
               inputs kept whole (`byvalue`), nothing else holding what a hit replaces
               (`replaced`)
    restore/   a hit: may the entry be served (`validity`), read and check every value
               (`load`), put it all back (`apply`)
    keep/      after a live run: what it changed (`changes`), how its values share
               objects (`sharing`), storing them and loading them back (`build`,
               `value_check`, `unit_check`), whether it is cached at all (`admit`, with
               `advice` for a value that cannot be stored)

The entry itself (its typed records and the blobs it names) is `storage/entries.py`;
the run, its budget and its record are `records/`; what a hit shows goes through
`display/`.
"""
