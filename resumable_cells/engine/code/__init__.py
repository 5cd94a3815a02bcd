"""What a step reads, decided before it runs: the static analysis of its cell, the code
IPython makes of it, the inputs its key takes, calls whose results change between
runs, and cells that share a step name."""
