"""The team cache in object storage (S3, GCS, Azure, a shared folder): a tier behind the
local store like the Redis one. The tier (`tier`), clients from a URL and the
environment's credentials (`connect`), what crosses to the bucket and back (`crossing`,
the one place bytes leave or arrive), the objects' names and blob headers (`layout`),
copying blobs each way (`transfer`) and what the bucket holds (`listing`)."""
