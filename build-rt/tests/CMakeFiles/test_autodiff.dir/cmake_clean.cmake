file(REMOVE_RECURSE
  "CMakeFiles/test_autodiff.dir/test_autodiff.c.o"
  "CMakeFiles/test_autodiff.dir/test_autodiff.c.o.d"
  "test_autodiff"
  "test_autodiff.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_autodiff.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
