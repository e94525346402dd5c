# Empty dependencies file for test_script.
# This may be replaced when dependencies are built.
