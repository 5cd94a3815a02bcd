"""The team cache, a Redis tier behind the local store: the tier (`tier`), its layout in
Redis (`wire`), copying blobs each way (`transfer`), the background pusher
(`pushqueue`), the server's health (`health`), clients and the team key (`connect`), and
what the server holds (`listing`)."""
