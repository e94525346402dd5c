# Empty dependencies file for recur_script.
# This may be replaced when dependencies are built.
