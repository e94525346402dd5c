# Empty compiler generated dependencies file for test_ref_fd.
# This may be replaced when dependencies are built.
