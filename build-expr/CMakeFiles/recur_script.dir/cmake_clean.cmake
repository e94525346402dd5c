file(REMOVE_RECURSE
  "CMakeFiles/recur_script.dir/gen/expr.c.o"
  "CMakeFiles/recur_script.dir/gen/expr.c.o.d"
  "CMakeFiles/recur_script.dir/gen/script.c.o"
  "CMakeFiles/recur_script.dir/gen/script.c.o.d"
  "librecur_script.a"
  "librecur_script.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/recur_script.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
