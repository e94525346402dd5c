
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/ref/ref_find.c" "CMakeFiles/recur_ref.dir/ref/ref_find.c.o" "gcc" "CMakeFiles/recur_ref.dir/ref/ref_find.c.o.d"
  "/work/main/ref/ref_rglru.c" "CMakeFiles/recur_ref.dir/ref/ref_rglru.c.o" "gcc" "CMakeFiles/recur_ref.dir/ref/ref_rglru.c.o.d"
  "/work/main/ref/ref_samu.c" "CMakeFiles/recur_ref.dir/ref/ref_samu.c.o" "gcc" "CMakeFiles/recur_ref.dir/ref/ref_samu.c.o.d"
  "/work/main/ref/rng.c" "CMakeFiles/recur_ref.dir/ref/rng.c.o" "gcc" "CMakeFiles/recur_ref.dir/ref/rng.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
