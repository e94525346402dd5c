# Empty compiler generated dependencies file for test_npy.
# This may be replaced when dependencies are built.
