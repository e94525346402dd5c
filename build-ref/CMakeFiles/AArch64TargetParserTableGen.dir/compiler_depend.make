# Empty custom commands generated dependencies file for AArch64TargetParserTableGen.
# This may be replaced when dependencies are built.
