# Empty dependencies file for recur_ref.
# This may be replaced when dependencies are built.
