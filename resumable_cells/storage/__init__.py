"""Where entries live: the local store (`store`: entries and blob files, `index`: its JSON
rows, `ledger`: the runs' rows, `claims`: who computes a key), the blob files (`blobs`),
their pickling (`serialize`) and authentication (`auth`), sizes (`sizes`), and the tiers
behind the local store (`tiers`), of which the Redis team cache (`redis`)."""
