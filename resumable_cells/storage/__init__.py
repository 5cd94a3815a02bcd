"""Where entries live: the local store (`store`) with its content-addressed blob files
(`blobs`), their serialisation (`serialize`) and authentication (`auth`), human sizes
(`sizes`), and the Redis team cache behind it (`redis`)."""
