"""A hit: whether an entry may be served (`validity`), reading and checking every
value before anything changes (`load`), and putting back the namespace, the process
state and the outputs as the live run left them (`apply`)."""
