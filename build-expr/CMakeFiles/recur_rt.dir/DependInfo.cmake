
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/runtime/cudrv.c" "CMakeFiles/recur_rt.dir/runtime/cudrv.c.o" "gcc" "CMakeFiles/recur_rt.dir/runtime/cudrv.c.o.d"
  "/work/main/runtime/manifest.c" "CMakeFiles/recur_rt.dir/runtime/manifest.c.o" "gcc" "CMakeFiles/recur_rt.dir/runtime/manifest.c.o.d"
  "/work/main/runtime/npy.c" "CMakeFiles/recur_rt.dir/runtime/npy.c.o" "gcc" "CMakeFiles/recur_rt.dir/runtime/npy.c.o.d"
  "/work/main/runtime/plan.c" "CMakeFiles/recur_rt.dir/runtime/plan.c.o" "gcc" "CMakeFiles/recur_rt.dir/runtime/plan.c.o.d"
  "/work/main/runtime/rt.c" "CMakeFiles/recur_rt.dir/runtime/rt.c.o" "gcc" "CMakeFiles/recur_rt.dir/runtime/rt.c.o.d"
  "/work/main/runtime/shapex.c" "CMakeFiles/recur_rt.dir/runtime/shapex.c.o" "gcc" "CMakeFiles/recur_rt.dir/runtime/shapex.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
