"""Process state a step changes outside its namespace (environment, working directory,
`sys.path`, library options, display settings) and the attributes it sets on the
notebook's own modules: recorded after a live run, set again on a hit; and the print
and plot settings its outputs were shown with, which a hit checks (`shown`)."""
