"""What a step shows, below the engine: capturing a live run's outputs and replaying
them (`capture`), the figures matplotlib's inline backend draws after a cell
(`figures`), and the one-line status under a step (`statusline`). These talk to
IPython's display machinery and import nothing of the package but `formatting`."""
