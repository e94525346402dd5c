# Empty dependencies file for recur_rt.
# This may be replaced when dependencies are built.
