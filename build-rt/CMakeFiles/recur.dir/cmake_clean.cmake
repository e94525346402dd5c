file(REMOVE_RECURSE
  "CMakeFiles/recur.dir/cli/main.c.o"
  "CMakeFiles/recur.dir/cli/main.c.o.d"
  "CMakeFiles/recur.dir/cli/verify.c.o"
  "CMakeFiles/recur.dir/cli/verify.c.o.d"
  "recur"
  "recur.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/recur.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
