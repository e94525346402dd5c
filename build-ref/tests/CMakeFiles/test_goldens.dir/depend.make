# Empty dependencies file for test_goldens.
# This may be replaced when dependencies are built.
