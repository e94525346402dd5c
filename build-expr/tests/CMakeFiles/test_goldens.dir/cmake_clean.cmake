file(REMOVE_RECURSE
  "CMakeFiles/test_goldens.dir/test_goldens.c.o"
  "CMakeFiles/test_goldens.dir/test_goldens.c.o.d"
  "test_goldens"
  "test_goldens.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_goldens.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
