"""The objects behind names: the graph of what a value holds that another name could
hold too (`objgraph`), giving an object its new state in place so every holder sees it
(`inplace`), and the one rule for which names are the user's (`user_names`)."""
