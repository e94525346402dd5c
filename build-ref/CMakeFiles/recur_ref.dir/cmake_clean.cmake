file(REMOVE_RECURSE
  "CMakeFiles/recur_ref.dir/ref/ref_find.c.o"
  "CMakeFiles/recur_ref.dir/ref/ref_find.c.o.d"
  "CMakeFiles/recur_ref.dir/ref/ref_rglru.c.o"
  "CMakeFiles/recur_ref.dir/ref/ref_rglru.c.o.d"
  "CMakeFiles/recur_ref.dir/ref/ref_samu.c.o"
  "CMakeFiles/recur_ref.dir/ref/ref_samu.c.o.d"
  "CMakeFiles/recur_ref.dir/ref/rng.c.o"
  "CMakeFiles/recur_ref.dir/ref/rng.c.o.d"
  "librecur_ref.a"
  "librecur_ref.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/recur_ref.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
