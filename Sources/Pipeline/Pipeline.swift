// Pipeline module: see issues #2–#5.
