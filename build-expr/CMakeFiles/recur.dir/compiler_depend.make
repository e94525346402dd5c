# Empty compiler generated dependencies file for recur.
# This may be replaced when dependencies are built.
