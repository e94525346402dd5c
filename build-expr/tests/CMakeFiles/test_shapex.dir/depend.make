# Empty dependencies file for test_shapex.
# This may be replaced when dependencies are built.
