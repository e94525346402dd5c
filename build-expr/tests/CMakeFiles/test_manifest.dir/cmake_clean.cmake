file(REMOVE_RECURSE
  "CMakeFiles/test_manifest.dir/test_manifest.c.o"
  "CMakeFiles/test_manifest.dir/test_manifest.c.o.d"
  "test_manifest"
  "test_manifest.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_manifest.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
