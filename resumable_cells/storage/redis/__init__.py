"""The team cache, a Redis tier behind the local store: the tier (`tier`), its layout in
Redis (`wire`), copying blobs each way (`transfer`), the background pusher
(`pushqueue`), the server's health (`health`), clients (`connect`), what the server holds
(`listing`), and sealing it all again under a new team key (`reseal`)."""
