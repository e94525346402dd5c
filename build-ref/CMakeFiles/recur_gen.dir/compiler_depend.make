# Empty compiler generated dependencies file for recur_gen.
# This may be replaced when dependencies are built.
