file(REMOVE_RECURSE
  "CMakeFiles/test_npy.dir/test_npy.c.o"
  "CMakeFiles/test_npy.dir/test_npy.c.o.d"
  "test_npy"
  "test_npy.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_npy.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
