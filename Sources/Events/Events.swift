// Events module: see issues #2–#5.
