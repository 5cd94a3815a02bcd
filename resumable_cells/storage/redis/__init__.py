"""The team cache: a Redis tier behind the local store."""
