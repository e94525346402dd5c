file(REMOVE_RECURSE
  "CMakeFiles/recur_rt.dir/runtime/cudrv.c.o"
  "CMakeFiles/recur_rt.dir/runtime/cudrv.c.o.d"
  "CMakeFiles/recur_rt.dir/runtime/manifest.c.o"
  "CMakeFiles/recur_rt.dir/runtime/manifest.c.o.d"
  "CMakeFiles/recur_rt.dir/runtime/npy.c.o"
  "CMakeFiles/recur_rt.dir/runtime/npy.c.o.d"
  "CMakeFiles/recur_rt.dir/runtime/plan.c.o"
  "CMakeFiles/recur_rt.dir/runtime/plan.c.o.d"
  "CMakeFiles/recur_rt.dir/runtime/rt.c.o"
  "CMakeFiles/recur_rt.dir/runtime/rt.c.o.d"
  "CMakeFiles/recur_rt.dir/runtime/shapex.c.o"
  "CMakeFiles/recur_rt.dir/runtime/shapex.c.o.d"
  "librecur_rt.a"
  "librecur_rt.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/recur_rt.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
