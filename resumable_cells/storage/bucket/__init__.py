"""The team cache in object storage (S3, GCS, Azure, a shared folder): a tier behind the
local store like the Redis one. The tier (`tier`), clients from a URL and the
environment's credentials (`connect`), what crosses to the bucket and back (`crossing`,
where every byte is sealed or opened), the objects' names (`layout`), copying blobs each
way (`transfer`), what the bucket holds (`listing`) and sealing it all again under a new
team key (`reseal`)."""
