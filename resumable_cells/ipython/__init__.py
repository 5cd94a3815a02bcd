"""The IPython surface: the `%%step` and `%step` magics and their traitlets (`magics`),
the `%%step` arguments (`stepargs`, shared with the sidebar by `frontend_spec`), the
subcommands (`commands`, `plan` with `notebookfile`, `teamcache`), output capture and
replay (`capture`), the status line (`statusline`), what plain cells changed
(`freshness`) and the sidebar's comm (`comm`)."""
