file(REMOVE_RECURSE
  "CMakeFiles/test_runtime_errors.dir/test_runtime_errors.c.o"
  "CMakeFiles/test_runtime_errors.dir/test_runtime_errors.c.o.d"
  "test_runtime_errors"
  "test_runtime_errors.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_runtime_errors.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
