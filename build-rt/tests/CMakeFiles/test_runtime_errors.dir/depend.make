# Empty dependencies file for test_runtime_errors.
# This may be replaced when dependencies are built.
