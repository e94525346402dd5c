file(REMOVE_RECURSE
  "CMakeFiles/test_script.dir/test_script.c.o"
  "CMakeFiles/test_script.dir/test_script.c.o.d"
  "test_script"
  "test_script.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_script.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
