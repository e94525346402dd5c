file(REMOVE_RECURSE
  "CMakeFiles/test_ref_fd.dir/test_ref_fd.c.o"
  "CMakeFiles/test_ref_fd.dir/test_ref_fd.c.o.d"
  "test_ref_fd"
  "test_ref_fd.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_ref_fd.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
