# Empty custom commands generated dependencies file for RISCVTargetParserTableGen.
# This may be replaced when dependencies are built.
