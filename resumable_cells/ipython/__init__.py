"""The IPython surface: the `%%step` and `%step` magics and their traitlets (`magics`),
the `%%step` arguments (`stepargs`), the subcommands (`commands`, `plan`, `teamcache`),
output capture and replay (`capture`), the status line (`statusline`) and the sidebar's
comm (`comm`)."""
