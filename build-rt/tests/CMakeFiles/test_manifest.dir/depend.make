# Empty dependencies file for test_manifest.
# This may be replaced when dependencies are built.
