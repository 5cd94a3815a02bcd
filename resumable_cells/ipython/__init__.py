"""The IPython surface: the `%%step` and `%step` magics, their subcommands, `%step plan`,
output capture, the sidebar's comm and the status line."""
