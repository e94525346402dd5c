file(REMOVE_RECURSE
  "CMakeFiles/test_shapex.dir/test_shapex.c.o"
  "CMakeFiles/test_shapex.dir/test_shapex.c.o.d"
  "test_shapex"
  "test_shapex.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_shapex.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
