# Empty compiler generated dependencies file for test_autodiff.
# This may be replaced when dependencies are built.
